// The hot-key layer of a pool's routes, wrapped around the routes the pool
// would have without it (wrap_hot_key_routes). Always: a sample of the
// keys forwarded goes to the worker's hot-key summary (HotKeyTracker).
// With hot_key_cache: single-key `get`s and `gets` (binary GETs become
// these) of hot keys are answered from the pool's HotKeyCache or fill it; every request that
// changes a key (storage, delete, incr/decr, touch, gat, meta ms/md/ma, mg with T or N) invalidates
// it when sent and again when answered, flush_all clears it (see
// hot_key_cache.h for why no write through memshard is ever read stale).
// With hot_key_spread: a hot key's single-key get(s) goes to one of its
// copies in turn rather than to its first.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "proxy/routes/hot_key_cache.h"
#include "proxy/routes/placement.h"
#include "proxy/routes/replica_placement.h"
#include "proxy/routes/route.h"
#include "proxy/support/hot_key_tracker.h"

namespace memshard::proxy {

// What a pool's hot-key routes share on one worker.
struct HotKeyContext {
  HotKeyTracker& tracker;
  const Placement& placement;
  std::vector<std::string> server_names;  // by placement index
  std::shared_ptr<HotKeyCache> cache;     // null without hot_key_cache
  std::vector<Route*> copies;             // hot_key_spread: per copy, its read route
  const ReplicaPlacement* replicas;       // hot_key_spread: which copies are live
  RouteLife* life;
  uint64_t next_copy = 0;

  void observe(std::string_view key, uint64_t now_usec) {
    if (tracker.sample()) record(key, now_usec);
  }
  void record(std::string_view key, uint64_t now_usec);
};

// The hot-key layer around a pool's routes (PoolRoute::build_routes):
// each takes the route it wraps. The flush route is needed only with a
// cache, which a flush clears.
std::unique_ptr<SingleKeyRoute> hot_key_route(std::unique_ptr<SingleKeyRoute> inner,
                                              std::shared_ptr<HotKeyContext> hot);
std::unique_ptr<Route> hot_key_get_route(std::unique_ptr<Route> inner,
                                         std::shared_ptr<HotKeyContext> hot);
std::unique_ptr<Route> hot_key_flush_route(std::unique_ptr<Route> inner,
                                           std::shared_ptr<HotKeyContext> hot);

}  // namespace memshard::proxy
