#include "proxy/routes/key_route.h"

#include "proxy/protocol/own_requests.h"
#include "proxy/protocol/replies.h"
#include "proxy/protocol/reply_status.h"
#include "proxy/protocol/request_kind.h"

namespace memshard::proxy {

namespace {

// No server to send to (none live, or `refusal` says why its outbox gave
// none): the client hears it at once.
void unavailable(RouteRequest& req, ReplySlot& slot,
                 std::string_view refusal = proto::reply::own::kBackendUnavailable) {
  evbuffer_drain(req.in, req.bytes());
  req.count_error();
  // noreply asked for silence even about failures; quiet meta did not.
  if (req.request.quiet && !proto::is_meta(req.request.command)) {
    // Silent to the client, but a route that may try elsewhere (failover)
    // must still tell this from a write that was made.
    slot.add_fragment().failed = true;
    slot.answer({}, proto::ReplyStatus::server_error);
  } else {
    answer(slot, refusal);
  }
}

}  // namespace

void answer(ReplySlot& slot, std::string_view line) {
  if (line.empty()) return slot.answer({});
  // Appended apart from its "\r\n": a hot key's cached value is not
  // copied once more to add two bytes.
  evbuffer_add(slot.reply(), line.data(), line.size());
  slot.answer("\r\n", proto::classify_reply_line(line.substr(0, line.find('\r'))));
}

void send_to(Server& server, RouteRequest& req, ReplySlot& slot) {
  Outbox* outbox = server.outbox(req.affinity);
  if (outbox == nullptr) return unavailable(req, slot, server.refusal());
  bool meta = proto::is_meta(req.request.command);
  evbuffer* out = outbox->output();
  evbuffer_remove_buffer(req.in, out, req.bytes());
  ReplyMode mode = meta ? ReplyMode::meta : ReplyMode::single;
  if (req.request.quiet) {
    evbuffer_add(out, proto::kNoop.data(), proto::kNoop.size());
    mode = meta ? ReplyMode::quiet_keep : ReplyMode::quiet_drop;
  }
  slot.expect();
  uint32_t fragment = static_cast<uint32_t>(slot.fragment_count());
  slot.add_fragment();
  req.count_fragment();
  outbox->enqueue(BackendOp{&slot, fragment, mode, req.now_usec});
}

void KeyRoute::send(RouteRequest& req, ReplySlot& slot) {
  size_t server = placement_.place(req.request.keys[0]);
  if (server == Placement::npos) return unavailable(req, slot);
  send_to(placement_.server(server), req, slot);
}

void send_delete(Server& server, RouteRequest& req, ReplySlot& slot) {
  Outbox* outbox = server.outbox(req.affinity);
  if (outbox == nullptr) return;
  std::string& text = req.scratch.text;
  text.clear();
  if (!proto::append_delete(req.request.keys[0], true, text)) return;
  proto::append_noop(text);
  evbuffer_add(outbox->output(), text.data(), text.size());
  slot.expect();
  slot.add_fragment();
  req.count_fragment();
  outbox->enqueue(BackendOp{&slot, 0, ReplyMode::quiet_drop, req.now_usec});
}

void KeyRoute::invalidate(RouteRequest& req, ReplySlot& slot) {
  size_t server = placement_.place(req.request.keys[0]);
  if (server != Placement::npos) send_delete(placement_.server(server), req, slot);
}

}  // namespace memshard::proxy
