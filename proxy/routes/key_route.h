// A single-key request to the server that holds its key, sent as the
// client wrote it (set, delete, incr, touch, mg, ms, md, ...). A quiet
// request (noreply, meta q) is followed by "mn", so that the server's own
// quiet rules decide what it says and its MN marks where its answer ends.
#pragma once

#include "proxy/routes/placement.h"
#include "proxy/routes/route.h"

namespace memshard::proxy {

// Sends `req`, as the client wrote it, to `server`; a server that is
// unavailable gets nothing and the slot answers SERVER_ERROR (or nothing,
// for noreply).
void send_to(Server& server, RouteRequest& req, ReplySlot& slot);

// Deletes `key` quietly on `outbox` before what req sends there next, as
// one more fragment of `slot` (the read gate: repair_log.h).
void enqueue_delete(Outbox& outbox, std::string_view key, RouteRequest& req, ReplySlot& slot);

// Deletes req's key on `server` (md ... q, then mn), as one more fragment
// of `slot`; nothing when the server is unavailable.
void send_delete(Server& server, RouteRequest& req, ReplySlot& slot);

class KeyRoute final : public SingleKeyRoute {
 public:
  explicit KeyRoute(const Placement& placement) : placement_(placement) {}
  void send(RouteRequest& req, ReplySlot& slot) override;
  void invalidate(RouteRequest& req, ReplySlot& slot) override;

 private:
  void note_home_missed(std::string_view key, size_t server, bool guest) const;
  const Placement& placement_;
};

// One fixed server: a leaf for composite routes.
class ServerRoute final : public Route {
 public:
  explicit ServerRoute(Server& server) : server_(server) {}
  void send(RouteRequest& req, ReplySlot& slot) override { send_to(server_, req, slot); }

 private:
  Server& server_;
};

}  // namespace memshard::proxy
