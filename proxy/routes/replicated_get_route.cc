#include "proxy/routes/replicated_get_route.h"

#include <string>

#include "proxy/protocol/own_requests.h"
#include "proxy/protocol/replies.h"
#include "proxy/protocol/retrieval_reply.h"
#include "proxy/routes/unanswered.h"
#include "proxy/support/stats.h"

namespace memshard::proxy {

namespace {

// The first try: a classic get of the one key, which the outbox joins with
// the other gets queued for that server.
std::string first_line(const proto::Request& r, std::string_view key) {
  std::string line;
  switch (r.command) {
    case proto::Command::gets:
      line = "gets ";
      break;
    case proto::Command::gat:
      line.append("gat ").append(r.exptime).append(" ");
      break;
    case proto::Command::gats:
      line.append("gats ").append(r.exptime).append(" ");
      break;
    default:
      line = "get ";
      break;
  }
  line.append(key).append("\r\n");
  return line;
}

}  // namespace

Work ReplicatedGetRoute::read_key(const RouteRequest& req, ReplySlot& client,
                                  uint32_t position) const {
  const std::string key(client.key(position));
  const bool with_cas =
      req.request.command == proto::Command::gets || req.request.command == proto::Command::gats;
  const bool touch =
      req.request.command == proto::Command::gat || req.request.command == proto::Command::gats;
  const int64_t exptime = req.request.exptime_value;
  HeldRequest held(req, first_line(req.request, key), first_line(req.request, key).size());
  // req is not touched past this point.
  if (touch) touch_others(held, key, exptime);
  Fragment& fragment = client.fragment(client.key_ref(position).fragment);
  std::vector<size_t> missed;
  std::string error;
  for (size_t copy = 0; copy < reads_.size(); ++copy) {
    if (copy > 0) {
      // Later tries are an mg, whose remaining TTL read repair needs.
      std::string line;
      if (!proto::append_lookup(key, with_cas, touch ? &exptime : nullptr, line)) break;
      const size_t header = line.size();
      held.replace(std::move(line), header);
    }
    Reply reply = co_await Call(held, copy == 0 ? *reads_[0] : *keys_[copy]);
    if (!reply.failed() && !reply.missed()) {
      // A hit (anything else this copy said reads as a miss).
      const std::string text = reply.text();
      std::string block;
      if (auto blocks = proto::parse_value_blocks(text); blocks && !blocks->empty()) {
        block = (*blocks)[0].block;
      } else if (auto v = proto::parse_meta_value(text)) {
        block = proto::classic_block(key, *v, with_cas);
        if (repair_) repair(held, key, *v, missed);
      }
      evbuffer_add(fragment.values, block.data(), block.size());
      client.key_ref(position).block_bytes = static_cast<uint32_t>(block.size());
      fragment.next_key = 1;
      co_return;
    }
    if (reply.missed()) {
      missed.push_back(copy);
      if (!on_miss_) co_return;
    } else if (error.empty()) {
      error = reply.text();
    }
    if (copy + 1 < reads_.size()) {
      held.pool_stats().read_failovers.add();
      if (ServerStats* c = counters(key, copy)) c->read_failovers.add();
    }
  }
  // A miss is an answer: copies that fail after it do not turn it into an
  // error.
  if (!missed.empty()) co_return;
  fragment.failed = true;
  client.note_error(error.empty() ? proto::reply::own::kBackendUnavailable
                                  : std::string_view(error));
}

void ReplicatedGetRoute::touch_others(const HeldRequest& held, std::string_view key,
                                      int64_t exptime) const {
  for (size_t copy = 1; copy < keys_.size(); ++copy) {
    std::string line;
    if (!proto::append_touch(key, exptime, line)) return;
    send_unanswered(held, std::move(line), *keys_[copy], life_);
  }
}

void ReplicatedGetRoute::repair(const HeldRequest& held, std::string_view key,
                                const proto::MetaValue& v,
                                const std::vector<size_t>& missed) const {
  for (size_t copy : missed) {
    std::string bytes;
    if (!proto::append_copy_request(key, v, true, bytes)) continue;
    held.pool_stats().read_repairs.add();
    if (ServerStats* c = counters(key, copy)) c->read_repairs.add();
    send_unanswered(held, std::move(bytes), *keys_[copy], life_);
  }
}

ServerStats* ReplicatedGetRoute::counters(std::string_view key, size_t copy) const {
  return replicas_ == nullptr ? nullptr : replicas_->counters(key, copy);
}

void ReplicatedGetRoute::send(RouteRequest& req, ReplySlot& slot) {
  slot.set_kind(SlotKind::retrieval);
  const auto& keys = req.request.keys;
  for (uint32_t pos = 0; pos < keys.size(); ++pos) {
    const auto f = static_cast<uint32_t>(slot.fragment_count());
    slot.add_fragment();
    slot.add_key(keys[pos], f);
  }
  // Each key's work is counted when it starts, and the slot completes when
  // the last one ends: one that ends at once must not complete it before
  // the others have started.
  slot.expect();
  for (uint32_t pos = 0; pos < keys.size(); ++pos) read_key(req, slot, pos).start(slot, life_);
  evbuffer_drain(req.in, req.header_bytes);
  slot.fragment_done_unreported();
}

}  // namespace memshard::proxy
