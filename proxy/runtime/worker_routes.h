// What one worker routes with: for the topology in force, each pool's
// routes (PoolRoute) over the worker's connections to its servers, and
// what outlives a reload until nothing needs it any more: routes replaced
// while requests they hold were in flight (RouteLife), connections to
// servers that left until they owe nothing, and the counters the stats
// read (kept by pool and server across reloads that keep them).
//
// Worker-thread only, but for collect() and requests(), which other
// threads call: the counter maps are guarded, the counting never is.
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <unordered_map>
#include <vector>

#include "proxy/admin/stats_view.h"
#include "proxy/backends/backend.h"
#include "proxy/backends/context.h"
#include "proxy/routes/pool_route.h"
#include "proxy/routes/topology.h"
#include "proxy/support/stats.h"

namespace memshard::proxy {

class WorkerRoutes {
 public:
  // `backends`: what the worker's server connections run on.
  explicit WorkerRoutes(BackendContext& backends) : context_(backends) {}
  ~WorkerRoutes();
  WorkerRoutes(const WorkerRoutes&) = delete;
  WorkerRoutes& operator=(const WorkerRoutes&) = delete;

  // Builds the routes of `topology`. Connections to servers it keeps are
  // kept (with its settings); those to servers it dropped close once they
  // owe nothing; the replaced routes stay while they hold requests.
  // Requests already queued keep their slots: only requests parsed from
  // now on see the new routes.
  void apply(std::shared_ptr<const Topology> topology);
  // The pool's routes, or null when the topology has no such pool.
  const PoolRoute* route(const std::string& pool_name) const;
  // Bumped by every apply(): a client may keep a PoolRoute pointer for as
  // long as this stays the same.
  uint64_t epoch() const { return epoch_; }
  uint64_t generation() const { return topology_ ? topology_->generation : 0; }

  // Frees what nothing needs any more: replaced routes no request holds,
  // then connections of departed servers that owe nothing, and counters
  // of pools and servers no longer configured.
  void reap();
  // Once a second: connections to addresses a server's name no longer
  // resolves to close once they owe nothing; hot-key summaries tick.
  void housekeeping(uint64_t now_usec);

  // Drops every route and connection (the worker's loop is ending: their
  // events must go before it does).
  void clear();

  // Thread-safe: adds the pool and server counters to `out`.
  void collect(StatsSnapshot& out) const;
  // Thread-safe: requests answered, over every pool.
  uint64_t requests() const;

 private:
  std::shared_ptr<PoolStats> pool_stats_for(const std::string& pool);
  std::shared_ptr<RouteStats> route_stats_for(const std::string& pool, const std::string& route);

  BackendContext& context_;
  std::shared_ptr<const Topology> topology_;
  std::unordered_map<std::string, PoolRoute> routes_;
  uint64_t epoch_ = 0;
  // Keyed by pool name + '\0' + server identity: a reload that keeps a
  // server keeps its connections.
  std::unordered_map<std::string, std::unique_ptr<BackendServer>> backends_;
  // Servers that left the config, kept until they owe nothing and no
  // replaced routes that may still send to them are left.
  std::vector<std::unique_ptr<BackendServer>> draining_;
  // Routes replaced while requests they hold were in flight, with the
  // topology whose rings they read.
  struct Retired {
    std::shared_ptr<const Topology> topology;
    std::unordered_map<std::string, PoolRoute> routes;
  };
  std::vector<Retired> retired_;
  // The counters, readable from other threads; the mutex guards the maps
  // only (taken on reload and by readers), never the counting itself.
  mutable std::mutex stats_mu_;
  std::map<std::string, std::weak_ptr<PoolStats>> pool_stats_;
  struct ServerKey {
    std::string pool, stats_name, identity;
    auto operator<=>(const ServerKey&) const = default;
  };
  std::map<ServerKey, std::weak_ptr<ServerStats>> server_stats_;
  // By routing pool and route name (its prefix, or "(default)").
  std::map<std::pair<std::string, std::string>, std::weak_ptr<RouteStats>> route_stats_;
};

}  // namespace memshard::proxy
