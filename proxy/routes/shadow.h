// Shadow traffic (conf: a route's shadow and shadow_share; docs/routing.md,
// "Shadow"): a copy of a share of a route's requests, reads and
// writes, also goes to another pool: a new pool or a new memcached version
// sees live traffic before it takes any. The copy's answer is dropped
// unread, so a shadow never delays, fails or changes what a client sees,
// even when its servers are dead or frozen: it runs on the shadow pool's
// own connections, and at most kMaxInFlight copies per worker wait on it;
// beyond that, a copy is dropped and counted.
#pragma once

#include <cstdint>
#include <span>
#include <string_view>

#include "proxy/routes/pool_entry.h"
#include "proxy/routes/work.h"
#include "proxy/support/stats.h"

namespace memshard::proxy {

// Whether a shadow of `share` takes `key`: the same answer on every worker,
// every instance and in `memshard ring lookup`.
bool shadow_takes(std::string_view key, double share);

class Shadow {
 public:
  static constexpr uint32_t kMaxInFlight = 1024;

  // `share` in (0, 1]; `counters` (the route's) and `life` (what a copy in
  // flight keeps alive) must outlive the copies.
  Shadow(const PoolRoutes& pool, double share, RouteStats& counters, RouteLife* life);
  Shadow(const Shadow&) = delete;
  Shadow& operator=(const Shadow&) = delete;

  // The key is one of the share copied: chosen by a hash of the key, so
  // the same keys each time, on every worker and every instance.
  bool takes(std::string_view key) const;
  // A copy of req (a single-key request, at the front of req.in, which is
  // not touched), if its key is one the shadow takes.
  void copy(const RouteRequest& req);
  // A copy of a retrieval (req) asking for those of `keys` the shadow
  // takes; `keys` are req's own (all of them) or some of them.
  void copy_retrieval(const RouteRequest& req, std::span<const std::string_view> keys);

 private:
  void send(const RouteRequest& req, std::string bytes, size_t header, Route& route);
  Work copy_work(const RouteRequest& req, std::string bytes, size_t header, Route& route);

  PoolEntry key_, multi_get_;
  uint64_t threshold_;  // keys whose hash is below this are copied
  RouteStats& counters_;
  RouteLife* life_;
  uint32_t in_flight_ = 0;
};

}  // namespace memshard::proxy
