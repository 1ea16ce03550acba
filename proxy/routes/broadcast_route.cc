#include "proxy/routes/broadcast_route.h"

#include "proxy/backends/repair_log.h"
#include "proxy/protocol/own_requests.h"
#include "proxy/protocol/replies.h"

namespace memshard::proxy {

void BroadcastRoute::send(RouteRequest& req, ReplySlot& slot) {
  slot.set_kind(SlotKind::broadcast);
  if (req.request.quiet) slot.set_drop_reply();
  slot.add_fragment();
  for (size_t i = 0; i < placement_.size(); ++i) {
    Outbox* outbox = placement_.server(i).outbox(req.affinity);
    if (outbox == nullptr) {
      // A flush it missed: the server must be flushed before it serves.
      if (RepairLog* log = placement_.server(i).repairs()) log->record_flush();
      slot.note_error(placement_.server(i).refusal());
      req.count_error();
      continue;
    }
    evbuffer* out = outbox->output();
    evbuffer_add(out, req.line.data(), req.line.size());
    evbuffer_add(out, "\r\n", 2);
    ReplyMode mode = ReplyMode::broadcast;
    if (req.request.quiet) {
      evbuffer_add(out, proto::kNoop.data(), proto::kNoop.size());
      mode = ReplyMode::quiet_drop;
    }
    slot.expect();
    req.count_fragment();
    BackendOp op{&slot, 0, mode, req.now_usec};
    op.writes = true;  // failed: recorded as a flush owed (BackendConn::note_write)
    outbox->enqueue(op);
  }
  evbuffer_drain(req.in, req.header_bytes);
  if (slot.outstanding() == 0) slot.complete_unsent();
}

}  // namespace memshard::proxy
