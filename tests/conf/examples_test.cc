// The example configs in conf/examples parse, and say what they claim to.
#include <gtest/gtest.h>

#include <fstream>
#include <sstream>

#include "conf_test_util.h"

namespace memshard::conf {
namespace {

using testing::example;

Config load_example(const std::string& name) {
  LoadResult r = load_config_file(example(name));
  for (const ConfigError& e : r.errors) ADD_FAILURE() << e.to_string();
  return r.config.value_or(Config{});
}

TEST(ConfExamples, DemoFleet) {
  const Config c = load_example("demo.yml");
  ASSERT_EQ(c.pools.size(), 1u);
  const PoolConfig& p = c.pools[0];
  EXPECT_EQ(p.name, "demo");
  EXPECT_EQ(p.listen.host, "127.0.0.1");
  EXPECT_EQ(p.listen.port, 22122);
  EXPECT_EQ(p.ring.hash, ketama::HashFunction::fnv1a_64);
  EXPECT_EQ(p.ring.distribution, ketama::Distribution::ketama);
  EXPECT_EQ(p.ring.mode, ketama::Mode::twemproxy);
  EXPECT_EQ(p.timeout_ms, 400);
  EXPECT_FALSE(p.auto_eject_hosts);
  ASSERT_EQ(p.servers.size(), 3u);
  for (size_t i = 0; i < 3; ++i) {
    EXPECT_EQ(p.servers[i].entry.host, "127.0.0.1");
    EXPECT_EQ(p.servers[i].entry.port, 21211 + i);
    EXPECT_EQ(p.servers[i].entry.weight, 1u);
    EXPECT_EQ(p.servers[i].entry.name, "");
  }
}

TEST(ConfExamples, ReferenceUsesEveryDirective) {
  std::ifstream in(example("nutcracker-reference.yml"));
  std::stringstream text;
  text << in.rdbuf();
  for (const char* d : {"listen",
                        "hash",
                        "hash_tag",
                        "distribution",
                        "timeout",
                        "backlog",
                        "preconnect",
                        "redis",
                        "redis_auth",
                        "redis_db",
                        "server_connections",
                        "auto_eject_hosts",
                        "server_retry_timeout",
                        "server_failure_limit",
                        "client_connections",
                        "tcpkeepalive",
                        "servers",
                        "ketama_compat",
                        "item_size_max",
                        "server_queue_limit"}) {
    EXPECT_NE(text.str().find(std::string(d) + ":"), std::string::npos) << d;
  }
}

TEST(ConfExamples, ReferenceParsesWithNonDefaultValues) {
  const Config c = load_example("nutcracker-reference.yml");
  ASSERT_EQ(c.pools.size(), 2u);
  const PoolConfig& p = c.pools[0];
  EXPECT_EQ(p.ring.hash_tag, "{}");
  EXPECT_EQ(p.ring.mode, ketama::Mode::twemproxy);
  EXPECT_EQ(p.timeout_ms, 400);
  EXPECT_EQ(p.backlog, 1024);
  EXPECT_TRUE(p.preconnect);
  EXPECT_EQ(p.server_connections, 2u);
  EXPECT_TRUE(p.auto_eject_hosts);
  EXPECT_EQ(p.client_connections, 4096u);
  EXPECT_TRUE(p.tcpkeepalive);
  EXPECT_EQ(p.server_queue_limit, 2048u);
  ASSERT_EQ(p.servers.size(), 3u);
  EXPECT_EQ(p.servers[2].entry.host, "cache-c.example.internal");
  EXPECT_EQ(p.servers[2].entry.weight, 2u);
  EXPECT_EQ(p.servers[2].entry.name, "shard-c");
  EXPECT_EQ(p.replicas, 2u);
  EXPECT_EQ(p.write_policy, WritePolicy::majority);
  EXPECT_TRUE(p.read_failover_on_miss);
  EXPECT_TRUE(p.read_repair);
  EXPECT_EQ(p.reload_warmup_ms, 600000);
  EXPECT_EQ(p.reload_migrate_rate, 2000u);
  EXPECT_EQ(p.reload_switch_at_ms, 1'772'330'400'000);  // 2026-03-01T02:00:00Z
  EXPECT_EQ(p.reload_switch_window_ms, 5000);
  EXPECT_DOUBLE_EQ(p.hot_key_log_share, 0.02);
  EXPECT_EQ(p.hot_key_cache_mb, 16u);
  EXPECT_EQ(p.hot_key_ttl_ms, 500u);
  EXPECT_TRUE(p.hot_key_spread);

  const PoolConfig& u = c.pools[1];
  EXPECT_TRUE(u.listen.is_unix);
  EXPECT_EQ(u.listen.perm, 0666u);
  ASSERT_EQ(u.servers.size(), 2u);
  EXPECT_TRUE(u.servers[0].entry.is_unix);
  EXPECT_EQ(u.servers[1].entry.name, "socket-b");
}

TEST(ConfExamples, TwemproxyStylePools) {
  const Config c = load_example("twemproxy-pools.yml");
  ASSERT_EQ(c.pools.size(), 6u);
  EXPECT_EQ(c.find_pool("beta")->servers[1].entry.name, "server2");
  EXPECT_EQ(c.find_pool("delta")->servers.size(), 10u);
  const PoolConfig& eps = *c.find_pool("epsilon");
  EXPECT_TRUE(eps.listen.is_unix);
  EXPECT_EQ(eps.ring.distribution, ketama::Distribution::modula);
  EXPECT_EQ(eps.servers[1].entry.weight, 2u);
  EXPECT_EQ(c.find_pool("zeta")->servers[0].entry.host, "::1");
}

TEST(ConfExamples, ProductionStyleNamedServers) {
  const Config c = load_example("production-named.yml");
  ASSERT_EQ(c.pools.size(), 2u);
  const PoolConfig& s = *c.find_pool("sessions");
  ASSERT_EQ(s.servers.size(), 5u);
  EXPECT_EQ(s.servers[3].entry.host, "mc-sess-04.dc1.example.net");
  EXPECT_EQ(s.servers[3].entry.weight, 200u);
  EXPECT_EQ(s.servers[3].entry.name, "sess-04");
  EXPECT_EQ(c.find_pool("pages")->ring.hash_tag, "[]");
}

TEST(ConfExamples, RoutesAcrossPools) {
  const Config c = load_example("routes.yml");
  ASSERT_EQ(c.pools.size(), 8u);
  const PoolConfig& front = *c.find_pool("front");
  EXPECT_TRUE(front.servers.empty());
  ASSERT_EQ(front.routes.size(), 4u);
  EXPECT_EQ(front.routes[0].prefix, "sess:");
  EXPECT_EQ(front.routes[1].shadow, "feeds_next");
  EXPECT_DOUBLE_EQ(front.routes[1].shadow_share, 0.1);
  EXPECT_EQ(front.routes[2].pools, (std::vector<std::string>{"users_zone_a", "users_zone_b"}));
  EXPECT_TRUE(front.routes[3].is_default);
  EXPECT_FALSE(c.find_pool("sessions")->has_listen());
  EXPECT_EQ(c.find_pool("main")->gutter, "spare");
}

}  // namespace
}  // namespace memshard::conf
