#include "proxy/runtime/worker_routes.h"

#include <algorithm>
#include <utility>

namespace memshard::proxy {

WorkerRoutes::~WorkerRoutes() {
  clear();
}

void WorkerRoutes::clear() {
  retired_.clear();
  routes_.clear();
  backends_.clear();
  draining_.clear();
}

std::shared_ptr<RouteStats> WorkerRoutes::route_stats_for(const std::string& pool,
                                                          const std::string& route) {
  std::weak_ptr<RouteStats>& weak = route_stats_[{pool, route}];
  std::shared_ptr<RouteStats> stats = weak.lock();
  if (!stats) {
    stats = std::make_shared<RouteStats>();
    weak = stats;
  }
  return stats;
}

std::shared_ptr<PoolStats> WorkerRoutes::pool_stats_for(const std::string& pool) {
  std::shared_ptr<PoolStats> stats = pool_stats_[pool].lock();
  if (!stats) {
    stats = std::make_shared<PoolStats>();
    pool_stats_[pool] = stats;
  }
  return stats;
}

void WorkerRoutes::apply(std::shared_ptr<const Topology> topology) {
  std::unordered_map<std::string, PoolRoute> routes;
  std::unordered_map<std::string, std::unique_ptr<BackendServer>> backends;
  std::lock_guard<std::mutex> stats_lock(stats_mu_);
  // Built in an order where what a pool's routes lead to is built before
  // them: gutter pools (which have none of their own), the other pools
  // with servers, then the routing pools (whose routes do not nest).
  std::vector<const Pool*> order;
  for (int pass = 0; pass < 3; ++pass) {
    for (const Pool& pool : topology->pools) {
      const int rank = pool.config.routes_keys() ? 2 : pool.config.gutter.empty() ? 0 : 1;
      if (rank == pass) order.push_back(&pool);
    }
  }
  const auto entry_of = [&](const std::string& name) { return routes.at(name).entry(); };
  for (const Pool* p : order) {
    const Pool& pool = *p;
    PoolRoute& route = routes[pool.config.name];
    route.pool = &pool;
    route.stats = pool_stats_for(pool.config.name);
    if (pool.config.routes_keys()) {
      route.build_routing(entry_of, [&](const std::string& name) {
        return route_stats_for(pool.config.name, name);
      });
      continue;
    }
    if (!pool.config.gutter.empty()) route.gutter_pool = entry_of(pool.config.gutter);
    ServerSettings settings{pool.config.name,
                            pool.config.timeout_ms.value_or(-1),
                            pool.config.server_connections,
                            pool.config.auto_eject_hosts ? pool.config.server_failure_limit : 0,
                            pool.config.item_size_max,
                            pool.server_tls,
                            pool.config.server_queue_limit,
                            size_t{pool.config.repair_record_mb} << 20};
    // The worker's backend for a server of this pool: kept from the last
    // topology when it had one (same connections), else new.
    const auto backend_for = [&](const ServerInfo& server) -> BackendServer* {
      std::string key = pool.config.name + '\0' + server.identity;
      if (auto again = backends.find(key); again != backends.end()) return again->second.get();
      auto it = backends_.find(key);
      std::unique_ptr<BackendServer> backend;
      if (it != backends_.end()) {
        backend = std::move(it->second);
        backends_.erase(it);
        backend->update_settings(settings, route.stats);
        backend->update_addresses(server.addresses);
      } else {
        auto stats = std::make_shared<ServerStats>();
        server_stats_[ServerKey{pool.config.name, server.stats_name, server.identity}] = stats;
        backend = std::make_unique<BackendServer>(context_, server.identity, server.addresses,
                                                  settings, std::move(stats), route.stats);
      }
      BackendServer* b = backend.get();
      backends.emplace(std::move(key), std::move(backend));
      return b;
    };
    for (const ServerInfo& server : pool.servers) route.backends.push_back(backend_for(server));
    // reload_warmup: the servers of past configs stay connected while
    // their window lasts, those the current config dropped included.
    for (const PastRing& past : pool.past) {
      std::vector<Server*>& servers = route.past_servers.emplace_back();
      for (const ServerInfo& server : past.servers) servers.push_back(backend_for(server));
    }
    // reload_switch_at: the servers of the placement that waits are
    // connected before its moment (its writes delete keys there).
    if (pool.pending) {
      for (const ServerInfo& server : pool.pending->servers) {
        route.next_backends.push_back(backend_for(server));
      }
    }
    route.build_routes();
  }
  // Servers that left: their connections close once they owe nothing.
  for (auto& [key, backend] : backends_) {
    if (backend->idle()) continue;
    draining_.push_back(std::move(backend));
  }
  backends_ = std::move(backends);
  const bool holding =
      std::any_of(routes_.begin(), routes_.end(), [](const auto& r) { return r.second.holding(); });
  if (holding) retired_.push_back(Retired{topology_, std::move(routes_)});
  routes_ = std::move(routes);
  ++epoch_;
  topology_ = std::move(topology);
}

const PoolRoute* WorkerRoutes::route(const std::string& pool_name) const {
  auto it = routes_.find(pool_name);
  return it == routes_.end() ? nullptr : &it->second;
}

void WorkerRoutes::reap() {
  std::erase_if(retired_, [](const Retired& r) {
    return std::all_of(r.routes.begin(), r.routes.end(),
                       [](const auto& e) { return !e.second.holding(); });
  });
  if (retired_.empty()) {
    std::erase_if(draining_, [](const auto& b) { return b->idle(); });
  }
  std::lock_guard<std::mutex> lock(stats_mu_);
  std::erase_if(pool_stats_, [](const auto& e) { return e.second.expired(); });
  std::erase_if(server_stats_, [](const auto& e) { return e.second.expired(); });
  std::erase_if(route_stats_, [](const auto& e) { return e.second.expired(); });
}

void WorkerRoutes::housekeeping(uint64_t now_usec) {
  for (auto& [key, backend] : backends_) backend->close_retired();
  for (auto& [name, route] : routes_) route.stats->hot_keys.tick_if_due(now_usec);
}

void WorkerRoutes::collect(StatsSnapshot& out) const {
  std::lock_guard<std::mutex> lock(stats_mu_);
  for (const auto& [name, weak] : pool_stats_) {
    std::shared_ptr<PoolStats> ps = weak.lock();
    if (!ps) continue;
    StatsSnapshot::PoolTotals& t = out.pools[name];
    size_t i = 0;
    ps->for_each([&](std::string_view, const Counter& c) {
      if (t.counters.size() <= i) t.counters.resize(i + 1, 0);
      t.counters[i++] += c.get();
    });
    t.latency.resize(kLatencyBuckets, 0);
    for (size_t b = 0; b < kLatencyBuckets; ++b) t.latency[b] += ps->latency_bucket[b].get();
    t.latency_sum_usec += ps->latency_sum_usec.get();
    t.hot_keys.push_back(ps->hot_keys.summary());
    t.hot_key_share = ps->hot_keys.threshold();
  }
  for (const auto& [key, weak] : route_stats_) {
    std::shared_ptr<RouteStats> rs = weak.lock();
    if (!rs) continue;
    std::vector<uint64_t>& t = out.pools[key.first].routes[key.second];
    size_t i = 0;
    rs->for_each([&](std::string_view, const Counter& c) {
      if (t.size() <= i) t.resize(i + 1, 0);
      t[i++] += c.get();
    });
  }
  for (const auto& [key, weak] : server_stats_) {
    std::shared_ptr<ServerStats> ss = weak.lock();
    if (!ss) continue;
    StatsSnapshot::Server& t = out.pools[key.pool].servers[key.stats_name];
    t.identity = key.identity;
    size_t i = 0;
    ss->for_each([&](std::string_view, const Counter& c) {
      if (t.counters.size() <= i) t.counters.resize(i + 1, 0);
      t.counters[i++] += c.get();
    });
  }
}

uint64_t WorkerRoutes::requests() const {
  std::lock_guard<std::mutex> lock(stats_mu_);
  uint64_t n = 0;
  for (const auto& [name, weak] : pool_stats_) {
    if (std::shared_ptr<PoolStats> ps = weak.lock()) n += ps->requests.get();
  }
  return n;
}

}  // namespace memshard::proxy
