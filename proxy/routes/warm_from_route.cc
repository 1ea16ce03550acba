#include "proxy/routes/warm_from_route.h"

#include <algorithm>
#include <deque>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "proxy/protocol/own_requests.h"
#include "proxy/protocol/replies.h"
#include "proxy/protocol/request_kind.h"
#include "proxy/protocol/retrieval_reply.h"

namespace memshard::proxy {

namespace {

// An mg that reads and touches, as gat does: T without anything that
// creates or changes the item otherwise.
bool reads_and_touches(const proto::Request& r) {
  return r.command == proto::Command::meta_get && r.has_exptime && !r.meta_flags.has('N') &&
         !r.meta_flags.has('E') && !r.has_vivify && !r.unmodeled_flags;
}

// The add that copies a warm hit to the cold side: a line, then the data.
struct CopyBytes {
  std::string bytes;
  size_t header = 0;
};
std::optional<CopyBytes> copy_bytes(std::string_view key, const proto::MetaValue& v,
                                    int64_t exptime) {
  CopyBytes c;
  if (!proto::append_copy_request(key, v, exptime, false, c.bytes)) return std::nullopt;
  c.header = c.bytes.find('\n') + 1;
  return c;
}

// A copy nobody waits for (behind a get's answer): counted once stored.
Work copy_behind(const HeldRequest& like, CopyBytes copy, SingleKeyRoute& cold,
                 RouteStats& counters) {
  HeldRequest held(like, std::move(copy.bytes), copy.header);  // like is not touched past here
  const Reply reply = co_await Call(held, cold);
  if (reply.status() == proto::ReplyStatus::done) counters.warm_copies.add();
}

}  // namespace

Work WarmFromKeyRoute::read(RouteRequest& req, ReplySlot& client) const {
  HeldRequest held(req);  // req is not touched past this point
  Reply cold = co_await Call(held, from_.cold_key);
  if (!cold.missed()) {
    cold.pass_to(client);
    co_return;
  }
  const proto::Request& request = held.request();
  const std::string key(request.keys[0]);
  std::string lookup;
  if (!proto::append_lookup(key, false, nullptr, lookup)) {
    cold.pass_to(client);
    co_return;
  }
  from_.counters.warm_lookups.add();
  std::string text;
  {
    HeldRequest one(held, std::move(lookup));
    text = (co_await Call(one, from_.warm_key)).text();
  }
  const std::optional<proto::MetaValue> value = proto::parse_meta_value(text);
  if (!value) {  // a miss there too, or the warm side failed: the cold side's miss
    cold.pass_to(client);
    co_return;
  }
  from_.counters.warm_hits.add();
  const int64_t exptime = reads_and_touches(request) ? request.exptime_value : from_.ttl_s;
  if (std::optional<CopyBytes> copy = copy_bytes(key, *value, exptime)) {
    HeldRequest one(held, std::move(copy->bytes), copy->header);
    const Reply stored = co_await Call(one, from_.cold_key);
    if (stored.status() == proto::ReplyStatus::done) from_.counters.warm_copies.add();
  }
  // The client's request again, now that the cold side holds the value:
  // its answer has the flags the client asked for (a cas, a TTL) as the
  // cold side keeps them, and an mg with T touches it there.
  Reply again = co_await Call(held, from_.cold_key);
  again.pass_to(client);
}

void WarmFromKeyRoute::send(RouteRequest& req, ReplySlot& slot) {
  const proto::Request& r = req.request;
  if (r.command != proto::Command::meta_get || r.keys.empty() ||
      !(proto::is_read(r) || reads_and_touches(r))) {
    return from_.writes.send(req, slot);
  }
  slot.add_fragment();
  read(req, slot).start(slot, from_.life);
}

Work WarmFromGetRoute::read(RouteRequest& req, ReplySlot& client) const {
  HeldRequest held(req);  // req is not touched past this point
  const std::string reply = (co_await Call(held, cold_get_)).text();
  const proto::Request& request = held.request();
  const auto& keys = request.keys;
  const auto blocks = proto::parse_value_blocks(reply);
  if (!blocks) {
    // Not a retrieval reply (the cold side's error): as it is.
    client.compose({reply}, proto::classify_reply_line(reply.substr(0, reply.find('\r'))));
    co_return;
  }
  std::vector<std::string_view> by_key = proto::blocks_by_key(*blocks, keys);
  // Every key the cold side missed, looked up on the warm side at once.
  Calls lookups;
  std::vector<size_t> asked;
  for (size_t pos = 0; pos < keys.size(); ++pos) {
    if (!by_key[pos].empty()) continue;
    std::string line;
    if (!proto::append_lookup(keys[pos], false, nullptr, line)) continue;
    from_.counters.warm_lookups.add();
    HeldRequest one(held, std::move(line));
    lookups.add(one, from_.warm_key);
    asked.push_back(pos);
  }
  if (!asked.empty()) co_await lookups.all();
  // get answers the warm values and copies behind them; gets, gat and
  // gats wait for their copies and ask the cold side again.
  const bool again = request.command != proto::Command::get;
  const int64_t exptime =
      request.command == proto::Command::gat || request.command == proto::Command::gats
          ? request.exptime_value
          : from_.ttl_s;
  std::deque<std::string> texts, made;  // stable addresses: by_key views into them
  Calls copies;
  std::vector<size_t> copied;
  for (size_t i = 0; i < asked.size(); ++i) {
    const std::string& text = texts.emplace_back(lookups.reply(i).text());
    const std::optional<proto::MetaValue> value = proto::parse_meta_value(text);
    if (!value) continue;
    from_.counters.warm_hits.add();
    const std::string_view key = keys[asked[i]];
    std::optional<CopyBytes> copy = copy_bytes(key, *value, exptime);
    if (!again) {
      by_key[asked[i]] = made.emplace_back(proto::classic_block(key, *value, false));
      if (copy)
        copy_behind(held, std::move(*copy), from_.cold_key, from_.counters)
            .start_unanswered(from_.life);
      continue;
    }
    if (!copy) continue;
    HeldRequest one(held, std::move(copy->bytes), copy->header);
    copies.add(one, from_.cold_key);
    copied.push_back(asked[i]);
  }
  std::string second;  // outlives by_key's views into it
  if (!copied.empty()) {
    co_await copies.all();
    std::string ask = proto::retrieval_command(request);
    for (size_t i = 0; i < copied.size(); ++i) {
      if (copies.reply(i).status() == proto::ReplyStatus::done) from_.counters.warm_copies.add();
      ask.append(" ").append(keys[copied[i]]);
    }
    ask.append("\r\n");
    HeldRequest held_again(held, std::move(ask));
    second = (co_await Call(held_again, cold_get_)).text();
    if (const auto more = proto::parse_value_blocks(second)) {
      size_t m = 0;
      for (size_t pos : copied) {
        if (m < more->size() && (*more)[m].key == keys[pos]) by_key[pos] = (*more)[m++].block;
      }
    }
  }
  const bool hit =
      std::ranges::any_of(by_key, [](std::string_view block) { return !block.empty(); });
  by_key.push_back(proto::reply::kEnd);
  client.compose(by_key, hit ? proto::ReplyStatus::hit : proto::ReplyStatus::miss);
}

void WarmFromGetRoute::send(RouteRequest& req, ReplySlot& slot) {
  slot.add_fragment();
  read(req, slot).start(slot, from_.life);
}

}  // namespace memshard::proxy
