// Every directive nutcracker 0.5 accepts, and memshard's extensions, read
// with non-default values.
#include <gtest/gtest.h>

#include "conf_test_util.h"
#include "ketama/hash.h"

namespace memshard::conf {
namespace {

using testing::only_pool;
using testing::pool;

TEST(ConfDirectives, EveryDirectiveWithNonDefaultValue) {
  const PoolConfig p = only_pool(
      "gamma:\n"
      "  listen: 0.0.0.0:22123\n"
      "  hash: murmur\n"
      "  hash_tag: \"{}\"\n"
      "  distribution: modula\n"
      "  ketama_compat: libmemcached_weighted\n"
      "  timeout: 400\n"
      "  backlog: 1024\n"
      "  preconnect: true\n"
      "  redis: false\n"
      "  redis_db: 7\n"
      "  server_connections: 3\n"
      "  auto_eject_hosts: true\n"
      "  server_retry_timeout: 2000\n"
      "  server_failure_limit: 5\n"
      "  client_connections: 100\n"
      "  tcpkeepalive: true\n"
      "  item_size_max: 2097152\n"
      "  servers:\n"
      "   - 10.0.0.1:11211:1\n");
  EXPECT_EQ(p.name, "gamma");
  EXPECT_EQ(p.listen.host, "0.0.0.0");
  EXPECT_EQ(p.listen.port, 22123);
  EXPECT_FALSE(p.listen.is_unix);
  EXPECT_EQ(p.listen.text, "0.0.0.0:22123");
  EXPECT_EQ(p.ring.hash, ketama::HashFunction::murmur);
  EXPECT_EQ(p.ring.hash_tag, "{}");
  EXPECT_EQ(p.ring.distribution, ketama::Distribution::modula);
  EXPECT_EQ(p.ring.mode, ketama::Mode::libmemcached_weighted);
  EXPECT_EQ(p.timeout_ms, 400);
  EXPECT_EQ(p.backlog, 1024);
  EXPECT_TRUE(p.preconnect);
  EXPECT_EQ(p.redis_db, 7);
  EXPECT_EQ(p.server_connections, 3u);
  EXPECT_TRUE(p.auto_eject_hosts);
  EXPECT_EQ(p.server_retry_timeout_ms, 2000);
  EXPECT_EQ(p.server_failure_limit, 5u);
  EXPECT_EQ(p.client_connections, 100u);
  EXPECT_TRUE(p.tcpkeepalive);
  EXPECT_EQ(p.item_size_max, 2097152u);
  ASSERT_EQ(p.servers.size(), 1u);
  EXPECT_EQ(p.servers[0].entry.host, "10.0.0.1");
}

TEST(ConfDirectives, EveryHashName) {
  for (ketama::HashFunction f : ketama::kAllHashFunctions) {
    const std::string name(ketama::hash_name(f));
    EXPECT_EQ(only_pool(pool("  hash: " + name + "\n")).ring.hash, f) << name;
  }
}

TEST(ConfDirectives, EveryDistribution) {
  EXPECT_EQ(only_pool(pool("  distribution: ketama\n")).ring.distribution,
            ketama::Distribution::ketama);
  EXPECT_EQ(only_pool(pool("  distribution: modula\n")).ring.distribution,
            ketama::Distribution::modula);
  EXPECT_EQ(only_pool(pool("  distribution: random\n")).ring.distribution,
            ketama::Distribution::random);
}

TEST(ConfDirectives, EveryKetamaCompatMode) {
  for (const char* name : {"twemproxy", "libmemcached_weighted", "libmemcached", "libmemcached_spy",
                           "libketama", "spymemcached"}) {
    const PoolConfig p = only_pool(pool(std::string("  ketama_compat: ") + name + "\n"));
    EXPECT_EQ(ketama::mode_name(p.ring.mode), name);
  }
}

TEST(ConfDirectives, PlainLibmemcachedModesDefaultToLibmemcachedsHash) {
  // libmemcached hashes with one_at_a_time unless told otherwise; an
  // explicit hash still wins, and twemproxy mode keeps fnv1a_64.
  for (const char* name : {"libmemcached", "libmemcached_spy"}) {
    const PoolConfig p = only_pool(pool(std::string("  ketama_compat: ") + name + "\n"));
    EXPECT_EQ(p.ring.hash, ketama::HashFunction::one_at_a_time) << name;
    const PoolConfig q =
        only_pool(pool(std::string("  ketama_compat: ") + name + "\n  hash: murmur\n"));
    EXPECT_EQ(q.ring.hash, ketama::HashFunction::murmur) << name;
  }
  EXPECT_EQ(only_pool(pool("  ketama_compat: twemproxy\n")).ring.hash,
            ketama::HashFunction::fnv1a_64);
}

TEST(ConfDirectives, ClientIdleTimeoutExtension) {
  EXPECT_EQ(only_pool(pool("")).client_idle_timeout_ms, 0);
  EXPECT_EQ(only_pool(pool("  client_idle_timeout: 30000\n")).client_idle_timeout_ms, 30000);
}

TEST(ConfDirectives, DnsRefreshExtension) {
  EXPECT_EQ(only_pool(pool("")).dns_refresh_ms, 30000);
  EXPECT_EQ(only_pool(pool("  dns_refresh: 500\n")).dns_refresh_ms, 500);
  EXPECT_EQ(only_pool(pool("  dns_refresh: 0\n")).dns_refresh_ms, 0);
}

TEST(ConfDirectives, ReplicationExtensions) {
  const PoolConfig d = only_pool(pool(""));
  EXPECT_EQ(d.replicas, 1u);
  EXPECT_EQ(d.write_policy, WritePolicy::first);
  EXPECT_FALSE(d.read_failover_on_miss);
  EXPECT_FALSE(d.read_repair);
  const PoolConfig m = only_pool(
      pool("  write_policy: majority\n  read_failover_on_miss: true\n  read_repair: true\n"));
  EXPECT_EQ(m.write_policy, WritePolicy::majority);
  EXPECT_TRUE(m.read_failover_on_miss);
  EXPECT_TRUE(m.read_repair);
  EXPECT_EQ(only_pool(pool("  write_policy: all\n")).write_policy, WritePolicy::all);
}

TEST(ConfDirectives, ReloadWarmupExtensions) {
  const PoolConfig d = only_pool(pool(""));
  EXPECT_EQ(d.reload_warmup_ms, 0);
  EXPECT_EQ(d.reload_migrate_rate, 0u);
  const PoolConfig w = only_pool(pool("  reload_warmup: 600000\n  reload_migrate_rate: 2000\n"));
  EXPECT_EQ(w.reload_warmup_ms, 600000);
  EXPECT_EQ(w.reload_migrate_rate, 2000u);
}

TEST(ConfDirectives, ScheduledSwitchExtensions) {
  const PoolConfig d = only_pool(pool(""));
  EXPECT_EQ(d.reload_switch_at_ms, 0);
  EXPECT_EQ(d.reload_switch_window_ms, 0);
  const PoolConfig s =
      only_pool(pool("  reload_warmup: 600000\n  reload_switch_at: 2026-01-01T00:00:00Z\n"
                     "  reload_switch_window: 30000\n"));
  EXPECT_EQ(s.reload_switch_at_ms, int64_t{1767225600} * 1000);
  EXPECT_EQ(s.reload_switch_at_line, 4);
  EXPECT_EQ(s.reload_switch_window_ms, 30000);
  EXPECT_EQ(only_pool(pool("  reload_warmup: 1000\n  reload_switch_at: 1767225600\n"))
                .reload_switch_at_ms,
            int64_t{1767225600} * 1000);
}

TEST(ConfDirectives, HotKeyExtensions) {
  const PoolConfig d = only_pool(pool(""));
  EXPECT_DOUBLE_EQ(d.hot_key_log_share, 0.01);
  EXPECT_EQ(d.hot_key_cache_mb, 0u);
  EXPECT_EQ(d.hot_key_ttl_ms, 1000u);
  EXPECT_FALSE(d.hot_key_spread);
  const PoolConfig m =
      only_pool(pool("  hot_key_log_share: 0.5%\n  hot_key_cache: 8\n  hot_key_ttl: 250\n"));
  EXPECT_DOUBLE_EQ(m.hot_key_log_share, 0.005);
  EXPECT_EQ(m.hot_key_cache_mb, 8u);
  EXPECT_EQ(m.hot_key_ttl_ms, 250u);
  EXPECT_DOUBLE_EQ(only_pool(pool("  hot_key_log_share: 0.03\n")).hot_key_log_share, 0.03);
}

TEST(ConfDirectives, ServerQueueLimit) {
  EXPECT_EQ(only_pool(pool("")).server_queue_limit, 4096u);
  EXPECT_EQ(only_pool(pool("  server_queue_limit: 64\n")).server_queue_limit, 64u);
  EXPECT_EQ(only_pool(pool("  server_queue_limit: 0\n")).server_queue_limit, 0u);
}

TEST(ConfDirectives, BooleansBothWays) {
  const PoolConfig on = only_pool(pool("  preconnect: true\n  auto_eject_hosts: true\n"));
  EXPECT_TRUE(on.preconnect);
  EXPECT_TRUE(on.auto_eject_hosts);
  const PoolConfig off = only_pool(pool("  preconnect: false\n  auto_eject_hosts: false\n"));
  EXPECT_FALSE(off.preconnect);
  EXPECT_FALSE(off.auto_eject_hosts);
}

TEST(ConfDirectives, TimeoutZeroMeansForeverAsInNutcracker) {
  // nutcracker arms no timer when the timeout is <= 0.
  EXPECT_EQ(only_pool(pool("  timeout: 0\n")).timeout_ms, std::nullopt);
  EXPECT_EQ(only_pool(pool("  timeout: 1\n")).timeout_ms, 1);
}

TEST(ConfDirectives, QuotedValuesReadLikePlainOnes) {
  // libyaml hands nutcracker the same scalar either way.
  const PoolConfig p = only_pool(pool("  timeout: \"400\"\n  preconnect: 'true'\n"));
  EXPECT_EQ(p.timeout_ms, 400);
  EXPECT_TRUE(p.preconnect);
}

TEST(ConfDirectives, NumbersAtTheirLimits) {
  const PoolConfig p =
      only_pool(pool("  backlog: 2147483647\n  server_retry_timeout: 0\n  server_failure_limit: 0\n"
                     "  client_connections: 2147483647\n  item_size_max: 1073741824\n"));
  EXPECT_EQ(p.backlog, 2147483647);
  EXPECT_EQ(p.server_retry_timeout_ms, 0);
  EXPECT_EQ(p.server_failure_limit, 0u);
  EXPECT_EQ(p.client_connections, 2147483647u);
  EXPECT_EQ(p.item_size_max, 1073741824u);
  EXPECT_EQ(only_pool(pool("  item_size_max: 1024\n")).item_size_max, 1024u);
}

TEST(ConfDirectives, UnixListenWithPermissions) {
  const PoolConfig p =
      only_pool("omega:\n  listen: /tmp/memshard.sock 0666\n  servers:\n   - 127.0.0.1:11211:1\n");
  EXPECT_TRUE(p.listen.is_unix);
  EXPECT_EQ(p.listen.path, "/tmp/memshard.sock");
  EXPECT_EQ(p.listen.perm, 0666u);
  EXPECT_EQ(p.listen.host, "");
  EXPECT_EQ(p.listen.text, "/tmp/memshard.sock 0666");
}

TEST(ConfDirectives, UnixListenWithoutPermissions) {
  const PoolConfig p =
      only_pool("omega:\n  listen: /tmp/memshard.sock\n  servers:\n   - 127.0.0.1:11211:1\n");
  EXPECT_TRUE(p.listen.is_unix);
  EXPECT_EQ(p.listen.path, "/tmp/memshard.sock");
  EXPECT_EQ(p.listen.perm, std::nullopt);
}

TEST(ConfDirectives, HostnameAndIpv6Listen) {
  EXPECT_EQ(only_pool("a:\n  listen: localhost:22121\n  servers:\n   - h:1:1\n").listen.host,
            "localhost");
  const PoolConfig v6 = only_pool("a:\n  listen: ::1:22121\n  servers:\n   - h:1:1\n");
  EXPECT_EQ(v6.listen.host, "::1");
  EXPECT_EQ(v6.listen.port, 22121);
}

TEST(ConfDirectives, ServersKeepFileOrderLinesAndText) {
  const PoolConfig p = only_pool(pool("",
                                      "   - 10.0.0.2:11211:3 b\n"
                                      "   # a comment between servers\n"
                                      "   - 10.0.0.1:11212:1 a\n"));
  ASSERT_EQ(p.servers.size(), 2u);
  EXPECT_EQ(p.servers[0].text, "10.0.0.2:11211:3 b");
  EXPECT_EQ(p.servers[0].line, 4);
  EXPECT_EQ(p.servers[1].text, "10.0.0.1:11212:1 a");
  EXPECT_EQ(p.servers[1].line, 6);
}

TEST(ConfDirectives, CommentsAndBlankLinesAreIgnored) {
  const PoolConfig p = only_pool(
      "# header\n\nalpha:   # trailing comment\n  listen: 127.0.0.1:22121  # here too\n\n"
      "  servers:\n   - 127.0.0.1:11211:1\n");
  EXPECT_EQ(p.line, 3);
  EXPECT_EQ(p.listen.port, 22121);
}

}  // namespace
}  // namespace memshard::conf
