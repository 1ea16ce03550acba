#include "proxy/routes/pool_route.h"

#include <algorithm>
#include <cstdint>

#include "proxy/routes/expiry_route.h"
#include "proxy/routes/fanout_route.h"
#include "proxy/routes/hot_key_routes.h"
#include "proxy/routes/replicated_get_route.h"
#include "proxy/routes/replicated_key_route.h"
#include "proxy/routes/switch_routes.h"
#include "proxy/routes/warm_get_route.h"
#include "proxy/routes/warm_key_route.h"

namespace memshard::proxy {

void PoolRoute::build_routes() {
  std::vector<std::vector<Server*>> past_only = past_servers;
  if (pool->pending) {
    // The routes in force see the waiting placement as their newest ring.
    const PendingSwitch& p = *pool->pending;
    with_future.clear();
    with_future.push_back(PastRing{p.ring, p.servers, p.live, UINT64_MAX, p.generation,
                                   p.config.replicas, true, false});
    for (const PastRing& r : pool->past) with_future.push_back(r);
    past_servers.insert(past_servers.begin(),
                        std::vector<Server*>(next_backends.begin(), next_backends.end()));
  }
  build_plain_routes();
  if (pool->pending) {
    past_servers = std::move(past_only);
    build_switch();
  }
  build_hot_keys();
  build_expiry();
}

void PoolRoute::build_expiry() {
  const conf::PoolConfig& pc = pool->config;
  const proto::ExpiryRule rule = pool_expiry_rule(pc.ttl_max_s, pc.ttl_set_s);
  if (!rule.changes() || key == nullptr) return;
  unrewritten_key = std::move(key);
  unrewritten_multi_get = std::move(multi_get);
  key = std::make_unique<ExpiryRoute>(*unrewritten_key, unrewritten_key.get(), rule, life.get());
  multi_get = std::make_unique<ExpiryRoute>(*unrewritten_multi_get, nullptr, rule, life.get());
}

// The waiting placement's routes, over a pool of its own whose past is the
// placement in force (then the pool's past rings), and the switch routes
// that pick between them per key.
void PoolRoute::build_switch() {
  if (!past) return;  // no guard: the topology always gives a waiting switch one
  const PendingSwitch& p = *pool->pending;
  next_pool = std::make_unique<Pool>(
      Pool{p.config, p.ring, p.servers, pool->listen, p.live, {}, pool->guard, {}, {}});
  const uint64_t warmup_usec = static_cast<uint64_t>(p.config.reload_warmup_ms) * 1000;
  next_pool->past.push_back(PastRing{pool->ring, pool->servers, pool->live,
                                     p.ends_usec() + warmup_usec, 0, pool->config.replicas, false,
                                     true});
  for (const PastRing& r : pool->past) next_pool->past.push_back(r);
  next = std::make_unique<PoolRoute>();
  next->pool = next_pool.get();
  next->backends = next_backends;
  next->stats = stats;
  next->gutter_pool = gutter_pool;  // the waiting placement's down servers go there too
  next->past_servers.emplace_back(backends.begin(), backends.end());
  for (const auto& servers : past_servers) next->past_servers.push_back(servers);
  next->build_plain_routes();

  const SwitchMoment moment{p.at_usec, p.window_usec};
  before_key = std::move(key);
  before_multi_get = std::move(multi_get);
  before_all = std::move(all);
  key = std::make_unique<SwitchKeyRoute>(*before_key, *next->key, moment);
  multi_get = std::make_unique<SwitchGetRoute>(*before_multi_get, *next->multi_get, moment, *past,
                                               life.get());
  std::vector<Server*> servers(backends.begin(), backends.end());
  for (BackendServer* b : next_backends) {
    if (std::find(servers.begin(), servers.end(), b) == servers.end()) servers.push_back(b);
  }
  all_servers = std::make_unique<ServerList>(std::move(servers));
  all = std::make_unique<BroadcastRoute>(*all_servers);
  if (gutter_flush != nullptr) {  // the gutter is emptied too, as build_gutter's flush does
    switch_flush = std::move(all);
    all = std::make_unique<FanoutRoute>(std::vector<Route*>{switch_flush.get(), gutter_flush.get()},
                                        ReplyPolicy::all, life.get());
  }
}

void PoolRoute::build_hot_keys() {
  const conf::PoolConfig& pc = pool->config;
  stats->hot_keys.configure(pc.name, pc.hot_key_log_share);
  std::shared_ptr<HotKeyCache> cache;
  if (pc.hot_key_cache_mb > 0) {
    cache = HotKeyCache::for_pool(pc.name, size_t{pc.hot_key_cache_mb} << 20,
                                  uint64_t{pc.hot_key_ttl_ms} * 1000);
  }
  std::vector<std::string> names;
  for (const ServerInfo& s : pool->servers) names.push_back(s.stats_name);
  std::vector<Route*> copies;
  // Spreading reads over the copies would go past a waiting switch.
  if (pc.hot_key_spread && !next) {
    for (const auto& r : copy_reads) copies.push_back(r.get());
  }
  auto hot = std::make_shared<HotKeyContext>(
      HotKeyContext{stats->hot_keys, *placement, std::move(names), cache, std::move(copies),
                    replicas.get(), life.get()});
  key = hot_key_route(std::move(key), hot);
  multi_get = hot_key_get_route(std::move(multi_get), hot);
  if (cache) all = hot_key_flush_route(std::move(all), hot);
}

void PoolRoute::build_routing(const RoutingPool::PoolOf& pool_of,
                              const RoutingPool::CountersOf& counters_of) {
  routing = std::make_unique<RoutingPool>(pool->config, pool_of, counters_of, life.get());
  key = routing->key_route();
  multi_get = routing->multi_get_route();
  all = routing->flush_route();
}

void PoolRoute::build_gutter(std::vector<Server*> servers) {
  const uint32_t ttl = pool->config.gutter_ttl_s;
  // Made in place: a GutterEntry's expiry route points into it.
  gutter.reset(new Gutter{GutterEntry(gutter_pool, PoolEntry::Part::key, ttl, life.get()),
                          GutterEntry(gutter_pool, PoolEntry::Part::multi_get, ttl, life.get())});
  gutter_placement = std::make_unique<GutterPlacement>(pool->ring, pool->live, std::move(servers));
  own_split = std::make_unique<SplitRoute>(*gutter_placement);
  key = std::make_unique<GutterKeyRoute>(*gutter_placement, *gutter, life.get());
  multi_get = std::make_unique<GutterGetRoute>(*gutter_placement, *own_split, *gutter, life.get());
  // flush_all empties the gutter too: a key flushed must not be read back
  // from there.
  own_all = std::move(all);
  gutter_flush = std::make_unique<PoolEntry>(gutter_pool, PoolEntry::Part::all);
  all = std::make_unique<FanoutRoute>(std::vector<Route*>{own_all.get(), gutter_flush.get()},
                                      ReplyPolicy::all, life.get());
}

void PoolRoute::build_plain_routes() {
  std::vector<Server*> servers(backends.begin(), backends.end());
  placement = std::make_unique<RingPlacement>(pool->ring, servers, pool->home_ring.get());
  all = std::make_unique<BroadcastRoute>(*placement);
  const conf::PoolConfig& pc = pool->config;
  if (pc.replicas <= 1 && gutter_pool.key != nullptr) {
    build_gutter(std::move(servers));
    build_warmup();
    return;
  }
  if (pc.replicas <= 1) {
    key = std::make_unique<KeyRoute>(*placement);
    multi_get = std::make_unique<SplitRoute>(*placement);
    build_warmup();
    return;
  }
  replicas = std::make_unique<ReplicaPlacement>(pool->ring, pool->live, pc.replicas, servers);
  std::vector<SingleKeyRoute*> keys;
  std::vector<Route*> keys_as_routes, reads;
  for (size_t i = 0; i < replicas->replicas(); ++i) {
    copy_placements.push_back(std::make_unique<CopyPlacement>(*replicas, i));
    copy_keys.push_back(std::make_unique<KeyRoute>(*copy_placements.back()));
    copy_reads.push_back(std::make_unique<SplitRoute>(*copy_placements.back()));
    keys.push_back(copy_keys.back().get());
    keys_as_routes.push_back(copy_keys.back().get());
    reads.push_back(copy_reads.back().get());
  }
  key = std::make_unique<ReplicatedKeyRoute>(std::move(keys), reply_policy_of(pc.write_policy),
                                             pc.read_failover_on_miss, life.get(), replicas.get());
  multi_get = std::make_unique<ReplicatedGetRoute>(std::move(reads), std::move(keys_as_routes),
                                                   pc.read_failover_on_miss, pc.read_repair,
                                                   life.get(), replicas.get());
  build_warmup();
}

void PoolRoute::build_warmup() {
  const std::vector<PastRing>& rings = pool->pending ? with_future : pool->past;
  if (rings.empty() || !pool->guard) return;
  past = std::make_unique<PastPlacement>(rings, past_servers, replicas ? nullptr : placement.get(),
                                         replicas.get());
  own_key = std::move(key);
  own_multi_get = std::move(multi_get);
  key = std::make_unique<WarmKeyRoute>(*own_key, *past, *pool->guard, life.get());
  multi_get = std::make_unique<WarmGetRoute>(*own_multi_get, *past, *pool->guard, life.get());
}

}  // namespace memshard::proxy
