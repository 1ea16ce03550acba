// What a backend connection needs of the event loop it runs on (a worker,
// or a test's fake): the loop, its streams and clock, the counters, and
// where to report a server that keeps failing. Nothing else of the proxy.
#pragma once

#include <event2/event.h>

#include <cstdint>
#include <string>

#include "proxy/support/stats.h"
#include "proxy/transport/stream.h"

namespace memshard::proxy {

class BackendContext {
 public:
  virtual event_base* base() const = 0;
  virtual StreamLoop& streams() = 0;
  // The time of this loop iteration.
  virtual uint64_t now_usec() = 0;
  virtual WorkerStats& stats() = 0;
  // `server_failure_limit` failures of the server in a row (auto_eject_hosts).
  virtual void server_failing(const std::string& pool, const std::string& identity) = 0;
  // A connection to the server could not be made: a server listed by name
  // may have moved.
  virtual void server_unreachable(const std::string& pool, const std::string& identity) = 0;

 protected:
  ~BackendContext() = default;
};

}  // namespace memshard::proxy
