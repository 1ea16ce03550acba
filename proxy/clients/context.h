// What a client connection needs of the event loop it runs on (a worker,
// or a test's fake): streams, clock and counters, the routes of its pool,
// pooled reply slots, somewhere to be freed once closed, and the answer to
// `stats`. Nothing else of the proxy.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "proxy/backends/reply_slot.h"
#include "proxy/routes/pool_route.h"
#include "proxy/routes/request_scratch.h"
#include "proxy/support/stats.h"
#include "proxy/transport/stream.h"

namespace memshard::proxy {

class ClientConn;

class ClientContext : public SlotSource {
 public:
  virtual StreamLoop& streams() = 0;
  // Parse space shared by the loop's clients (one request at a time).
  virtual RequestScratch& scratch() = 0;
  virtual WorkerStats& stats() = 0;
  // The pool's routes, or null when the pool is gone; valid while
  // routes_epoch() stays the same.
  virtual const PoolRoute* route(const std::string& pool_name) const = 0;
  virtual uint64_t routes_epoch() const = 0;
  // Frees a closed client once the current callback has returned.
  virtual void retire(ClientConn* client) = 0;
  // The reply to `stats <args>`, STAT lines and END.
  virtual void append_stats(const std::vector<std::string_view>& args, std::string& out) = 0;
  // What a client that spoke another protocol than memcached's was: an
  // HTTP request, or a TLS handshake to a listener without TLS.
  enum class Foreign : uint8_t { http, tls };
  // A client of `pool` was closed for it (logged, a line a second at most).
  virtual void closed_foreign(const std::string& pool, Foreign what) = 0;

 protected:
  ~ClientContext() = default;
};

}  // namespace memshard::proxy
