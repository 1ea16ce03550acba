#include "proxy/routes/grouped_get.h"

#include <string>
#include <vector>

#include "proxy/protocol/replies.h"
#include "proxy/protocol/retrieval_reply.h"
#include "proxy/routes/work.h"

namespace memshard::proxy {

namespace {

// Fragment `fragment` of the client's slot: its keys, asked of `route` in
// one retrieval, and the blocks that come back put in their places.
Work fetch(const RouteRequest& req, ReplySlot& client, uint32_t fragment, Route& route,
           RouteStats* counters) {
  std::vector<std::string_view> keys;
  for (uint32_t pos : client.fragment(fragment).key_positions) keys.push_back(client.key(pos));
  std::string line;
  proto::append_retrieval_line(req.request, keys, line);
  const size_t header = line.size();
  HeldRequest held(req, std::move(line), header);  // req is not touched past this point
  Reply reply = co_await Call(held, route);
  Fragment& frag = client.fragment(fragment);
  const std::string text = reply.text();
  const auto blocks = reply.failed() ? std::nullopt : proto::parse_value_blocks(text);
  if (!blocks) {
    frag.failed = true;
    client.note_error(reply.failed() ? std::string_view(text) : proto::reply::own::kBackendGarbled);
    if (counters != nullptr) counters->errors.add();
    co_return;
  }
  // The blocks come in the order of the keys asked, misses left out.
  size_t next = 0, hits = 0;
  for (const proto::ValueBlock& b : *blocks) {
    while (next < frag.key_positions.size() && client.key(frag.key_positions[next]) != b.key)
      ++next;
    if (next == frag.key_positions.size()) break;
    evbuffer_add(frag.values, b.block.data(), b.block.size());
    client.key_ref(frag.key_positions[next++]).block_bytes = static_cast<uint32_t>(b.block.size());
    ++hits;
  }
  if (counters != nullptr) {
    counters->hits.add(hits);
    counters->misses.add(keys.size() - hits);
  }
}

}  // namespace

void send_grouped(RouteRequest& req, ReplySlot& slot, std::span<Route* const> routes,
                  std::span<const uint32_t> group_of, std::span<RouteStats* const> counters,
                  RouteLife* life) {
  const auto& keys = req.request.keys;
  bool one_route = true;
  for (uint32_t g : group_of) one_route = one_route && g == group_of[0];
  if (one_route) return routes[group_of[0]]->send(req, slot);

  slot.set_kind(SlotKind::retrieval);
  std::vector<int32_t> fragment_of(routes.size(), -1);
  std::vector<uint32_t> route_of;
  for (uint32_t pos = 0; pos < keys.size(); ++pos) {
    int32_t& f = fragment_of[group_of[pos]];
    if (f < 0) {
      f = static_cast<int32_t>(slot.fragment_count());
      slot.add_fragment();
      route_of.push_back(group_of[pos]);
    }
    slot.add_key(keys[pos], static_cast<uint32_t>(f));
  }
  // Each fetch is counted when it starts, and the slot completes when the
  // last one ends: one that ends at once must not complete it before the
  // others have started.
  slot.expect();
  for (uint32_t f = 0; f < route_of.size(); ++f) {
    RouteStats* c = counters.empty() ? nullptr : counters[route_of[f]];
    fetch(req, slot, f, *routes[route_of[f]], c).start(slot, life);
  }
  evbuffer_drain(req.in, req.header_bytes);
  slot.fragment_done_unreported();
}

}  // namespace memshard::proxy
