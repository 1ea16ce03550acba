#include "proxy/routes/key_route.h"

#include "proxy/protocol/replies.h"

namespace memshard::proxy {

namespace {

bool is_meta(proto::Command c) {
  switch (c) {
    case proto::Command::meta_get:
    case proto::Command::meta_set:
    case proto::Command::meta_delete:
    case proto::Command::meta_arithmetic:
    case proto::Command::meta_debug:
      return true;
    default:
      return false;
  }
}

void unavailable(RouteRequest& req, ReplySlot& slot) {
  evbuffer_drain(req.in, req.bytes());
  req.count_error();
  // noreply asked for silence even about failures; quiet meta did not.
  if (req.request.quiet && !is_meta(req.request.command)) {
    // Silent to the client, but a route that may try elsewhere (failover)
    // must still tell this from a write that was made.
    slot.add_fragment().failed = true;
    slot.complete = true;
  } else {
    answer(slot, proto::reply::own::kBackendUnavailable);
  }
}

}  // namespace

void answer(ReplySlot& slot, std::string_view line) {
  if (!line.empty()) {
    evbuffer_add(slot.reply, line.data(), line.size());
    evbuffer_add(slot.reply, "\r\n", 2);
  }
  slot.complete = true;
}

void send_to(Server& server, RouteRequest& req, ReplySlot& slot) {
  Outbox* outbox = server.outbox(req.affinity);
  if (outbox == nullptr) return unavailable(req, slot);
  bool meta = is_meta(req.request.command);
  evbuffer* out = outbox->output();
  evbuffer_remove_buffer(req.in, out, req.bytes());
  ReplyMode mode = meta ? ReplyMode::meta : ReplyMode::single;
  if (req.request.quiet) {
    evbuffer_add(out, "mn\r\n", 4);
    mode = meta ? ReplyMode::quiet_keep : ReplyMode::quiet_drop;
  }
  ++slot.outstanding;
  uint32_t fragment = static_cast<uint32_t>(slot.fragment_count);
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
  text.assign("md ").append(req.request.raw_key);
  if (req.request.key_base64) text.append(" b");
  text.append(" q\r\nmn\r\n");
  evbuffer_add(outbox->output(), text.data(), text.size());
  ++slot.outstanding;
  slot.add_fragment();
  req.count_fragment();
  outbox->enqueue(BackendOp{&slot, 0, ReplyMode::quiet_drop, req.now_usec});
}

void KeyRoute::invalidate(RouteRequest& req, ReplySlot& slot) {
  size_t server = placement_.place(req.request.keys[0]);
  if (server != Placement::npos) send_delete(placement_.server(server), req, slot);
  if (slot.outstanding == 0) slot.complete = true;
}

}  // namespace memshard::proxy
