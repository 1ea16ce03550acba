// /status.json from a fake view: every figure the page shows is where the
// page reads it, servers of the config and draining ones are listed, and
// the reload history and the scheduled-switch slot are there. Read back
// with yaml-cpp (JSON is YAML), so the document must parse.
#include "proxy/admin/status_json.h"

#include <gtest/gtest.h>
#include <yaml-cpp/yaml.h>

#include <ctime>
#include <string>

#include "fake_stats_view.h"

namespace memshard::proxy {
namespace {

using testing::alpha_fleet;
using testing::FakeStatsView;

YAML::Node render(const FakeStatsView& v, bool hot_keys = true) {
  std::string out;
  render_status_json(v, hot_keys, out);
  EXPECT_TRUE(out.ends_with("}\n"));
  return YAML::Load(out);
}

YAML::Node server(const YAML::Node& pool, const std::string& address) {
  for (const YAML::Node& s : pool["servers"]) {
    if (s["address"].as<std::string>() == address) return s;
  }
  ADD_FAILURE() << "no server " << address;
  return YAML::Node();
}

TEST(StatusJson, ProcessAndConfigFigures) {
  YAML::Node doc = render(alpha_fleet());
  EXPECT_EQ(doc["service"].as<std::string>(), "memshard");
  EXPECT_EQ(doc["uptime"].as<uint64_t>(), 42u);
  EXPECT_GT(doc["clock_ms"].as<uint64_t>(), 0u);
  EXPECT_EQ(doc["process"]["connections"].as<uint64_t>(), 3u);
  EXPECT_EQ(doc["process"]["threads"].as<uint64_t>(), 2u);
  const YAML::Node config = doc["config"];
  EXPECT_EQ(config["generation"].as<uint64_t>(), 2u);
  EXPECT_EQ(config["reloads"].as<uint64_t>(), 1u);
  EXPECT_EQ(config["reload_failures"].as<uint64_t>(), 1u);
  ASSERT_TRUE(config["pending_switch"]);
  EXPECT_TRUE(config["pending_switch"].IsNull());
  ASSERT_EQ(config["history"].size(), 3u);
  EXPECT_EQ(config["history"][0]["outcome"].as<std::string>(), "started");
  EXPECT_EQ(config["history"][1]["outcome"].as<std::string>(), "applied");
  EXPECT_DOUBLE_EQ(config["history"][1]["moved"]["alpha"].as<double>(), 0.25);
  EXPECT_EQ(config["history"][2]["outcome"].as<std::string>(), "refused");
  EXPECT_EQ(config["history"][2]["reason"].as<std::string>(), "memshard.yml:3: listen: bad port");
  EXPECT_EQ(config["history"][2]["at"].as<int64_t>(), 200);
  EXPECT_EQ(doc["latency_bounds_usec"].size() + 1, kLatencyBuckets);
}

TEST(StatusJson, PoolFigures) {
  YAML::Node doc = render(alpha_fleet());
  ASSERT_EQ(doc["pools"].size(), 1u);
  const YAML::Node p = doc["pools"][0];
  EXPECT_EQ(p["name"].as<std::string>(), "alpha");
  EXPECT_TRUE(p["in_config"].as<bool>());
  EXPECT_EQ(p["listen"].as<std::string>(), "127.0.0.1:22122");
  EXPECT_TRUE(p["auto_eject_hosts"].as<bool>());
  EXPECT_EQ(p["requests"].as<uint64_t>(), 1000u);
  EXPECT_EQ(p["forward_errors"].as<uint64_t>(), 7u);
  EXPECT_EQ(p["client_connections"].as<uint64_t>(), 3u);
  EXPECT_EQ(p["hits"].as<uint64_t>(), 30u);
  EXPECT_EQ(p["misses"].as<uint64_t>(), 10u);
  ASSERT_EQ(p["latency"].size(), kLatencyBuckets);
  EXPECT_EQ(p["latency"][2].as<uint64_t>(), 10u);
  EXPECT_TRUE(p["migration"].IsNull());
  EXPECT_EQ(p["warmup"]["windows"].as<uint64_t>(), 0u);
}

TEST(StatusJson, ARoutingPoolsRoutesWithTheirCounters) {
  FakeStatsView v = alpha_fleet();
  std::vector<uint64_t> counters(std::size(kRouteCounterNames), 0);
  counters[0] = 12;  // requests
  counters[1] = 5;   // hits
  counters[4] = 9;   // shadow_sent
  v.snap.pools["alpha"].routes["sess:"] = counters;
  v.snap.pools["alpha"].routes["(default)"] =
      std::vector<uint64_t>(std::size(kRouteCounterNames), 1);
  YAML::Node routes = render(v)["pools"][0]["routes"];
  ASSERT_EQ(routes.size(), 2u);
  EXPECT_EQ(routes[0]["name"].as<std::string>(), "(default)");
  EXPECT_EQ(routes[1]["name"].as<std::string>(), "sess:");
  EXPECT_EQ(routes[1]["requests"].as<uint64_t>(), 12u);
  EXPECT_EQ(routes[1]["hits"].as<uint64_t>(), 5u);
  EXPECT_EQ(routes[1]["shadow_sent"].as<uint64_t>(), 9u);
  for (std::string_view c : kRouteCounterNames) {
    EXPECT_TRUE(routes[0][std::string(c)]) << c;
  }
  // A pool with servers has none.
  EXPECT_EQ(render(alpha_fleet())["pools"][0]["routes"].size(), 0u);
}

TEST(StatusJson, APendingSwitchPerPool) {
  FakeStatsView v = alpha_fleet();
  SwitchStatus waiting;
  waiting.pending = true;
  waiting.at_unix_ms = (static_cast<int64_t>(time(nullptr)) + 3600) * 1000;
  waiting.window_ms = 5000;
  waiting.generation = 3;
  SwitchStatus done;  // switched earlier: not pending
  done.switches = 1;
  v.switch_status["alpha"] = waiting;
  v.switch_status["beta"] = done;
  const YAML::Node sw = render(v)["config"]["pending_switch"];
  ASSERT_TRUE(sw.IsMap());
  EXPECT_EQ(sw.size(), 1u);
  EXPECT_EQ(sw["alpha"]["at"].as<int64_t>(), waiting.at_unix_ms / 1000);
  EXPECT_EQ(sw["alpha"]["window_ms"].as<uint64_t>(), 5000u);
  EXPECT_EQ(sw["alpha"]["generation"].as<uint64_t>(), 3u);
  EXPECT_GE(sw["alpha"]["seconds_left"].as<int64_t>(), 3600);
  EXPECT_LE(sw["alpha"]["seconds_left"].as<int64_t>(), 3606);
}

TEST(StatusJson, ServersOfTheConfigThenDrainingOnes) {
  YAML::Node doc = render(alpha_fleet());
  const YAML::Node p = doc["pools"][0];
  ASSERT_EQ(p["servers"].size(), 4u);
  EXPECT_EQ(p["servers"][0]["address"].as<std::string>(), "10.0.0.1:11211");
  const YAML::Node beta = server(p, "10.0.0.2:11211");
  EXPECT_EQ(beta["name"].as<std::string>(), "beta");
  EXPECT_EQ(beta["state"].as<std::string>(), "up");
  EXPECT_EQ(beta["weight"].as<uint64_t>(), 2u);
  EXPECT_DOUBLE_EQ(beta["share"].as<double>(), 0.75);
  EXPECT_EQ(beta["requests"].as<uint64_t>(), 600u);
  EXPECT_EQ(beta["errors"].as<uint64_t>(), 5u);
  EXPECT_EQ(beta["requests_shed"].as<uint64_t>(), 0u);
  const YAML::Node out = server(p, "10.0.0.3:11211");
  EXPECT_EQ(out["state"].as<std::string>(), "ejected");
  EXPECT_EQ(out["ejected_at"].as<uint64_t>(), 1'700'000'000'000'000u);
  EXPECT_EQ(out["requests"].as<uint64_t>(), 0u);
  const YAML::Node gone = p["servers"][3];
  EXPECT_EQ(gone["address"].as<std::string>(), "10.0.0.9:11211");
  EXPECT_EQ(gone["state"].as<std::string>(), "draining");
  EXPECT_EQ(gone["requests"].as<uint64_t>(), 9u);
  EXPECT_DOUBLE_EQ(gone["share"].as<double>(), 0.0);
}

TEST(StatusJson, RequestsShedPerServer) {
  FakeStatsView v = alpha_fleet();
  v.server_counter("alpha", "beta", "10.0.0.2:11211", "requests_shed", 42);
  const YAML::Node p = render(v)["pools"][0];
  EXPECT_EQ(server(p, "10.0.0.2:11211")["requests_shed"].as<uint64_t>(), 42u);
  // Not among the errors: a shed request never reached the server.
  EXPECT_EQ(server(p, "10.0.0.2:11211")["errors"].as<uint64_t>(), 5u);
  EXPECT_EQ(server(p, "10.0.0.1:11211")["requests_shed"].as<uint64_t>(), 0u);
}

TEST(StatusJson, HotKeysOnlyWhenAllowed) {
  YAML::Node shown = render(alpha_fleet(), true);
  EXPECT_FALSE(shown["hot_keys_hidden"].as<bool>());
  ASSERT_EQ(shown["pools"][0]["hot_keys"].size(), 1u);
  EXPECT_EQ(shown["pools"][0]["hot_keys"][0]["key"].as<std::string>(), "user:%22hot%22");
  YAML::Node hidden = render(alpha_fleet(), false);
  EXPECT_TRUE(hidden["hot_keys_hidden"].as<bool>());
  EXPECT_TRUE(hidden["pools"][0]["hot_keys"].IsNull());
}

TEST(StatusJson, MigrationWarmupAndCertificates) {
  FakeStatsView v = alpha_fleet();
  v.layouts[0].warmup_windows = 1;
  v.layouts[0].warmup_seconds_left = 30;
  v.migration["alpha"] = MigrationStatus{100, 60, 5, 1, 34, 30, true, {}, {}};
  v.certificates.push_back({"alpha", "client", 0});
  YAML::Node doc = render(v);
  const YAML::Node p = doc["pools"][0];
  EXPECT_EQ(p["warmup"]["windows"].as<uint64_t>(), 1u);
  EXPECT_EQ(p["warmup"]["seconds_left"].as<uint64_t>(), 30u);
  EXPECT_TRUE(p["migration"]["running"].as<bool>());
  EXPECT_EQ(p["migration"]["moved"].as<uint64_t>(), 60u);
  EXPECT_EQ(p["migration"]["failed"].as<uint64_t>(), 1u);
  ASSERT_EQ(doc["tls_certificates"].size(), 1u);
  EXPECT_LT(doc["tls_certificates"][0]["seconds_left"].as<int64_t>(), 0);
}

TEST(StatusJson, APoolAReloadRemovedIsListedWhileItsClientsFinish) {
  FakeStatsView v = alpha_fleet();
  v.pool_counter("old", "client_connections", 2);
  YAML::Node doc = render(v);
  ASSERT_EQ(doc["pools"].size(), 2u);
  EXPECT_EQ(doc["pools"][1]["name"].as<std::string>(), "old");
  EXPECT_FALSE(doc["pools"][1]["in_config"].as<bool>());
  EXPECT_EQ(doc["pools"][1]["client_connections"].as<uint64_t>(), 2u);
}

TEST(StatusJson, NamesAreEscaped) {
  FakeStatsView v;
  PoolLayout l;
  l.name = "we\"ird\\pool\n";
  v.layouts.push_back(l);
  YAML::Node doc = render(v);
  EXPECT_EQ(doc["pools"][0]["name"].as<std::string>(), "we\"ird\\pool\n");
}

}  // namespace
}  // namespace memshard::proxy
