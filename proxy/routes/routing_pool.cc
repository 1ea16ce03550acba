#include "proxy/routes/routing_pool.h"

#include <set>

#include "proxy/routes/blackhole_route.h"
#include "proxy/routes/fanout_route.h"
#include "proxy/routes/replicated_get_route.h"
#include "proxy/routes/replicated_key_route.h"
#include "proxy/routes/warm_from_route.h"

namespace memshard::proxy {

RoutingPool::RoutingPool(const conf::PoolConfig& config, const PoolOf& pool_of,
                         const CountersOf& counters_of, RouteLife* life)
    : life_(life) {
  std::vector<std::string> prefixes;
  size_t default_route = PrefixTable::npos;
  std::set<std::string> flushed;
  for (const conf::RouteConfig& r : config.routes) {
    if (r.is_default) default_route = prefixes.size();
    prefixes.push_back(r.prefix);
    add_route(r, config, pool_of, counters_of);
    for (const std::string& p : r.pools) flushed.insert(p);
    if (!r.shadow.empty()) flushed.insert(r.shadow);
  }
  table_ = std::make_unique<PrefixTable>(prefixes, default_route);
  for (const std::string& p : flushed) {
    flush_parts_.push_back(std::make_unique<PoolEntry>(pool_of(p), PoolEntry::Part::all));
  }
}

void RoutingPool::add_route(const conf::RouteConfig& route, const conf::PoolConfig& config,
                            const PoolOf& pool_of, const CountersOf& counters_of) {
  RouteTarget& t = targets_.emplace_back();
  counters_.push_back(counters_of(route.name()));
  t.counters = counters_.back().get();
  if (route.blackhole) {
    t.key = key_parts_.emplace_back(std::make_unique<BlackholeRoute>(*t.counters)).get();
    t.multi_get = t.key;
    return;
  }
  std::vector<SingleKeyRoute*> keys;
  std::vector<Route*> keys_as_routes, reads;
  for (const std::string& name : route.pools) {
    const PoolRoutes pool = pool_of(name);
    keys.push_back(
        key_parts_.emplace_back(std::make_unique<PoolEntry>(pool, PoolEntry::Part::key)).get());
    keys_as_routes.push_back(keys.back());
    reads.push_back(
        get_parts_.emplace_back(std::make_unique<PoolEntry>(pool, PoolEntry::Part::multi_get))
            .get());
  }
  if (keys.size() == 1) {
    t.key = keys[0];
    t.multi_get = reads[0];
  } else {
    // Zone copies: as a replicated pool's copies, a pool per copy.
    t.key =
        key_parts_
            .emplace_back(std::make_unique<ReplicatedKeyRoute>(
                keys, reply_policy_of(config.write_policy), config.read_failover_on_miss, life_))
            .get();
    t.multi_get = get_parts_
                      .emplace_back(std::make_unique<ReplicatedGetRoute>(
                          reads, keys_as_routes, config.read_failover_on_miss, false, life_))
                      .get();
  }
  if (!route.warm_from.empty()) {
    // The target so far takes the writes; the cold side, where reads go
    // and copies land, is its first pool (with zone copies, the first
    // alone); reads that miss there look in the warm pool.
    SingleKeyRoute* warm = key_parts_
                               .emplace_back(std::make_unique<PoolEntry>(pool_of(route.warm_from),
                                                                         PoolEntry::Part::key))
                               .get();
    const WarmFrom from{*keys[0], *t.key, *warm, route.warm_ttl_s, *t.counters, life_};
    t.key = key_parts_.emplace_back(std::make_unique<WarmFromKeyRoute>(from)).get();
    t.multi_get =
        get_parts_.emplace_back(std::make_unique<WarmFromGetRoute>(*reads[0], from)).get();
  }
  if (!route.shadow.empty()) {
    t.shadow = shadows_
                   .emplace_back(std::make_unique<Shadow>(pool_of(route.shadow), route.shadow_share,
                                                          *t.counters, life_))
                   .get();
  }
}

std::unique_ptr<SingleKeyRoute> RoutingPool::key_route() const {
  return std::make_unique<PrefixKeyRoute>(*table_, targets_);
}

std::unique_ptr<Route> RoutingPool::multi_get_route() const {
  return std::make_unique<PrefixGetRoute>(*table_, targets_, life_);
}

std::unique_ptr<Route> RoutingPool::flush_route() const {
  std::vector<Route*> pools;
  for (const auto& p : flush_parts_) pools.push_back(p.get());
  return std::make_unique<FanoutRoute>(std::move(pools), ReplyPolicy::all, life_);
}

}  // namespace memshard::proxy
