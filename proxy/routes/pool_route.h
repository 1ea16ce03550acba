// A pool as one worker routes it: its config and ring (from the topology
// in force), per server index the worker's backend for that server, and
// the routes built over them. Rebuilt by the worker at every topology
// change, as the ring is; clients keep a pointer for as long as the
// worker's routes epoch stays the same.
#pragma once

#include <memory>
#include <vector>

#include "proxy/backends/backend.h"
#include "proxy/routes/broadcast_route.h"
#include "proxy/routes/gutter_route.h"
#include "proxy/routes/key_route.h"
#include "proxy/routes/past_placement.h"
#include "proxy/routes/placement.h"
#include "proxy/routes/pool_entry.h"
#include "proxy/routes/replica_placement.h"
#include "proxy/routes/routing_pool.h"
#include "proxy/routes/split_route.h"
#include "proxy/routes/switch_routes.h"
#include "proxy/routes/topology.h"
#include "proxy/support/stats.h"

namespace memshard::proxy {

struct PoolRoute {
  const Pool* pool = nullptr;
  std::vector<BackendServer*> backends;
  std::shared_ptr<PoolStats> stats;

  // The pool's route for each kind of request; set by build_routes().
  std::unique_ptr<RingPlacement> placement;
  std::unique_ptr<SingleKeyRoute> key;  // single-key requests
  std::unique_ptr<Route> multi_get;     // retrievals
  std::unique_ptr<Route> all;           // flush_all
  // Replicated pools: the copies of each key, and per copy its routes.
  std::unique_ptr<ReplicaPlacement> replicas;
  std::vector<std::unique_ptr<CopyPlacement>> copy_placements;
  std::vector<std::unique_ptr<KeyRoute>> copy_keys;
  std::vector<std::unique_ptr<SplitRoute>> copy_reads;
  // reload_warmup, while a past config's window is open: per past ring
  // (Pool::past), the worker's server for each of its servers, and the
  // pool's own routes, which `key` and `multi_get` then wrap.
  std::vector<std::vector<Server*>> past_servers;
  std::unique_ptr<PastPlacement> past;
  std::unique_ptr<SingleKeyRoute> own_key;
  std::unique_ptr<Route> own_multi_get;
  // gutter: the gutter pool's finished routes (set before build_routes,
  // which needs them), and what the pool's routes to it are made of.
  PoolRoutes gutter_pool;
  std::unique_ptr<GutterPlacement> gutter_placement;
  std::unique_ptr<Gutter> gutter;
  std::unique_ptr<Route> own_split, own_all;
  std::unique_ptr<PoolEntry> gutter_flush;
  // A routing pool (routes): what its routes are made of.
  std::unique_ptr<RoutingPool> routing;
  // reload_switch_at, while the pool's switch waits or its window runs
  // (Pool::pending; switch_routes.h): the worker's server for each server
  // of the waiting placement (set with backends), the past rings the
  // routes in force see (the waiting ring first, as `future`), the waiting
  // placement as a pool of its own with its routes, and the routes in
  // force, which `key`, `multi_get` and `all` then wrap.
  std::vector<BackendServer*> next_backends;
  std::vector<PastRing> with_future;
  std::unique_ptr<Pool> next_pool;
  std::unique_ptr<PoolRoute> next;
  std::unique_ptr<SingleKeyRoute> before_key;
  std::unique_ptr<Route> before_multi_get, before_all;
  std::unique_ptr<ServerList> all_servers;
  std::unique_ptr<Route> switch_flush;  // with a gutter: the flush `all` wraps
  // ttl_max or ttl_set: the routes `key` and `multi_get` wrap, rewriting
  // the expiries requests set (expiry_route.h).
  std::unique_ptr<SingleKeyRoute> unrewritten_key;
  std::unique_ptr<Route> unrewritten_multi_get;
  // Counts the requests these routes hold (see RouteLife).
  std::unique_ptr<RouteLife> life = std::make_unique<RouteLife>();
  // Once pool, backends and past_servers are set: the plain routes, the
  // reload warm-up around them (while a window is open), a scheduled
  // switch's routes around those, and the hot-key layer
  // (hot_key_routes.h) outermost.
  void build_routes();
  void build_plain_routes();
  // Whether requests these routes (or the waiting placement's) hold are
  // in flight: the routes must stay until they end.
  bool holding() const { return life->held_requests > 0 || (next && next->holding()); }

  // The hot-key layer (hot_key_routes.h) around `key`, `multi_get` and
  // `all`, over `placement`: the last step of build_routes.
  void build_hot_keys();
  // ttl_max or ttl_set around `key` and `multi_get`: the last step of
  // build_routes, so that every request the pool takes, from its listener,
  // a route, a gutter or a shadow, sets expiries by it.
  void build_expiry();

  // A routing pool's routes, into the pools it routes to (built before).
  void build_routing(const RoutingPool::PoolOf& pool_of,
                     const RoutingPool::CountersOf& counters_of);

  // The finished routes, for a route entering the pool from outside.
  PoolRoutes entry() const { return {key.get(), multi_get.get(), all.get(), stats.get()}; }

 private:
  void build_warmup();
  void build_gutter(std::vector<Server*> servers);
  void build_switch();
};

}  // namespace memshard::proxy
