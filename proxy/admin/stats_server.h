// The stats port (-s/-a). A client that connects and says nothing, or says
// anything but HTTP, gets twemproxy's JSON stats document and the
// connection closes, as with nutcracker; an HTTP client gets what
// stats_routes.h says: the status page, its JSON, twemproxy's JSON or
// /metrics. Runs on the main thread: reading counters never touches a
// worker's request path.
#pragma once

#include <event2/event.h>
#include <event2/listener.h>

#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "proxy/admin/stats_view.h"
#include "proxy/support/timer.h"
#include "proxy/transport/accept_guard.h"
#include "proxy/transport/stream.h"

namespace memshard::proxy {

class StatsServer {
 public:
  // Throws std::runtime_error when the address cannot be bound.
  // `token`: when not empty, every HTTP request must carry it
  // (stats_token.h).
  StatsServer(StreamLoop& streams, const StatsView& proxy, DescriptorReserve& reserve,
              const std::string& address, uint16_t port, std::string token = "");
  ~StatsServer();
  StatsServer(const StatsServer&) = delete;
  StatsServer& operator=(const StatsServer&) = delete;

  // The token the next request must carry (empty: none); a reload's. On
  // the thread that runs the server's event base.
  void set_token(std::string token) { token_ = std::move(token); }

 private:
  struct Session;
  static void on_accept(evconnlistener*, evutil_socket_t fd, sockaddr*, int, void* self);
  // A session that is done is freed once its callback has returned.
  void finished(Session* s);

  event_base* base_;
  StreamLoop& streams_;
  const StatsView& proxy_;
  std::string token_;
  std::map<Session*, std::unique_ptr<Session>> sessions_;
  std::vector<std::unique_ptr<Session>> done_;  // freed by sweep_
  std::unique_ptr<Timer> sweep_;                // frees finished sessions after their callbacks
  evconnlistener* listener_ = nullptr;
  std::unique_ptr<AcceptGuard> guard_;
};

}  // namespace memshard::proxy
