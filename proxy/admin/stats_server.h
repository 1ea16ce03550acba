// The stats port (-s/-a). A client that connects and says nothing, or says
// anything but HTTP, gets twemproxy's JSON stats document and the
// connection closes, as with nutcracker; an HTTP client gets
// `GET /metrics` (Prometheus text format) or `GET /` / `GET /stats` (the
// JSON). Runs on the main thread: reading counters never touches a worker's
// request path.
#pragma once

#include <event2/event.h>
#include <event2/listener.h>

#include <cstdint>
#include <memory>
#include <set>
#include <string>

#include "proxy/admin/stats_view.h"
#include "proxy/transport/accept_guard.h"
#include "proxy/transport/stream.h"

namespace memshard::proxy {

class StatsServer {
 public:
  // Throws std::runtime_error when the address cannot be bound.
  StatsServer(StreamLoop& streams, const StatsView& proxy, DescriptorReserve& reserve,
              const std::string& address, uint16_t port);
  ~StatsServer();
  StatsServer(const StatsServer&) = delete;
  StatsServer& operator=(const StatsServer&) = delete;

 private:
  struct Session;
  static void on_accept(evconnlistener*, evutil_socket_t fd, sockaddr*, int, void* self);

  event_base* base_;
  StreamLoop& streams_;
  const StatsView& proxy_;
  std::set<Session*> sessions_;  // freed with the server, should any remain
  evconnlistener* listener_ = nullptr;
  std::unique_ptr<AcceptGuard> guard_;
};

}  // namespace memshard::proxy
