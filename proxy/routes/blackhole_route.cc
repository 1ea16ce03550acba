#include "proxy/routes/blackhole_route.h"

#include <event2/buffer.h>

#include <string>
#include <string_view>

#include "proxy/protocol/replies.h"
#include "proxy/protocol/request_kind.h"
#include "proxy/protocol/tokens.h"

namespace memshard::proxy {

namespace {

// A meta reply's code and the flags memcached returns with it, in the
// request's order: O (the opaque) and k (the key as the client wrote it,
// followed by " b" when it is base64, as memcached's META_KEY writes it).
std::string meta_reply(std::string_view code, std::string_view line, bool base64) {
  std::string out(code);
  proto::TokenCursor cursor(line);
  std::string_view token, key;
  for (size_t i = 0; cursor.next(token); ++i) {
    if (i == 1) key = token;
    if (i < 2 || token.empty()) continue;
    if (token[0] == 'O') out.append(" ").append(token);
    if (token == "k") out.append(" k").append(key).append(base64 ? " b" : "");
  }
  return out;
}

}  // namespace

void BlackholeRoute::send(RouteRequest& req, ReplySlot& slot) {
  counters_.blackholed.add();
  evbuffer_drain(req.in, req.bytes());
  const proto::Request& r = req.request;
  using proto::Command;
  // The classic storage commands (meta's ms answers below, with its flags).
  if (proto::is_storage(r.command) && r.command != Command::meta_set) {
    if (r.noreply) return slot.answer({}, proto::ReplyStatus::not_stored);
    return answer(slot, "NOT_STORED");
  }
  switch (r.command) {
    case Command::get:
    case Command::gets:
    case Command::gat:
    case Command::gats:
      return answer(slot, "END");
    case Command::delete_:
    case Command::incr:
    case Command::decr:
    case Command::touch:
      if (r.noreply) return slot.answer({}, proto::ReplyStatus::not_found);
      return answer(slot, "NOT_FOUND");
    case Command::meta_get:
    case Command::meta_debug:
      if (r.quiet) return slot.answer({}, proto::ReplyStatus::miss);
      return answer(slot, meta_reply("EN", req.line, r.meta_flags.has('b')));
    case Command::meta_set:
      return answer(slot, meta_reply("NS", req.line, r.meta_flags.has('b')));
    case Command::meta_delete:
    case Command::meta_arithmetic:
      if (r.quiet) return slot.answer({}, proto::ReplyStatus::not_found);
      return answer(slot, meta_reply("NF", req.line, r.meta_flags.has('b')));
    default:
      return answer(slot, proto::reply::own::kNoRoute);
  }
}

}  // namespace memshard::proxy
