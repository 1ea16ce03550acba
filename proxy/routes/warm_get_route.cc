#include "proxy/routes/warm_get_route.h"

#include <algorithm>
#include <array>
#include <deque>
#include <optional>
#include <string>
#include <vector>

#include "proxy/protocol/own_requests.h"
#include "proxy/protocol/replies.h"
#include "proxy/protocol/retrieval_reply.h"
#include "proxy/routes/key_route.h"
#include "proxy/routes/warm_copy.h"
#include "proxy/support/stats.h"

namespace memshard::proxy {

namespace {

bool touches(proto::Command c) {
  return c == proto::Command::gat || c == proto::Command::gats;
}
bool with_cas(proto::Command c) {
  return c == proto::Command::gets || c == proto::Command::gats;
}

// A key that missed on its current server and moved: its old servers, and
// how far down them the lookups went.
struct Lookup {
  size_t position = 0;
  std::array<Server*, kMaxPastOwners> owners{};
  size_t owner_count = 0;
  size_t next = 0;
  PastPlacement::Kinds kinds;  // the first kinds.future owners: never copied from
  WarmGuard::Sample sample;
  bool found = false;
};

}  // namespace

Work WarmGetRoute::read(RouteRequest& req, ReplySlot& client) const {
  HeldRequest held(req);  // req is not touched past this point
  const std::string reply = (co_await Call(held, inner_)).text();
  const proto::Request& request = held.request();
  const auto& keys = request.keys;
  const auto blocks = proto::parse_value_blocks(reply);
  if (!blocks) {
    // Not a retrieval reply (the pool's own error): as it is.
    client.compose({reply}, proto::classify_reply_line(reply.substr(0, reply.find('\r'))));
    co_return;
  }
  // The blocks come in key order, hits only: match them to positions.
  std::vector<std::string_view> by_key = proto::blocks_by_key(*blocks, keys);
  std::vector<Lookup> lookups;
  const uint64_t now = held.slots().now_usec();
  for (size_t pos = 0; pos < keys.size(); ++pos) {
    if (!by_key[pos].empty()) continue;
    Lookup l;
    l.position = pos;
    l.owner_count = past_.owners(keys[pos], now, l.owners, &l.kinds);
    if (l.owner_count == 0) continue;
    l.sample = guard_.sample(keys[pos]);
    if (l.sample.poisoned) continue;
    if (l.kinds.switching) held.pool_stats().switch_fallback_reads.add();
    lookups.push_back(l);
  }
  // Rounds: each asks every key still missing of its next old server.
  std::deque<std::string> found;  // blocks found on old servers (stable addresses)
  const bool cas = with_cas(request.command);
  const int64_t* touch = touches(request.command) ? &request.exptime_value : nullptr;
  while (true) {
    Calls calls;
    std::vector<Lookup*> asked;
    for (Lookup& l : lookups) {
      if (l.found || l.next >= l.owner_count) continue;
      std::string line;
      if (!proto::append_lookup(keys[l.position], cas, touch, line)) continue;
      held.pool_stats().warmup_lookups.add();
      HeldRequest one(held, std::move(line));
      ServerRoute to(*l.owners[l.next++]);
      calls.add(one, to);
      asked.push_back(&l);
    }
    if (asked.empty()) break;
    co_await calls.all();
    for (size_t i = 0; i < asked.size(); ++i) {
      Lookup& l = *asked[i];
      const std::string answer = calls.reply(i).text();
      const auto v = proto::parse_meta_value(answer);
      if (!v) continue;  // a miss or an error: the next old server, next round
      l.found = true;
      held.pool_stats().warmup_hits.add();
      const std::string_view key = keys[l.position];
      found.push_back(proto::classic_block(key, *v, cas));
      by_key[l.position] = found.back();
      if (l.next <= l.kinds.future) continue;  // where the key will be: not copied back
      std::array<Server*, kMaxReplicas> current;
      const size_t n = past_.current(key, current);
      copy_to_current(held, key, *v, std::span<Server* const>(current.data(), n), guard_, l.sample,
                      life_);
    }
  }
  // Keys missed everywhere are asked once more of the pool's own route: a
  // write that this read overtook there deletes the old copies only once
  // it has stored the value (warm_key_route.h), so a key whose old copy
  // went meanwhile is there now.
  std::string again = proto::retrieval_command(request);
  size_t missing = 0;
  for (const Lookup& l : lookups) {
    if (l.found) continue;
    again.append(" ").append(keys[l.position]);
    ++missing;
  }
  std::string second;  // outlives by_key's views into it
  if (missing > 0) {
    again.append("\r\n");
    HeldRequest held_again(held, std::move(again));
    second = (co_await Call(held_again, inner_)).text();
    if (const auto more = proto::parse_value_blocks(second)) {
      size_t m = 0;
      for (const Lookup& l : lookups) {
        if (l.found || m >= more->size()) continue;
        if ((*more)[m].key == keys[l.position]) by_key[l.position] = (*more)[m++].block;
      }
    }
  }
  const bool hit =
      std::ranges::any_of(by_key, [](std::string_view block) { return !block.empty(); });
  by_key.push_back(proto::reply::kEnd);
  client.compose(by_key, hit ? proto::ReplyStatus::hit : proto::ReplyStatus::miss);
}

void WarmGetRoute::send(RouteRequest& req, ReplySlot& slot) {
  bool moved = false;
  if (past_.open(req.now_usec)) {
    std::array<Server*, kMaxPastOwners> owners;
    for (std::string_view key : req.request.keys) {
      if (past_.owners(key, req.now_usec, owners) > 0) {
        moved = true;
        break;
      }
    }
  }
  if (!moved) return inner_.send(req, slot);
  slot.add_fragment();
  read(req, slot).start(slot, life_);
}

}  // namespace memshard::proxy
