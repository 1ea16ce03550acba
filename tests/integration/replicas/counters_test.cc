// The replicated pool's counters, in the JSON stats (per pool:
// replica_writes, replica_write_failures, read_failovers, read_repairs)
// and /metrics (memshard_pool_<name>_total{pool=...}), moving by exactly
// what the traffic did: a set sends one replica write with two copies, a
// read that misses on the first copy and hits on the second is a failover
// and (read_repair) a repair, a write whose second copy is down is a
// replica write failure.
#include <gtest/gtest.h>

#include <signal.h>

#include "replica_util.h"

namespace memshard::testing::replicas {
namespace {

const char* const kCounters[] = {"replica_writes", "replica_write_failures", "read_failovers",
                                 "read_repairs"};

struct Counts {
  std::map<std::string, uint64_t> json;
  std::map<std::string, double> metrics;
  // memshard_server_<name>_total summed over the pool's servers: each
  // event is counted on the one server it happened to.
  std::map<std::string, double> servers;
};

Counts counts(uint16_t stats_port) {
  Counts c;
  for (const char* name : kCounters) {
    std::optional<uint64_t> j = json_pool_counter(stats_port, name);
    EXPECT_TRUE(j.has_value()) << "JSON stats have no main." << name;
    c.json[name] = j.value_or(0);
    std::string metric = std::string("memshard_pool_") + name + "_total";
    std::optional<double> m = metric_pool_value(stats_port, metric);
    EXPECT_TRUE(m.has_value()) << "/metrics has no " << metric << "{pool=\"main\"}";
    c.metrics[name] = m.value_or(-1);
  }
  std::vector<ops::Sample> samples;
  EXPECT_TRUE(ops::fetch_metrics(stats_port, samples));
  for (const char* name : kCounters) {
    const std::string metric = std::string("memshard_server_") + name + "_total";
    double sum = 0;
    for (const ops::Sample& s : samples) {
      if (s.name == metric && s.labels.count("pool") && s.labels.at("pool") == "main") {
        sum += s.value;
      }
    }
    c.servers[name] = sum;
  }
  return c;
}

// Waits until every counter has exactly the wanted value in both the JSON
// and /metrics; the counts last seen otherwise.
::testing::AssertionResult counters_are(uint16_t stats_port,
                                        const std::map<std::string, uint64_t>& want) {
  Counts last;
  bool ok = eventually(
      [&] {
        last = counts(stats_port);
        for (const char* name : kCounters) {
          if (last.json[name] != want.at(name)) return false;
          if (last.metrics[name] != static_cast<double>(want.at(name))) return false;
          if (last.servers[name] != static_cast<double>(want.at(name))) return false;
        }
        return true;
      },
      5s);
  if (ok) return ::testing::AssertionSuccess();
  auto f = ::testing::AssertionFailure();
  for (const char* name : kCounters) {
    f << name << ": json " << last.json[name] << ", metrics " << last.metrics[name]
      << ", per server " << last.servers[name] << ", wanted " << want.at(name) << "\n";
  }
  return f;
}

TEST(ReplicaCounters, MoveWithTheTraffic) {
  Fleet fleet(3);
  std::vector<uint16_t> ports = {fleet[0].port(), fleet[1].port(), fleet[2].port()};
  Proxy proxy([&](uint16_t listen) {
    return pool_config(listen, ports,
                       {"replicas: 2", "timeout: 500", "read_failover_on_miss: true",
                        "read_repair: true"});
  });
  Copies copies(proxy.config_text(), 2);
  std::map<std::string, uint64_t> want = {
      {"replica_writes", 0}, {"replica_write_failures", 0}, {"read_failovers", 0},
      {"read_repairs", 0}};
  ASSERT_TRUE(counters_are(proxy.stats_port(), want));

  Client c(proxy.port());
  std::vector<std::string> keys = random_keys("user-counted", 50);
  for (const std::string& k : keys) ASSERT_EQ(c.set(k, value_of(k)), "STORED\r\n");
  want["replica_writes"] = 50;
  EXPECT_TRUE(counters_are(proxy.stats_port(), want)) << "after 50 sets";

  // Reads that hit on the first copy move nothing.
  for (const std::string& k : keys) ASSERT_EQ(c.get(k), value_of(k));
  EXPECT_TRUE(counters_are(proxy.stats_port(), want)) << "after 50 hits";

  // Five keys only on their second copy: each get fails over once and is
  // repaired once.
  std::vector<std::string> strays = random_keys("user-stray", 5);
  for (const std::string& k : strays) ASSERT_TRUE(set_on(copies.of(k)[1], k, "stray"));
  for (const std::string& k : strays) ASSERT_EQ(c.get(k), "stray") << k;
  want["read_failovers"] = 5;
  want["read_repairs"] = 5;
  EXPECT_TRUE(counters_are(proxy.stats_port(), want)) << "after 5 reads found on the second copy";
  for (const std::string& k : strays) {
    EXPECT_TRUE(eventually([&] { return held_on(copies.of(k)[0], k).has_value(); }, 3s))
        << k << " not repaired";
  }

  // A down server that is the second copy: each set to such a key is a
  // replica write and a failed one (the client still hears STORED).
  fleet[2].process().signal(SIGKILL);
  ASSERT_NE(fleet[2].process().wait_exit(5s), -1);
  std::vector<std::string> onto_down;
  for (uint64_t i = 0; onto_down.size() < 10 && i < 5000; ++i) {
    std::string k = random_key("user-onto-down", i);
    if (copies.of(k)[1] == ports[2]) onto_down.push_back(k);
  }
  ASSERT_EQ(onto_down.size(), 10u);
  for (const std::string& k : onto_down) EXPECT_EQ(c.set(k, "v"), "STORED\r\n") << c.error();
  want["replica_writes"] += 10;
  want["replica_write_failures"] = 10;
  EXPECT_TRUE(counters_are(proxy.stats_port(), want)) << "after 10 sets whose second copy is down";
}

TEST(ReplicaCounters, StayAtZeroUnreplicated) {
  Fleet fleet(3);
  std::vector<uint16_t> ports = {fleet[0].port(), fleet[1].port(), fleet[2].port()};
  Proxy proxy([&](uint16_t listen) { return pool_config(listen, ports, {}); });
  Client c(proxy.port());
  for (const std::string& k : random_keys("user-single", 30)) {
    ASSERT_EQ(c.set(k, "v"), "STORED\r\n");
    ASSERT_EQ(c.get(k), "v");
  }
  EXPECT_TRUE(counters_are(proxy.stats_port(), {{"replica_writes", 0},
                                                {"replica_write_failures", 0},
                                                {"read_failovers", 0},
                                                {"read_repairs", 0}}));
}

}  // namespace
}  // namespace memshard::testing::replicas
