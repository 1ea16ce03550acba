// The proxy's counters as operators read them (admin/stats_render.h):
// twemproxy's JSON document, read by a strict JSON reader with twemproxy's
// field names checked, and the Prometheus text format, read by a checker
// of the exposition rules; in both, every pool and server counter is there
// with its value, and names that need escaping survive it.
#include "proxy/admin/stats_render.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <algorithm>
#include <ctime>
#include <string>
#include <vector>

#include "fake_stats_view.h"
#include "prometheus_text.h"
#include "proxy/support/stats.h"
#include "strict_json.h"
#include "version_text.h"

namespace memshard::proxy {
namespace {

using testing::alpha_fleet;
using testing::FakeStatsView;
using testing::Json;
using testing::memshard_version;
using testing::PromText;

// Every pool and server counter of `pool` set to a value of its own, so a
// test can tell which output field carries which counter.
uint64_t pool_value(size_t pool_index, size_t counter) {
  return 100'000 * (pool_index + 1) + 10 * counter + 1;
}
uint64_t server_value(size_t server_index, size_t counter) {
  return 7'000'000 + 1000 * server_index + 10 * counter + 3;
}

// Two pools, one named with every byte a format must escape, each with
// two servers whose every counter is distinct.
const std::vector<std::string> kPools = {"alpha", std::string("we\"ird\\pool\nname\x01")};
const std::vector<std::pair<std::string, std::string>> kServers = {  // name, identity
    {"one", "10.0.0.1:11211"},
    {"t\"w\\o", "/run/memcached \"2\".sock"}};

FakeStatsView distinct_counters() {
  FakeStatsView v;
  for (size_t p = 0; p < kPools.size(); ++p) {
    for (size_t i = 0; i < std::size(kPoolCounterNames); ++i)
      v.pool_counter(kPools[p], kPoolCounterNames[i], pool_value(p, i));
    for (size_t s = 0; s < kServers.size(); ++s) {
      for (size_t i = 0; i < std::size(kServerCounterNames); ++i) {
        v.server_counter(kPools[p], kServers[s].first, kServers[s].second, kServerCounterNames[i],
                         server_value(p * kServers.size() + s, i));
      }
    }
  }
  return v;
}

std::string host_name() {
  char buf[256] = {};
  gethostname(buf, sizeof(buf) - 1);
  return buf;
}

// --- twemproxy's JSON ------------------------------------------------------

Json twemproxy_json(const StatsView& v) {
  std::string out;
  render_twemproxy_json(v, out);
  EXPECT_TRUE(out.ends_with("}\n"));
  std::string error;
  std::optional<Json> doc = testing::StrictJsonReader::parse(out, error);
  EXPECT_TRUE(doc) << error << "\n" << out;
  return doc ? *doc : Json();
}

void expect_unique_names(const Json& object, const std::string& where) {
  for (const auto& [name, value] : object.members) {
    EXPECT_EQ(object.count(name), 1u) << where << ": '" << name << "' written twice";
  }
}

TEST(TwemproxyJson, TopLevelFieldsAreTwemproxysAndMemshards) {
  FakeStatsView v = alpha_fleet();
  v.connections = 9;
  const uint64_t before = static_cast<uint64_t>(time(nullptr));
  const Json doc = twemproxy_json(v);
  const uint64_t after = static_cast<uint64_t>(time(nullptr));
  ASSERT_EQ(doc.kind, Json::Kind::object);
  expect_unique_names(doc, "top level");
  ASSERT_NE(doc.find("service"), nullptr);
  EXPECT_EQ(doc.find("service")->text, "memshard");
  ASSERT_NE(doc.find("source"), nullptr);
  EXPECT_EQ(doc.find("source")->text, host_name());
  ASSERT_NE(doc.find("version"), nullptr);
  EXPECT_EQ(doc.find("version")->text, memshard_version());
  ASSERT_NE(doc.find("timestamp"), nullptr);
  EXPECT_GE(doc.find("timestamp")->as_unsigned(), before);
  EXPECT_LE(doc.find("timestamp")->as_unsigned(), after);
  const std::vector<std::pair<std::string, uint64_t>> figures = {
      {"uptime", v.uptime_seconds()},
      {"curr_connections", v.connections},
      {"threads", static_cast<uint64_t>(v.thread_count())},
      {"active_threads", static_cast<uint64_t>(v.active_threads())},
      {"config_generation", v.generation()},
      {"config_reloads", v.reloads()},
      {"config_reload_failures", v.reload_failures()},
      {"dns_address_changes", v.dns_address_changes()},
      {"dns_failures", v.dns_failures()}};
  for (const auto& [name, value] : figures) {
    const Json* f = doc.find(name);
    ASSERT_NE(f, nullptr) << name;
    ASSERT_TRUE(f->is_unsigned()) << name;
    EXPECT_EQ(f->as_unsigned(), value) << name;
  }
  for (const char* name :
       {"total_connections", "parked_connections", "moved_connections", "binary_connections",
        "binary_requests", "cmd_get", "cmd_set", "cmd_other"}) {
    ASSERT_NE(doc.find(name), nullptr) << name;
    EXPECT_TRUE(doc.find(name)->is_unsigned()) << name;
  }
  ASSERT_NE(doc.find("hotkeys"), nullptr);
  EXPECT_EQ(doc.find("hotkeys")->kind, Json::Kind::array) << "a list: twemproxy tools skip it";
}

TEST(TwemproxyJson, EveryPoolAndServerCounterUnderTwemproxysNames) {
  FakeStatsView v = distinct_counters();
  v.ejected[{kPools[0], kServers[1].second}] = 1'700'000'000'000'000;
  const Json doc = twemproxy_json(v);
  // The names twemproxy's exporters and scripts read (nc_stats.h).
  const std::vector<std::string> twemproxy_pool = {"client_eof",         "client_err",
                                                   "client_connections", "server_ejects",
                                                   "forward_error",      "fragments"};
  const std::vector<std::string> twemproxy_server = {
      "server_eof",        "server_err", "server_timedout", "server_connections",
      "server_ejected_at", "requests",   "request_bytes",   "responses",
      "response_bytes",    "in_queue",   "in_queue_bytes",  "out_queue",
      "out_queue_bytes"};
  for (size_t p = 0; p < kPools.size(); ++p) {
    SCOPED_TRACE("pool " + std::to_string(p));
    ASSERT_EQ(doc.count(kPools[p]), 1u) << "the pool's name, unescaped, is a member";
    const Json& pool = *doc.find(kPools[p]);
    ASSERT_EQ(pool.kind, Json::Kind::object);
    expect_unique_names(pool, kPools[p]);
    for (const std::string& name : twemproxy_pool) EXPECT_NE(pool.find(name), nullptr) << name;
    for (size_t i = 0; i < std::size(kPoolCounterNames); ++i) {
      const Json* f = pool.find(kPoolCounterNames[i]);
      ASSERT_NE(f, nullptr) << kPoolCounterNames[i];
      EXPECT_EQ(f->as_unsigned(), pool_value(p, i)) << kPoolCounterNames[i];
    }
    EXPECT_EQ(pool.find("server_ejects")->as_unsigned(), v.pool_ejections(kPools[p]));
    for (size_t s = 0; s < kServers.size(); ++s) {
      const Json* server = pool.find(kServers[s].first);
      ASSERT_NE(server, nullptr) << kServers[s].first;
      ASSERT_EQ(server->kind, Json::Kind::object);
      expect_unique_names(*server, kServers[s].first);
      for (const std::string& name : twemproxy_server) {
        EXPECT_NE(server->find(name), nullptr) << name;
      }
      for (size_t i = 0; i < std::size(kServerCounterNames); ++i) {
        const Json* f = server->find(kServerCounterNames[i]);
        ASSERT_NE(f, nullptr) << kServerCounterNames[i];
        EXPECT_EQ(f->as_unsigned(), server_value(p * kServers.size() + s, i))
            << kServerCounterNames[i];
      }
      EXPECT_EQ(server->find("server_ejected_at")->as_unsigned(),
                v.ejected_at(kPools[p], kServers[s].second));
      EXPECT_EQ(server->find("in_queue")->as_unsigned(), 0u) << "nothing waits in memshard";
    }
  }
}

TEST(TwemproxyJson, AMigrationAddsItsFiguresToItsPool) {
  FakeStatsView v = alpha_fleet();
  MigrationStatus m;
  m.running = true;
  m.seen = 40;
  m.moved = 30;
  m.pending = 10;
  v.migration["alpha"] = m;
  const Json doc = twemproxy_json(v);
  const Json* pool = doc.find("alpha");
  ASSERT_NE(pool, nullptr);
  ASSERT_NE(pool->find("migrate_running"), nullptr);
  EXPECT_EQ(pool->find("migrate_running")->as_unsigned(), 1u);
  EXPECT_EQ(pool->find("migrate_seen")->as_unsigned(), m.seen);
  EXPECT_EQ(pool->find("migrate_moved")->as_unsigned(), m.moved);
  EXPECT_EQ(pool->find("migrate_pending")->as_unsigned(), m.pending);
  const Json no_migration = twemproxy_json(alpha_fleet());
  EXPECT_EQ(no_migration.find("alpha")->find("migrate_running"), nullptr);
}

// --- Prometheus ------------------------------------------------------------

PromText prometheus(const StatsView& v) {
  std::string out;
  render_prometheus(v, out);
  PromText text = testing::read_prometheus_text(out);
  for (const std::string& e : text.errors) ADD_FAILURE() << e;
  return text;
}

TEST(Prometheus, WellFormedWithEverythingTheViewHolds) {
  FakeStatsView v = distinct_counters();
  v.ejected[{kPools[1], kServers[0].second}] = 1'700'000'000'000'000;
  v.migration[kPools[1]] = MigrationStatus{5, 4, 1, 0, 0, 30, true, {}, {}};
  v.migration[kPools[1]].walks.push_back({kServers[1].second, "h\"o\\st:1", "walking", 3, 2});
  v.switch_status[kPools[1]] = SwitchStatus{true, 1'900'000'000'000, 500, 7, 2, 0};
  v.certificates.push_back({kPools[1], "client", static_cast<int64_t>(time(nullptr)) + 3600});
  v.snap.pools[kPools[0]].latency.assign(kLatencyBuckets, 1);
  HotKeySummary hot;
  hot.total = 100;
  hot.counters.push_back({"k\"e\\y", kServers[1].first, 90, 0});
  v.snap.pools[kPools[1]].hot_keys.push_back(hot);
  const PromText text = prometheus(v);
  EXPECT_GT(text.families.size(), 40u);
  for (const testing::PromFamily& f : text.families) {
    EXPECT_TRUE(f.name.starts_with("memshard_")) << f.name;
    EXPECT_FALSE(f.type.empty()) << f.name;
    if (f.type == "counter") {
      EXPECT_TRUE(f.name.ends_with("_total")) << f.name;
    }
  }
}

// Each counter's own value shows up in exactly one sample of the pool
// (or server), whatever the metric is called.
TEST(Prometheus, EveryPoolCounterOfEveryPool) {
  const PromText text = prometheus(distinct_counters());
  for (size_t p = 0; p < kPools.size(); ++p) {
    for (size_t i = 0; i < std::size(kPoolCounterNames); ++i) {
      const double want = static_cast<double>(pool_value(p, i));
      size_t found = 0;
      for (const testing::PromFamily& f : text.families) {
        if (!f.name.starts_with("memshard_pool_")) continue;
        for (const testing::PromSample& s : f.samples) {
          auto pool = s.labels.find("pool");
          if (pool != s.labels.end() && pool->second == kPools[p] && s.value == want) ++found;
        }
      }
      EXPECT_EQ(found, 1u) << "pool " << p << " counter " << kPoolCounterNames[i];
    }
  }
}

TEST(Prometheus, EveryServerCounterOfEveryServer) {
  const PromText text = prometheus(distinct_counters());
  for (size_t p = 0; p < kPools.size(); ++p) {
    for (size_t s = 0; s < kServers.size(); ++s) {
      for (size_t i = 0; i < std::size(kServerCounterNames); ++i) {
        const double want = static_cast<double>(server_value(p * kServers.size() + s, i));
        const std::map<std::string, std::string> labels = {
            {"pool", kPools[p]}, {"server", kServers[s].first}, {"address", kServers[s].second}};
        size_t found = 0;
        for (const testing::PromFamily& f : text.families) {
          if (!f.name.starts_with("memshard_server_")) continue;
          for (const testing::PromSample& sample : text.find(f.name, labels)) {
            found += sample.value == want ? 1 : 0;
          }
        }
        EXPECT_EQ(found, 1u) << "pool " << p << " server " << s << " counter "
                             << kServerCounterNames[i];
      }
    }
  }
}

TEST(Prometheus, LabelValuesEscapeBackslashQuoteAndNewline) {
  FakeStatsView v = distinct_counters();
  std::string out;
  render_prometheus(v, out);
  // The escaped forms, as the format spells them.
  EXPECT_NE(out.find("pool=\"we\\\"ird\\\\pool\\nname\x01\""), std::string::npos);
  EXPECT_NE(out.find("server=\"t\\\"w\\\\o\""), std::string::npos);
  // Read back, they are the names again (checked by the reader's lookup).
  const PromText text = prometheus(v);
  const auto requests = text.find("memshard_pool_requests_total", {{"pool", kPools[1]}});
  ASSERT_EQ(requests.size(), 1u);
  const size_t requests_index = static_cast<size_t>(
      std::find(std::begin(kPoolCounterNames), std::end(kPoolCounterNames), "requests") -
      std::begin(kPoolCounterNames));
  EXPECT_EQ(requests[0].value, static_cast<double>(pool_value(1, requests_index)));
}

TEST(Prometheus, ProcessFigures) {
  FakeStatsView v = alpha_fleet();
  v.connections = 11;
  const PromText text = prometheus(v);
  auto one = [&](const std::string& name, const std::map<std::string, std::string>& labels = {}) {
    const auto found = text.find(name, labels);
    EXPECT_EQ(found.size(), 1u) << name;
    return found.empty() ? -1.0 : found[0].value;
  };
  EXPECT_EQ(one("memshard_uptime_seconds"), static_cast<double>(v.uptime_seconds()));
  EXPECT_EQ(one("memshard_config_generation"), static_cast<double>(v.generation()));
  EXPECT_EQ(one("memshard_config_reloads_total"), static_cast<double>(v.reloads()));
  EXPECT_EQ(one("memshard_config_reload_failures_total"), static_cast<double>(v.reload_failures()));
  EXPECT_EQ(one("memshard_connections"), static_cast<double>(v.connections));
  EXPECT_EQ(one("memshard_protocol_connections", {{"protocol", "text"}}) +
                one("memshard_protocol_connections", {{"protocol", "binary"}}),
            static_cast<double>(v.connections));
  EXPECT_EQ(one("memshard_active_workers"), static_cast<double>(v.active_threads()));
  EXPECT_EQ(one("memshard_max_connections"), static_cast<double>(v.max_connections()));
  EXPECT_EQ(one("memshard_client_errors_total"), static_cast<double>(v.client_errors));
  const std::vector<uint64_t> per_worker = v.worker_connections();
  ASSERT_EQ(text.find("memshard_worker_connections").size(), per_worker.size());
  for (size_t i = 0; i < per_worker.size(); ++i) {
    EXPECT_EQ(one("memshard_worker_connections", {{"worker", std::to_string(i)}}),
              static_cast<double>(per_worker[i]));
  }
}

TEST(Prometheus, LatencyIsACumulativeHistogram) {
  FakeStatsView v = alpha_fleet();
  std::vector<uint64_t>& latency = v.snap.pools["alpha"].latency;
  latency.assign(kLatencyBuckets, 0);
  for (size_t b = 0; b < kLatencyBuckets; ++b) latency[b] = 3 * b + (b % 2);
  v.snap.pools["alpha"].latency_sum_usec = 123'456'789;
  const PromText text = prometheus(v);
  const testing::PromFamily* f = text.family("memshard_request_duration_seconds");
  ASSERT_NE(f, nullptr);
  EXPECT_EQ(f->type, "histogram");
  const auto buckets = text.find("memshard_request_duration_seconds_bucket", {{"pool", "alpha"}});
  ASSERT_EQ(buckets.size(), kLatencyBuckets);
  uint64_t cumulative = 0;
  for (size_t b = 0; b < kLatencyBuckets; ++b) {
    cumulative += latency[b];
    EXPECT_EQ(buckets[b].value, static_cast<double>(cumulative)) << "bucket " << b;
    const std::string le = buckets[b].labels.at("le");
    if (b + 1 == kLatencyBuckets) {
      EXPECT_EQ(le, "+Inf");
    } else {
      EXPECT_DOUBLE_EQ(std::stod(le), static_cast<double>(kLatencyBucketsUsec[b]) / 1e6) << le;
    }
  }
  const auto count = text.find("memshard_request_duration_seconds_count", {{"pool", "alpha"}});
  ASSERT_EQ(count.size(), 1u);
  EXPECT_EQ(count[0].value, static_cast<double>(cumulative));
  const auto sum = text.find("memshard_request_duration_seconds_sum", {{"pool", "alpha"}});
  ASSERT_EQ(sum.size(), 1u);
  EXPECT_NEAR(sum[0].value, 123.456789, 1e-6);
}

TEST(TwemproxyJson, ASwitchAddsItsFiguresToItsPool) {
  FakeStatsView v = alpha_fleet();
  v.switch_status["alpha"] = SwitchStatus{true, 4'000'000'000'000, 3000, 9, 2, 1500};
  const Json doc = twemproxy_json(v);
  const Json* pool = doc.find("alpha");
  ASSERT_NE(pool, nullptr);
  ASSERT_NE(pool->find("switch_pending"), nullptr);
  EXPECT_EQ(pool->find("switch_pending")->as_unsigned(), 1u);
  EXPECT_EQ(pool->find("switch_at")->as_unsigned(), 4'000'000'000u);
  EXPECT_EQ(pool->find("switch_window_ms")->as_unsigned(), 3000u);
  EXPECT_EQ(pool->find("switch_generation")->as_unsigned(), 9u);
  EXPECT_EQ(pool->find("switches")->as_unsigned(), 2u);
  EXPECT_EQ(pool->find("switch_late_ms")->as_unsigned(), 1500u);
  // Its moment is decades ahead: the seconds left count down to it.
  EXPECT_GT(pool->find("switch_seconds_left")->as_unsigned(), 1'000'000u);
  const Json none = twemproxy_json(alpha_fleet());
  EXPECT_EQ(none.find("alpha")->find("switch_pending"), nullptr) << "no switch, no switch fields";
}

// A pool whose servers come from DNS (servers_srv): its figures in the
// twemproxy JSON, `stats` and /metrics, and none for the other pools.
TEST(StatsRender, DiscoveryFiguresInEveryFormat) {
  FakeStatsView v = alpha_fleet();
  DiscoveryStatus d;
  d.source = "servers_srv _memcache._tcp.mc.test";
  d.servers = 3;
  d.lookups = 40;
  d.failures = 2;
  d.changes = 5;
  d.held = 1;
  d.last_change_ms = 1'700'000'000'500;
  d.pending_since_ms = 1'700'000'100'000;
  d.pending = "joined: mc-3.mc.test:11211";
  v.discovery["alpha"] = d;
  const Json doc = twemproxy_json(v);
  const Json* pool = doc.find("alpha");
  ASSERT_NE(pool, nullptr);
  const std::vector<std::pair<std::string, uint64_t>> fields = {
      {"discovery_servers", 3},  {"discovery_lookups", 40},
      {"discovery_failures", 2}, {"discovery_changes", 5},
      {"discovery_held", 1},     {"discovery_last_change", 1'700'000'000},
      {"discovery_pending", 1},  {"discovery_pending_since", 1'700'000'100},
      {"discovery_failing", 0}};
  for (const auto& [name, value] : fields) {
    ASSERT_NE(pool->find(name), nullptr) << name;
    EXPECT_EQ(pool->find(name)->as_unsigned(), value) << name;
  }
  std::string stats;
  render_stat_pools(v, stats);
  EXPECT_NE(stats.find("STAT alpha:discovery servers_srv _memcache._tcp.mc.test\r\n"),
            std::string::npos)
      << stats;
  EXPECT_NE(stats.find("STAT alpha:discovery_changes 5\r\n"), std::string::npos) << stats;
  const PromText text = prometheus(v);
  const std::vector<std::pair<std::string, double>> metrics = {
      {"memshard_pool_discovery_servers", 3},
      {"memshard_pool_discovery_lookups_total", 40},
      {"memshard_pool_discovery_failures_total", 2},
      {"memshard_pool_discovery_changes_total", 5},
      {"memshard_pool_discovery_held_total", 1},
      {"memshard_pool_discovery_last_change_seconds", 1'700'000'000},
      {"memshard_pool_discovery_pending", 1}};
  for (const auto& [name, value] : metrics) {
    const auto s = text.find(name, {{"pool", "alpha"}});
    ASSERT_EQ(s.size(), 1u) << name;
    EXPECT_EQ(s[0].value, value) << name;
  }
  EXPECT_EQ(twemproxy_json(alpha_fleet()).find("alpha")->find("discovery_servers"), nullptr);
  EXPECT_TRUE(prometheus(alpha_fleet()).find("memshard_pool_discovery_servers").empty());
}

TEST(Prometheus, SwitchesAndWhoWalksWhichServer) {
  FakeStatsView v = alpha_fleet();
  v.switch_status["alpha"] = SwitchStatus{false, 1'700'000'000'250, 0, 4, 3, 2500};
  MigrationStatus m;
  m.running = true;
  m.instance = "here:1";
  m.walks.push_back({"10.0.0.1:11211", "here:1", "walking", 40, 10});
  m.walks.push_back({"10.0.0.2:11211", "there:2", "done", 70, 30});
  v.migration["alpha"] = m;
  const PromText text = prometheus(v);
  const std::vector<std::pair<std::string, double>> gauges = {
      {"memshard_pool_switch_pending", 0},    {"memshard_pool_switch_at_seconds", 1'700'000'000},
      {"memshard_pool_switch_generation", 4}, {"memshard_pool_switch_seconds_left", 0},
      {"memshard_pool_switches_total", 3},    {"memshard_pool_switch_late_milliseconds", 2500}};
  for (const auto& [name, value] : gauges) {
    const auto s = text.find(name, {{"pool", "alpha"}});
    ASSERT_EQ(s.size(), 1u) << name;
    EXPECT_EQ(s[0].value, value) << name;
  }
  for (const MigrationWalk& w : m.walks) {
    for (const auto& [kind, value] : {std::pair<std::string, uint64_t>{"seen", w.seen},
                                      std::pair<std::string, uint64_t>{"moved", w.moved}}) {
      const auto s = text.find("memshard_pool_migrate_walk_keys", {{"pool", "alpha"},
                                                                   {"server", w.server},
                                                                   {"walker", w.walker},
                                                                   {"state", w.state},
                                                                   {"kind", kind}});
      ASSERT_EQ(s.size(), 1u) << w.server << " " << kind;
      EXPECT_EQ(s[0].value, static_cast<double>(value)) << w.server << " " << kind;
    }
  }
  const PromText none = prometheus(alpha_fleet());
  EXPECT_TRUE(none.find("memshard_pool_switch_pending").empty());
  EXPECT_TRUE(none.find("memshard_pool_migrate_walk_keys").empty());
}

TEST(Prometheus, EjectionsMigrationAndCertificates) {
  FakeStatsView v = alpha_fleet();
  v.server_counter("alpha", "10.0.0.3:11211", "10.0.0.3:11211", "requests", 1);
  v.migration["alpha"] = MigrationStatus{50, 20, 10, 5, 15, 40, true, {}, {}};
  const int64_t not_after = static_cast<int64_t>(time(nullptr)) + 86'400;
  v.certificates.push_back({"alpha", "server", not_after});
  const int64_t before = static_cast<int64_t>(time(nullptr));
  const PromText text = prometheus(v);
  const int64_t after = static_cast<int64_t>(time(nullptr));
  const StatsSnapshot snap = v.snapshot();
  for (const auto& [name, s] : snap.pools.at("alpha").servers) {
    const auto ejected =
        text.find("memshard_server_ejected", {{"pool", "alpha"}, {"server", name}});
    ASSERT_EQ(ejected.size(), 1u) << name;
    EXPECT_EQ(ejected[0].value, v.ejected_at("alpha", s.identity) != 0 ? 1.0 : 0.0) << name;
  }
  EXPECT_EQ(text.find("memshard_server_ejected", {{"server", "10.0.0.3:11211"}})[0].value, 1.0);
  EXPECT_EQ(text.find("memshard_pool_server_ejections_total", {{"pool", "alpha"}})[0].value,
            static_cast<double>(v.pool_ejections("alpha")));
  const MigrationStatus& m = v.migration["alpha"];
  const std::vector<std::pair<std::string, uint64_t>> states = {{"seen", m.seen},
                                                                {"moved", m.moved},
                                                                {"skipped", m.skipped},
                                                                {"failed", m.failed},
                                                                {"pending", m.pending}};
  EXPECT_EQ(text.find("memshard_pool_migrate_keys").size(), states.size());
  for (const auto& [state, value] : states) {
    const auto s = text.find("memshard_pool_migrate_keys", {{"pool", "alpha"}, {"state", state}});
    ASSERT_EQ(s.size(), 1u) << state;
    EXPECT_EQ(s[0].value, static_cast<double>(value)) << state;
  }
  EXPECT_EQ(text.find("memshard_pool_migrate_seconds_left")[0].value,
            static_cast<double>(m.seconds_left));
  EXPECT_EQ(text.find("memshard_pool_migrate_running")[0].value, 1.0);
  const auto expiry =
      text.find("memshard_tls_certificate_expiry_seconds", {{"pool", "alpha"}, {"side", "server"}});
  ASSERT_EQ(expiry.size(), 1u);
  EXPECT_LE(expiry[0].value, static_cast<double>(not_after - before));
  EXPECT_GE(expiry[0].value, static_cast<double>(not_after - after));
}

}  // namespace
}  // namespace memshard::proxy
