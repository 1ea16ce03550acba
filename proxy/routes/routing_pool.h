// What a routing pool's routes are made of on one worker (conf: routes;
// docs/routing.md): per route, the way into its pool, or
// into each of its zone copies with the replicated routes over them, its
// shadow and its counters; the prefix table; and the routes the client
// sends on (key, multi_get, all), which PoolRoute owns.
#pragma once

#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "conf/model.h"
#include "proxy/routes/pool_entry.h"
#include "proxy/routes/prefix_route.h"
#include "proxy/routes/shadow.h"
#include "proxy/support/stats.h"

namespace memshard::proxy {

class RoutingPool {
 public:
  // A pool's finished routes, by name (a pool the config refers to: the
  // config was checked, conf/routes.cc).
  using PoolOf = std::function<PoolRoutes(const std::string&)>;
  // The counters of the routing pool's route of this name, kept across
  // reloads.
  using CountersOf = std::function<std::shared_ptr<RouteStats>(const std::string&)>;

  RoutingPool(const conf::PoolConfig& config, const PoolOf& pool_of, const CountersOf& counters_of,
              RouteLife* life);
  RoutingPool(const RoutingPool&) = delete;
  RoutingPool& operator=(const RoutingPool&) = delete;

  std::unique_ptr<SingleKeyRoute> key_route() const;
  std::unique_ptr<Route> multi_get_route() const;
  // flush_all: every pool behind the routes, shadows included; OK when
  // every one said OK.
  std::unique_ptr<Route> flush_route() const;

 private:
  void add_route(const conf::RouteConfig& route, const conf::PoolConfig& config,
                 const PoolOf& pool_of, const CountersOf& counters_of);

  RouteLife* life_;
  std::unique_ptr<PrefixTable> table_;
  std::vector<RouteTarget> targets_;
  std::vector<std::unique_ptr<SingleKeyRoute>> key_parts_;
  std::vector<std::unique_ptr<Route>> get_parts_;
  std::vector<std::unique_ptr<Shadow>> shadows_;
  std::vector<std::shared_ptr<RouteStats>> counters_;
  std::vector<std::unique_ptr<PoolEntry>> flush_parts_;  // one per pool reached
};

}  // namespace memshard::proxy
