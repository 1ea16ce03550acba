// A StatsView whose every figure the test sets: the admin layer's renderers
// and the stats port's answers, tested without workers or a proxy.
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "proxy/admin/stats_view.h"
#include "proxy/support/stats.h"

namespace memshard::proxy::testing {

class FakeStatsView final : public StatsView {
 public:
  uint64_t uptime_seconds() const override { return uptime; }
  int thread_count() const override { return 2; }
  int active_threads() const override { return 1; }
  std::vector<uint64_t> worker_connections() const override { return {connections, 0}; }
  StatsSnapshot snapshot() const override { return snap; }
  std::vector<std::pair<std::string_view, uint64_t>> counter_totals() const override {
    return {{"curr_connections", connections}, {"client_errors", client_errors}};
  }
  uint64_t generation() const override { return generation_value; }
  uint64_t reloads() const override { return reloads_value; }
  uint64_t reload_failures() const override { return reload_failures_value; }
  uint64_t rejected_connections() const override { return 0; }
  uint64_t max_connections() const override { return 1000; }
  uint64_t dns_address_changes() const override { return 0; }
  uint64_t dns_failures() const override { return 0; }
  uint64_t ejections() const override { return ejected.size(); }
  uint64_t readmissions() const override { return 0; }
  uint64_t pool_ejections(const std::string&) const override { return ejected.size(); }
  uint64_t ejected_at(const std::string& pool, const std::string& identity) const override {
    auto it = ejected.find({pool, identity});
    return it == ejected.end() ? 0 : it->second;
  }
  std::map<std::string, MigrationStatus> migrations() const override { return migration; }
  std::map<std::string, SwitchStatus> switches() const override { return switch_status; }
  std::map<std::string, DiscoveryStatus> discoveries() const override { return discovery; }
  std::vector<TlsCertificate> tls_certificates() const override { return certificates; }
  std::vector<PoolLayout> pool_layouts() const override { return layouts; }
  std::vector<ReloadRecord> reload_history() const override { return history; }

  // Sets one counter of a pool's totals, by name.
  void pool_counter(const std::string& pool, std::string_view name, uint64_t value) {
    auto& counters = snap.pools[pool].counters;
    counters.resize(std::size(kPoolCounterNames), 0);
    for (size_t i = 0; i < std::size(kPoolCounterNames); ++i) {
      if (kPoolCounterNames[i] == name) counters[i] = value;
    }
  }
  // Sets one counter of a server (by stats name) of a pool.
  void server_counter(const std::string& pool, const std::string& name, const std::string& identity,
                      std::string_view counter, uint64_t value) {
    StatsSnapshot::Server& s = snap.pools[pool].servers[name];
    s.identity = identity;
    s.counters.resize(std::size(kServerCounterNames), 0);
    for (size_t i = 0; i < std::size(kServerCounterNames); ++i) {
      if (kServerCounterNames[i] == counter) s.counters[i] = value;
    }
  }

  uint64_t uptime = 42, connections = 3, client_errors = 0;
  uint64_t generation_value = 1, reloads_value = 0, reload_failures_value = 0;
  StatsSnapshot snap;
  std::map<std::pair<std::string, std::string>, uint64_t> ejected;
  std::map<std::string, MigrationStatus> migration;
  std::map<std::string, SwitchStatus> switch_status;
  std::map<std::string, DiscoveryStatus> discovery;
  std::vector<TlsCertificate> certificates;
  std::vector<PoolLayout> layouts;
  std::vector<ReloadRecord> history;
};

// A pool "alpha" on 127.0.0.1:22122 of three servers, the third ejected,
// with counters on each, a hot key, and a refused reload after the start.
inline FakeStatsView alpha_fleet() {
  FakeStatsView v;
  PoolLayout l;
  l.name = "alpha";
  l.listen = "127.0.0.1:22122";
  l.distribution = "ketama";
  l.hash = "fnv1a_64";
  l.auto_eject_hosts = true;
  l.servers = {{"10.0.0.1:11211", "10.0.0.1:11211", 1, 0.25, 0.25, ServerState::up},
               {"10.0.0.2:11211", "beta", 2, 0.75, 0.75, ServerState::up},
               {"10.0.0.3:11211", "10.0.0.3:11211", 1, 0.0, 0.0, ServerState::ejected}};
  v.layouts.push_back(l);
  v.ejected[{"alpha", "10.0.0.3:11211"}] = 1'700'000'000'000'000;
  v.pool_counter("alpha", "requests", 1000);
  v.pool_counter("alpha", "forward_error", 7);
  v.pool_counter("alpha", "client_connections", 3);
  v.snap.pools["alpha"].latency.assign(kLatencyBuckets, 0);
  v.snap.pools["alpha"].latency[2] = 10;
  v.server_counter("alpha", "10.0.0.1:11211", "10.0.0.1:11211", "requests", 400);
  v.server_counter("alpha", "10.0.0.1:11211", "10.0.0.1:11211", "replies_hit", 30);
  v.server_counter("alpha", "beta", "10.0.0.2:11211", "requests", 600);
  v.server_counter("alpha", "beta", "10.0.0.2:11211", "replies_miss", 10);
  v.server_counter("alpha", "beta", "10.0.0.2:11211", "server_err", 5);
  // A server a reload removed, still finishing: counters, no layout.
  v.server_counter("alpha", "10.0.0.9:11211", "10.0.0.9:11211", "requests", 9);
  HotKeySummary hot;
  hot.total = 100;
  hot.counters.push_back({"user:\"hot\"", "beta", 90, 0});
  v.snap.pools["alpha"].hot_keys.push_back(hot);
  v.snap.pools["alpha"].hot_key_share = 0.01;
  v.history.push_back({100, 1, ReloadRecord::Outcome::started, "", {}});
  v.history.push_back({160, 2, ReloadRecord::Outcome::applied, "", {{"alpha", 0.25}}});
  v.history.push_back(
      {200, 2, ReloadRecord::Outcome::refused, "memshard.yml:3: listen: bad port", {}});
  v.generation_value = 2;
  v.reloads_value = 1;
  v.reload_failures_value = 1;
  return v;
}

}  // namespace memshard::proxy::testing
