#include "proxy/routes/key_route.h"

#include "proxy/backends/repair_log.h"
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

// md <key> q, mn: quiet, so the client's reply is untouched.
void enqueue_delete(Outbox& outbox, std::string_view key, RouteRequest& req, ReplySlot& slot) {
  std::string& text = req.scratch.text;
  text.clear();
  if (!proto::append_delete(key, true, text)) return;
  proto::append_noop(text);
  evbuffer_add(outbox.output(), text.data(), text.size());
  slot.expect();
  const uint32_t fragment = static_cast<uint32_t>(slot.fragment_count());
  slot.add_fragment();
  req.count_fragment();
  outbox.enqueue(BackendOp{&slot, fragment, ReplyMode::quiet_ignore, req.now_usec});
}

namespace {

void note_missed_write(Server& server, const RouteRequest& req) {
  if (RepairLog* log = server.repairs()) log->record(req.request.keys[0]);
}

}  // namespace

void send_to(Server& server, RouteRequest& req, ReplySlot& slot) {
  const bool writes = proto::changes_key(req.request);
  RepairLog* log = server.repairs();
  // In place of the key's home: the home missed this write, and this
  // server now holds a guest copy of the key.
  if (writes && req.home != nullptr && req.home != log) req.home->record(req.request.keys[0], log);
  Outbox* outbox = server.outbox(req.affinity);
  if (outbox == nullptr) {
    if (writes) note_missed_write(server, req);
    return unavailable(req, slot, server.refusal());
  }
  // The read gate: a key this server may hold stale is deleted there
  // first, on the same connection, so the read that follows misses.
  const bool gated = log != nullptr && !log->clear();
  if (gated && proto::returns_value(req.request.command) && log->gates(req.request.keys[0]))
    enqueue_delete(*outbox, req.request.keys[0], req, slot);
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
  BackendOp op{&slot, fragment, mode, req.now_usec};
  if (writes) {
    op.writes = true;
    op.key = req.request.keys[0];
    if (gated && proto::replaces_value(req.request)) op.repair_seq = log->sequence();
  }
  outbox->enqueue(op);
}

// With servers ejected, a write of `key` may be placed on `server` rather
// than its home, which misses it (repair_log.h); `guest` is set when that
// server keeps a copy in the home's place.
void KeyRoute::note_home_missed(std::string_view key, size_t server, bool guest) const {
  if (!placement_.moves_keys()) return;
  const size_t h = placement_.home(key);
  if (h == server || h == Placement::npos) return;
  if (RepairLog* home = placement_.server(h).repairs()) {
    home->record(
        key, guest && server != Placement::npos ? placement_.server(server).repairs() : nullptr);
  }
}

void KeyRoute::send(RouteRequest& req, ReplySlot& slot) {
  const std::string_view key = req.request.keys[0];
  size_t server = placement_.place(key);
  if (proto::changes_key(req.request)) note_home_missed(key, server, true);
  if (server == Placement::npos) return unavailable(req, slot);
  send_to(placement_.server(server), req, slot);
}

void send_delete(Server& server, RouteRequest& req, ReplySlot& slot) {
  RepairLog* log = server.repairs();
  if (req.home != nullptr && req.home != log) req.home->record(req.request.keys[0], log);
  Outbox* outbox = server.outbox(req.affinity);
  if (outbox == nullptr) return note_missed_write(server, req);
  std::string& text = req.scratch.text;
  text.clear();
  if (!proto::append_delete(req.request.keys[0], true, text)) return;
  proto::append_noop(text);
  evbuffer_add(outbox->output(), text.data(), text.size());
  slot.expect();
  slot.add_fragment();
  req.count_fragment();
  BackendOp op{&slot, 0, ReplyMode::quiet_drop, req.now_usec};
  op.writes = true;  // a delete that fails leaves the value it was to remove
  op.key = req.request.keys[0];
  if (log != nullptr && !log->clear()) op.repair_seq = log->sequence();
  outbox->enqueue(op);
}

void KeyRoute::invalidate(RouteRequest& req, ReplySlot& slot) {
  size_t server = placement_.place(req.request.keys[0]);
  // A delete leaves no copy where it lands.
  note_home_missed(req.request.keys[0], server, false);
  if (server != Placement::npos) send_delete(placement_.server(server), req, slot);
}

}  // namespace memshard::proxy
