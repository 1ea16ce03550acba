// `stats servers` (and `stats`) over the proxy port: every backend with its
// address, state and counters; auto_eject_hosts takes a dead server out
// and every stats surface says so.
#include <gtest/gtest.h>

#include <chrono>
#include <ctime>
#include <thread>

#include "ops_util.h"

namespace memshard::testing::ops {
namespace {

class StatsServers : public ::testing::Test {
 protected:
  void start(std::vector<std::pair<std::string, std::string>> directives) {
    fleet_ = std::make_unique<Fleet>(3);
    port_ = free_port();
    PoolSpec alpha{"alpha",
                   "127.0.0.1:" + std::to_string(port_),
                   std::move(directives),
                   {(*fleet_)[0].address() + ":1", (*fleet_)[1].address() + ":1",
                    (*fleet_)[2].address() + ":1 gamma"}};
    proxy_ = start_proxy(dir_, config_yaml({alpha}), port_, {"--threads", "2"},
                         dir_.path() + "/stderr.log");
    names_ = {{(*fleet_)[0].address(), (*fleet_)[0].address()},
              {(*fleet_)[1].address(), (*fleet_)[1].address()},
              {(*fleet_)[2].address(), "gamma"}};
  }

  TempDir dir_;
  std::unique_ptr<Fleet> fleet_;
  uint16_t port_ = 0;
  std::unique_ptr<Proxy> proxy_;
  std::map<std::string, std::string> names_;  // address -> stats name
};

TEST_F(StatsServers, ListsEveryBackendLiveWithItsCounters) {
  start({});
  std::string error;
  auto keys = keys_by_server(
      proxy_->config_path, {(*fleet_)[0].address(), (*fleet_)[1].address(), (*fleet_)[2].address()},
      "ops-servers-", 1, "alpha", &error);
  ASSERT_FALSE(keys.empty()) << error;
  RawClient c(port_);
  for (const auto& [address, ks] : keys) {
    ASSERT_EQ(c.roundtrip(set_command(ks[0], "v")), "STORED\r\n");
  }

  // The plain `stats` carries the pool's counters.
  std::string all = c.roundtrip("stats\r\n", "END\r\n");
  EXPECT_EQ(stat_value(all, "alpha:fragments"), "3") << all;
  EXPECT_EQ(stat_value(all, "alpha:client_connections"), "1") << all;
  EXPECT_EQ(stat_value(all, "alpha:server_ejects"), "0") << all;
  EXPECT_EQ(stat_value(all, "server_ejects"), "0") << all;
  EXPECT_EQ(stat_value(all, "curr_connections"), "1") << all;
  EXPECT_EQ(stat_value(all, "pid"), std::to_string(proxy_->process().pid())) << all;

  auto servers = stats_servers(port_, "alpha");
  ASSERT_EQ(servers.size(), 3u);
  for (const auto& [address, name] : names_) {
    ASSERT_TRUE(servers.contains(name)) << "no backend " << name << " in stats servers";
    auto& s = servers[name];
    EXPECT_EQ(s["address"], address) << name;
    EXPECT_EQ(s["state"], "live") << name;
    EXPECT_EQ(s["requests"], "1") << name;
    EXPECT_EQ(s["responses"], "1") << name;
    EXPECT_EQ(s["replies_stored"], "1") << name;
    for (const char* f : {"server_eof", "server_err", "server_timedout", "out_queue"}) {
      EXPECT_EQ(s[f], "0") << name << " " << f;
    }
  }
}

TEST_F(StatsServers, AutoEjectedServerShowsEjectedEverywhere) {
  start({{"timeout", "400"},
         {"auto_eject_hosts", "true"},
         {"server_failure_limit", "1"},
         {"server_retry_timeout", "60000"}});
  const std::string victim = (*fleet_)[2].address();
  std::string error;
  auto keys =
      keys_by_server(proxy_->config_path, {(*fleet_)[0].address(), (*fleet_)[1].address(), victim},
                     "ops-eject-", 1, "alpha", &error);
  ASSERT_FALSE(keys.empty()) << error;
  RawClient c(port_);
  ASSERT_EQ(c.roundtrip(set_command(keys[victim][0], "v")), "STORED\r\n");
  for (const auto& [name, s] : stats_servers(port_, "alpha")) {
    EXPECT_EQ(s.at("state"), "live") << name;
  }

  const time_t before = time(nullptr);
  (*fleet_)[2].process().stop();
  // The first failure reaches the limit of 1: the server closing its
  // connections is one already; a request to it is another.
  std::string reply = c.roundtrip("get " + keys[victim][0] + "\r\n");
  EXPECT_TRUE(reply.rfind("SERVER_ERROR", 0) == 0 || reply == "END\r\n") << reply;

  EXPECT_TRUE(wait_until([&] {
    return stats_servers(port_, "alpha")["gamma"]["state"] == "ejected";
  })) << "gamma never shown ejected";
  auto servers = stats_servers(port_, "alpha");
  EXPECT_EQ(servers[(*fleet_)[0].address()]["state"], "live");
  EXPECT_EQ(servers[(*fleet_)[1].address()]["state"], "live");

  // Out of the ring: its keys go to the servers left.
  reply = c.roundtrip("get " + keys[victim][0] + "\r\n", "END\r\n");
  EXPECT_EQ(reply, "END\r\n");

  // Every stats surface agrees.
  std::string all = c.roundtrip("stats\r\n", "END\r\n");
  EXPECT_EQ(stat_value(all, "server_ejects"), "1") << all;
  EXPECT_EQ(stat_value(all, "alpha:server_ejects"), "1") << all;
  std::optional<Json> j = fetch_stats_json(proxy_->stats_port, &error);
  ASSERT_TRUE(j.has_value()) << error;
  const Json* pool = j->get("alpha");
  ASSERT_NE(pool, nullptr);
  EXPECT_EQ(pool->get("server_ejects")->u64(), 1u);
  const Json* gamma = pool->get("gamma");
  ASSERT_NE(gamma, nullptr);
  EXPECT_GT(gamma->get("server_ejected_at")->u64().value_or(0), 0u);
  (void)before;  // the unit is checked by EjectedAtIsMicrosecondsSinceTheEpoch
  EXPECT_EQ(pool->get((*fleet_)[0].address())->get("server_ejected_at")->u64(), 0u);
  std::vector<Sample> m;
  ASSERT_TRUE(fetch_metrics(proxy_->stats_port, m, nullptr, &error)) << error;
  EXPECT_EQ(metric(m, "memshard_server_ejected", {{"server", "gamma"}}), 1.0);
  EXPECT_EQ(metric(m, "memshard_server_ejected", {{"address", (*fleet_)[0].address()}}), 0.0);
  EXPECT_EQ(metric(m, "memshard_pool_server_ejections_total", {{"pool", "alpha"}}), 1.0);
  EXPECT_NE(read_file(dir_.path() + "/stderr.log").find("ejected after 1 consecutive failures"),
            std::string::npos)
      << read_file(dir_.path() + "/stderr.log");

  // server_retry_timeout 60 s: it stays out meanwhile.
  std::this_thread::sleep_for(1s);
  EXPECT_EQ(stats_servers(port_, "alpha")["gamma"]["state"], "ejected");
}

// MEMSHARD BUG (fails until fixed): twemproxy's server_ejected_at is
// "timestamp when server was ejected in usec since epoch" (nc_stats.h,
// STATS_TIMESTAMP set from nc_usec_now()); memshard's JSON gives seconds
// (ServerHealth::eject stores time(nullptr); stats_render.cc prints it as
// is). A dashboard or alert built on twemproxy's JSON reads 1970.
TEST_F(StatsServers, EjectedAtIsMicrosecondsSinceTheEpoch) {
  start({{"auto_eject_hosts", "true"},
         {"server_failure_limit", "1"},
         {"server_retry_timeout", "60000"}});
  const auto before_usec =
      static_cast<uint64_t>(std::chrono::duration_cast<std::chrono::microseconds>(
                                std::chrono::system_clock::now().time_since_epoch())
                                .count());
  (*fleet_)[2].process().stop();
  {
    // A request makes sure memshard notices, whether or not the server's
    // closing connections already did.
    std::string error;
    auto keys = keys_by_server(proxy_->config_path, {(*fleet_)[2].address()}, "ops-at-", 1, "alpha",
                               &error);
    ASSERT_FALSE(keys.empty()) << error;
    RawClient c(port_);
    c.roundtrip("get " + keys.begin()->second[0] + "\r\n");
  }
  ASSERT_TRUE(
      wait_until([&] { return stats_servers(port_, "alpha")["gamma"]["state"] == "ejected"; }));
  std::optional<Json> j = fetch_stats_json(proxy_->stats_port);
  ASSERT_TRUE(j.has_value());
  const uint64_t at = j->get("alpha")->get("gamma")->get("server_ejected_at")->u64().value_or(0);
  const auto after_usec =
      static_cast<uint64_t>(std::chrono::duration_cast<std::chrono::microseconds>(
                                std::chrono::system_clock::now().time_since_epoch())
                                .count());
  EXPECT_GE(at, before_usec - 1'000'000)
      << "server_ejected_at " << at << " is not in usec since the epoch";
  EXPECT_LE(at, after_usec + 1'000'000);
}

}  // namespace
}  // namespace memshard::testing::ops
