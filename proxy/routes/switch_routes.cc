#include "proxy/routes/switch_routes.h"

#include <array>
#include <string>
#include <vector>

#include "ketama/hash.h"
#include "proxy/protocol/replies.h"
#include "proxy/protocol/reply_status.h"
#include "proxy/protocol/retrieval_reply.h"

namespace memshard::proxy {

uint64_t SwitchMoment::of(std::string_view key) const {
  const uint64_t window_ms = window_usec / 1000;
  if (window_ms == 0) return at_usec;
  return at_usec + ketama::hash(ketama::HashFunction::md5, key) % window_ms * 1000;
}

SingleKeyRoute& SwitchKeyRoute::side(const RouteRequest& req) const {
  const auto& keys = req.request.keys;
  return !keys.empty() && moment_.switched(keys[0], req.now_usec) ? after_ : before_;
}

void SwitchKeyRoute::send(RouteRequest& req, ReplySlot& slot) {
  side(req).send(req, slot);
}

void SwitchKeyRoute::invalidate(RouteRequest& req, ReplySlot& slot) {
  side(req).invalidate(req, slot);
}

bool SwitchGetRoute::moves(std::string_view key, uint64_t now_usec) const {
  std::array<Server*, kMaxPastOwners> owners;
  PastPlacement::Kinds kinds;
  moves_.owners(key, now_usec, owners, &kinds);
  return kinds.future > 0;
}

namespace {

// "get", "gets", "gat <exptime>" or "gats <exptime>", then `keys` whose
// flag in `pick` is `which`.
std::string retrieval_line(const proto::Request& r, const std::vector<bool>& pick, bool which) {
  std::string line;
  switch (r.command) {
    case proto::Command::gets:
      line = "gets";
      break;
    case proto::Command::gat:
      line.append("gat ").append(r.exptime);
      break;
    case proto::Command::gats:
      line.append("gats ").append(r.exptime);
      break;
    default:
      line = "get";
      break;
  }
  for (size_t i = 0; i < r.keys.size(); ++i) {
    if (pick[i] == which) line.append(" ").append(r.keys[i]);
  }
  return line.append("\r\n");
}

}  // namespace

// Both halves at once; the hits merged in the client's key order. A half
// that failed reads as misses, as a multi-get's failed server does, unless
// both failed: then the client gets the first's error.
Work SwitchGetRoute::split(RouteRequest& req, ReplySlot& client, std::vector<bool> after) const {
  HeldRequest held(req);  // req is not touched past this point
  const proto::Request& request = held.request();
  HeldRequest first(held, retrieval_line(request, after, false));
  HeldRequest second(held, retrieval_line(request, after, true));
  Calls calls;
  calls.add(first, before_);
  calls.add(second, after_);
  co_await calls.all();
  const std::string replies[2] = {calls.reply(0).text(), calls.reply(1).text()};
  const auto blocks0 = proto::parse_value_blocks(replies[0]);
  const auto blocks1 = proto::parse_value_blocks(replies[1]);
  if (!blocks0 && !blocks1) {
    calls.reply(0).pass_to(client);
    co_return;
  }
  const std::vector<proto::ValueBlock> none;
  const std::vector<proto::ValueBlock>* halves[2] = {blocks0 ? &*blocks0 : &none,
                                                     blocks1 ? &*blocks1 : &none};
  size_t next[2] = {0, 0};
  std::vector<std::string_view> parts;  // the hits in the client's key order, then END
  for (size_t pos = 0; pos < request.keys.size(); ++pos) {
    const int h = after[pos] ? 1 : 0;
    const auto& blocks = *halves[h];
    if (next[h] < blocks.size() && blocks[next[h]].key == request.keys[pos])
      parts.push_back(blocks[next[h]++].block);
  }
  const bool hit = !parts.empty();
  parts.push_back(proto::reply::kEnd);
  client.compose(parts, hit ? proto::ReplyStatus::hit : proto::ReplyStatus::miss);
}

void SwitchGetRoute::send(RouteRequest& req, ReplySlot& slot) {
  const uint64_t now = req.now_usec;
  const auto& keys = req.request.keys;
  if (now < moment_.at_usec || keys.empty()) return before_.send(req, slot);
  if (now >= moment_.at_usec + moment_.window_usec) return after_.send(req, slot);
  // Inside the window: each moved key by its moment; a key that does not
  // move goes with the others.
  std::vector<bool> after(keys.size(), true);  // a key that does not move: either would do
  bool any_before = false, any_after = false;
  for (size_t i = 0; i < keys.size(); ++i) {
    if (!moves(keys[i], now)) continue;
    after[i] = moment_.switched(keys[i], now);
    any_before = any_before || !after[i];
    any_after = any_after || after[i];
  }
  if (!any_after) return before_.send(req, slot);
  if (!any_before) return after_.send(req, slot);
  slot.add_fragment();
  split(req, slot, std::move(after)).start(slot, life_);
}

}  // namespace memshard::proxy
