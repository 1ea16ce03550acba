// One test per kind of error: each checks the file, the line, the
// directive and what the message says was expected.
#include <gtest/gtest.h>

#include <cstdio>
#include <fstream>

#include "conf_test_util.h"

namespace memshard::conf {
namespace {

using testing::expect_error;
using testing::only_error;
using testing::parse;
using testing::pool;

TEST(ConfErrors, ToStringIsGccStyle) {
  EXPECT_EQ((ConfigError{"a.yml", 3, "hash", "expected x"}).to_string(),
            "a.yml:3: hash: expected x");
  EXPECT_EQ((ConfigError{"a.yml", 0, "", "no pools"}).to_string(), "a.yml: no pools");
  EXPECT_EQ((ConfigError{"a.yml", 7, "", "malformed"}).to_string(), "a.yml:7: malformed");
}

TEST(ConfErrors, MalformedYaml) {
  const ConfigError e = only_error("alpha:\n  listen: 127.0.0.1:22121\n servers:\n");
  expect_error(e, 3, "", "malformed YAML: end of map not found");
}

TEST(ConfErrors, EmptyFileHasNoPools) {
  expect_error(only_error("# only a comment\n"), 0, "",
               "no pools; expected a map of pool names to their directives");
}

TEST(ConfErrors, TopLevelNotAMap) {
  expect_error(only_error("\n- alpha\n- beta\n"), 2, "",
               "expected a map of pool names to their directives at the top level, found a "
               "list");
}

TEST(ConfErrors, MoreThanOneDocument) {
  const LoadResult r = parse(pool() + "---\n" + pool());
  ASSERT_FALSE(r.errors.empty());
  expect_error(r.errors.front(), 5, "",  // the "---" line
               "expected one YAML document, found more (nutcracker reads exactly one)");
}

TEST(ConfErrors, StrayCommaIsMalformedNotAHang) {
  // yaml-cpp 0.7's LoadAll loops forever, allocating, on this input.
  expect_error(only_error(","), 1, "", "malformed YAML: unexpected ','");
  expect_error(only_error("# demo\n, listen: x\n"), 2, "", "malformed YAML: unexpected ','");
}

TEST(ConfErrors, PoolNotAMap) {
  expect_error(only_error(pool() + "beta: 127.0.0.1:22122\n"), 5, "beta",
               "expected the pool's directives (listen:, servers:, ...) as a map indented "
               "under its name, found \"127.0.0.1:22122\"");
}

TEST(ConfErrors, DuplicatePoolName) {
  const std::string second = "alpha:\n  listen: 127.0.0.1:22122\n  servers:\n   - h:1:1\n";
  expect_error(only_error(pool() + second), 5, "alpha",
               "pool 'alpha' is already defined on line 1; expected unique pool names");
}

TEST(ConfErrors, UnknownDirective) {
  expect_error(
      only_error(pool("  lisen: 127.0.0.1:22122\n")), 3, "lisen",
      "unknown directive; expected one of listen, hash, hash_tag, distribution, "
      "timeout, backlog, preconnect, redis, redis_auth, redis_db, server_connections, "
      "auto_eject_hosts, server_retry_timeout, server_failure_limit, "
      "client_connections, tcpkeepalive, servers, ketama_compat, item_size_max, "
      "client_idle_timeout, dns_refresh, replicas, write_policy, "
      "read_failover_on_miss, read_repair, reload_warmup, reload_migrate_rate, "
      "hot_key_log_share, hot_key_cache, hot_key_ttl, hot_key_spread, server_queue_limit, "
      "routes, gutter, gutter_ttl, ttl_max, ttl_set, reload_switch_at, reload_switch_window, "
      "repair_record, auto_eject_max, server_flap_time, server_flap_backoff_max, "
      "hash_salt, tls_cert_file, tls_key_file, tls_ca_file, tls_verify_client, tls_min_version, "
      "server_tls, server_tls_ca_file, server_tls_cert_file, server_tls_key_file, "
      "server_tls_name, server_tls_verify, servers_srv, servers_dns, discovery_refresh, "
      "discovery_hold, discovery_max_change");
}

TEST(ConfErrors, HotKeyDirectives) {
  for (const char* bad : {"0%", "101%", "abc", "1.5", "-0.1"}) {
    expect_error(only_error(pool(std::string("  hot_key_log_share: ") + bad + "\n")), 3,
                 "hot_key_log_share",
                 std::string("expected a share such as 1% or 0.01, above 0 and at most 100%, "
                             "found \"") +
                     bad + "\"");
  }
  expect_error(only_error(pool("  hot_key_ttl: 0\n")), 3, "hot_key_ttl",
               "expected a whole number from 1 to 3600000, found \"0\"");
  // pool() lists one server: one copy only.
  expect_error(only_error(pool("  hot_key_spread: true\n")), 3, "hot_key_spread",
               "hot_key_spread spreads a hot key's reads over its copies, and pool 'alpha' keeps "
               "one copy; expected replicas: 2 or more");
}

TEST(ConfErrors, MoreReplicasThanServers) {
  // pool() lists one server.
  expect_error(only_error(pool("  replicas: 2\n")), 3, "replicas",
               "pool 'alpha' keeps 2 copies of each key but has 1 server(s); expected at most "
               "one copy per server");
  expect_error(only_error(pool("  replicas: 0\n")), 3, "replicas",
               "expected a whole number from 1 to 8, found \"0\"");
}

TEST(ConfErrors, WritePolicyAndReadRepair) {
  expect_error(only_error(pool("  write_policy: quorum\n")), 3, "write_policy",
               "expected first, majority or all, found \"quorum\"");
  expect_error(only_error(pool("  read_repair: true\n")), 3, "read_repair",
               "read_repair writes back what a read found on another copy after a miss, which "
               "only read_failover_on_miss: true looks for; expected both");
}

TEST(ConfErrors, ReloadWarmupAndMigration) {
  expect_error(only_error(pool("  reload_migrate_rate: 1000\n")), 3, "reload_migrate_rate",
               "reload_migrate_rate copies moved keys during the reload_warmup window, which is "
               "off (0); set reload_warmup too");
  expect_error(only_error(pool("  reload_warmup: 90000000\n")), 3, "reload_warmup",
               "expected a whole number from 0 to 86400000, found \"90000000\"");
}

TEST(ConfErrors, ScheduledSwitch) {
  expect_error(only_error(pool("  reload_switch_at: 1767225600\n")), 3, "reload_switch_at",
               "reload_switch_at switches to the new servers with the old ones as the fallback of "
               "reads and writes for reload_warmup ms, which is off (0); set reload_warmup too, "
               "longer than the clock skew between instances (600000 is usual)");
  expect_error(only_error(pool("  reload_warmup: 1000\n  reload_switch_window: 500\n")), 4,
               "reload_switch_window",
               "reload_switch_window spreads the keys' switch over that many ms after "
               "reload_switch_at, which is not set; set reload_switch_at too");
  expect_error(
      only_error(pool("  reload_warmup: 1000\n  reload_switch_at: 2026-01-01T01:00:00+01:00\n")), 4,
      "reload_switch_at",
      "expected the time in UTC (\"Z\" or \"+00:00\"): every instance must read the same "
      "moment, found \"2026-01-01T01:00:00+01:00\"");
  expect_error(only_error(pool("  reload_warmup: 1000\n  reload_switch_at: 1767225600\n"
                               "  reload_switch_window: 90000000\n")),
               5, "reload_switch_window",
               "expected a whole number from 0 to 86400000, found \"90000000\"");
}

TEST(ConfErrors, DuplicateDirective) {
  // yaml-cpp would keep one of the two; nutcracker refuses the second.
  expect_error(only_error(pool("  hash: md5\n  timeout: 10\n  hash: crc32\n")), 5, "hash",
               "duplicate directive; already given on line 3");
}

TEST(ConfErrors, ListInsteadOfValue) {
  expect_error(only_error(pool("  hash:\n   - md5\n")), 3, "hash",
               "expected a single value, found a list");
}

TEST(ConfErrors, MissingValue) {
  expect_error(only_error(pool("  timeout:\n")), 3, "timeout",
               "expected a single value, found nothing");
}

TEST(ConfErrors, ListenWithoutPort) {
  expect_error(only_error("alpha:\n  listen: 127.0.0.1\n  servers:\n   - h:1:1\n"), 2, "listen",
               "expected \"host:port\" or \"/path/to.sock [permissions]\", found "
               "\"127.0.0.1\"");
}

TEST(ConfErrors, ListenPortOutOfRange) {
  expect_error(only_error("alpha:\n  listen: 127.0.0.1:65536\n  servers:\n   - h:1:1\n"), 2,
               "listen",
               "expected a port from 1 to 65535 after the last ':', found "
               "\"127.0.0.1:65536\"");
}

TEST(ConfErrors, ListenBadUnixPermissions) {
  expect_error(only_error("alpha:\n  listen: /tmp/m.sock 0888\n  servers:\n   - h:1:1\n"), 2,
               "listen",
               "expected octal permissions from 0 to 0777 after the socket path (e.g. 0666), "
               "found \"/tmp/m.sock 0888\"");
}

TEST(ConfErrors, BracketedIpv6) {
  expect_error(only_error(pool("", "   - \"[::1]:11211:1\"\n")), 4, "servers",
               "expected an IPv6 address without brackets, as twemproxy reads them (e.g. "
               "::1:11211): the port is what follows the last ':', found \"[::1]:11211:1\"");
}

TEST(ConfErrors, ServerFormat) {
  // The weight is the part most often left out.
  expect_error(only_error(pool("", "   - 127.0.0.1:11211\n   - 127.0.0.1:11212:1\n")), 4, "servers",
               "expected \"host:port:weight [name]\" or \"/path/to.sock:weight [name]\" (the "
               "weight is required), found \"127.0.0.1:11211\"");
  expect_error(only_error(pool("", "   - /tmp/mc.sock\n")), 4, "servers",
               "expected \"host:port:weight [name]\" or \"/path/to.sock:weight [name]\" (the "
               "weight is required), found \"/tmp/mc.sock\"");
}

TEST(ConfErrors, ServerWeightNotANumber) {
  expect_error(only_error(pool("", "   - 127.0.0.1:11211:heavy\n")), 4, "servers",
               "expected a whole number weight from 1 to 2147483647 after the last ':', found "
               "\"127.0.0.1:11211:heavy\"");
}

TEST(ConfErrors, ServerPortOutOfRange) {
  expect_error(only_error(pool("", "   - 127.0.0.1:0:1\n")), 4, "servers",
               "expected a port from 1 to 65535 after the last ':', found \"127.0.0.1:0:1\"");
}

TEST(ConfErrors, ServerPortWithLeadingZero) {
  expect_error(only_error(pool("", "   - 127.0.0.1:011212:1\n")), 4, "servers",
               "expected the port without leading zeros (twemproxy names servers by the port as "
               "written), found \"127.0.0.1:011212:1\"");
}

TEST(ConfErrors, ZeroWeight) {
  expect_error(only_error(pool("", "   - 127.0.0.1:11211:0\n")), 4, "servers",
               "expected a weight of at least 1 (twemproxy refuses a zero weight), found "
               "\"127.0.0.1:11211:0\"");
}

TEST(ConfErrors, UnixServerPathWithColon) {
  expect_error(only_error(pool("", "   - /tmp/a:b.sock:1\n")), 4, "servers",
               "expected a unix socket path without ':' (twemproxy cannot read one), found "
               "\"/tmp/a:b.sock:1\"");
}

TEST(ConfErrors, BadNumber) {
  expect_error(only_error(pool("  timeout: -1\n")), 3, "timeout",
               "expected a whole number from 0 to 2147483647, found \"-1\"");
  expect_error(only_error(pool("  server_queue_limit: lots\n")), 3, "server_queue_limit",
               "expected a whole number from 0 to 2147483647, found \"lots\"");
}

TEST(ConfErrors, NumberTooLarge) {
  // nutcracker silently wraps this; memshard refuses it.
  expect_error(only_error(pool("  backlog: 99999999999\n")), 3, "backlog",
               "expected a whole number from 0 to 2147483647, found \"99999999999\"");
}

TEST(ConfErrors, BadBoolean) {
  expect_error(only_error(pool("  auto_eject_hosts: yes\n")), 3, "auto_eject_hosts",
               "expected true or false (nutcracker accepts no other spelling), found \"yes\"");
}

TEST(ConfErrors, ZeroServerConnections) {
  expect_error(only_error(pool("  server_connections: 0\n")), 3, "server_connections",
               "expected a whole number from 1 to 2147483647, found \"0\"");
}

TEST(ConfErrors, ItemSizeMaxOutOfRange) {
  expect_error(only_error(pool("  item_size_max: 512\n")), 3, "item_size_max",
               "expected a whole number from 1024 to 1073741824, found \"512\"");
}

TEST(ConfErrors, BadHash) {
  expect_error(only_error(pool("  hash: sha1\n")), 3, "hash",
               "expected one of one_at_a_time, md5, crc16, crc32, crc32a, fnv1_64, fnv1a_64, "
               "fnv1_32, fnv1a_32, hsieh, murmur, jenkins, found \"sha1\"");
}

TEST(ConfErrors, BadDistribution) {
  expect_error(only_error(pool("  distribution: vnode\n")), 3, "distribution",
               "expected ketama, modula or random (twemproxy's), or ch3, wch3 or crc32 "
               "(mcrouter's), found \"vnode\"");
}

TEST(ConfErrors, BadKetamaCompat) {
  expect_error(only_error(pool("  ketama_compat: pylibmc\n")), 3, "ketama_compat",
               "expected one of twemproxy, libmemcached_weighted, libmemcached, "
               "libmemcached_spy, libketama, spymemcached, found \"pylibmc\"");
}

TEST(ConfErrors, BadHashTag) {
  expect_error(only_error(pool("  hash_tag: \"{}{\"\n")), 3, "hash_tag",
               "expected exactly two characters, such as \"{}\", found \"{}{\"");
}

TEST(ConfErrors, RedisPoolRefused) {
  expect_error(only_error(pool("  redis: true\n  redis_auth: secret\n")), 3, "redis",
               "pool 'alpha' is a redis pool (redis: true); memshard serves memcached only, so "
               "remove the pool or set redis: false");
}

TEST(ConfErrors, RedisAuthInMemcachedPool) {
  // nutcracker 0.5: 'directive "redis_auth:" is only valid for a redis pool'.
  expect_error(only_error(pool("  redis_auth: secret\n")), 3, "redis_auth",
               "expected no redis_auth in a memcached pool (nutcracker accepts it only with "
               "redis: true, and memshard serves memcached only)");
}

TEST(ConfErrors, NoListen) {
  expect_error(only_error("alpha:\n  hash: md5\n  servers:\n   - h:1:1\n"), 1, "listen",
               "pool 'alpha' has no listen address and no route reaches it; expected \"listen: "
               "host:port\" or "
               "\"listen: /path/to.sock [permissions]\"");
}

TEST(ConfErrors, NoServers) {
  const std::string message =
      "pool 'alpha' has no servers; expected a list of \"host:port:weight [name]\" entries";
  expect_error(only_error("alpha:\n  listen: 127.0.0.1:22121\n"), 1, "servers", message);
  expect_error(only_error("alpha:\n  listen: 127.0.0.1:22121\n  servers:\n"), 3, "servers",
               message);
  expect_error(only_error("alpha:\n  listen: 127.0.0.1:22121\n  servers: []\n"), 3, "servers",
               message);
}

TEST(ConfErrors, ServersNotAList) {
  expect_error(only_error("alpha:\n  listen: 127.0.0.1:22121\n  servers: h:1:1\n"), 3, "servers",
               "expected a list of \"host:port:weight [name]\" entries, found \"h:1:1\"");
}

TEST(ConfErrors, DuplicateServerName) {
  expect_error(only_error(pool("", "   - 10.0.0.1:11211:1 web\n   - 10.0.0.2:11211:1 web\n")), 5,
               "servers",
               "server \"10.0.0.2:11211:1 web\" has the ring name \"web\", as \"10.0.0.1:11211:1 "
               "web\" on line 4 does; expected unique names (twemproxy names a server without "
               "one \"host\" when its port is 11211, else \"host:port\")");
}

TEST(ConfErrors, ExplicitNameEqualToAnotherServersDerivedName) {
  // twemproxy compares ring names: "10.0.0.1" is the name it derives for
  // 10.0.0.1:11211, so naming another server "10.0.0.1" collides.
  expect_error(
      only_error(pool("", "   - 10.0.0.1:11211:1\n   - 10.0.0.9:11211:1 10.0.0.1\n")), 5, "servers",
      "server \"10.0.0.9:11211:1 10.0.0.1\" has the ring name \"10.0.0.1\", as "
      "\"10.0.0.1:11211:1\" on line 4 does; expected unique names (twemproxy names a server "
      "without one \"host\" when its port is 11211, else \"host:port\")");
}

TEST(ConfErrors, DuplicateServerAddress) {
  // Weights differ, names differ: still the same memcached twice.
  expect_error(only_error(pool("", "   - 10.0.0.1:11212:1 a\n   - 10.0.0.1:11212:2 b\n")), 5,
               "servers",
               "server \"10.0.0.1:11212:2 b\" has the same address as \"10.0.0.1:11212:1 a\" on "
               "line 4; expected each memcached once per pool");
}

TEST(ConfErrors, TotalWeightTooLarge) {
  expect_error(
      only_error(pool("", "   - h1:1:2147483647\n   - h2:1:2147483647\n   - h3:1:2\n")), 4,
      "servers",
      "pool 'alpha' has a total weight of 4294967296; expected at most 4294967295 (twemproxy "
      "sums weights in 32 bits)");
}

TEST(ConfErrors, ModulaTotalWeightTooLarge) {
  expect_error(only_error(pool("  distribution: modula\n", "   - h1:1:16777216\n   - h2:1:1\n")), 5,
               "servers",
               "pool 'alpha' has a total weight of 16777217; expected at most 16777216 with "
               "distribution modula, which lists each server weight times");
}

TEST(ConfErrors, TwoPoolsOnOneListenAddress) {
  const std::string beta = "beta:\n  listen: 127.0.0.1:22121\n  servers:\n   - h:1:1\n";
  expect_error(only_error(pool() + beta), 6, "listen",
               "pool 'beta' listens on 127.0.0.1:22121, as pool 'alpha' on line 2 does; "
               "expected each pool on its own address");
}

TEST(ConfErrors, TwoPoolsOnOneSocketPath) {
  // nutcracker compares the text and misses this; bind() would not.
  const std::string text =
      "a:\n  listen: /tmp/s.sock 0600\n  servers:\n   - h:1:1\n"
      "b:\n  listen: /tmp/s.sock 0666\n  servers:\n   - h:1:1\n";
  expect_error(only_error(text), 6, "listen",
               "pool 'b' listens on /tmp/s.sock 0666, as pool 'a' on line 2 does; expected each "
               "pool on its own address");
}

TEST(ConfErrors, UnreadableFile) {
  const LoadResult r = load_config_file("/nonexistent/memshard.yml");
  ASSERT_EQ(r.errors.size(), 1u);
  EXPECT_EQ(r.errors[0].to_string(),
            "/nonexistent/memshard.yml: cannot read the file: No such file or directory");
}

TEST(ConfErrors, AllErrorsAreCollectedInLineOrder) {
  const std::string text =
      "alpha:\n"                     // 1
      "  listen: 127.0.0.1:22121\n"  // 2
      "  hash: sha1\n"               // 3  bad hash
      "  timeout: soon\n"            // 4  bad number
      "  bogus: 1\n"                 // 5  unknown directive
      "  servers:\n"                 // 6
      "   - 10.0.0.1:11211:0\n"      // 7  zero weight
      "   - 10.0.0.2:11211:1\n"      // 8
      "   - 10.0.0.2:11211:1\n"      // 9  duplicate address
      "beta:\n"                      // 10 no servers
      "  listen: 127.0.0.1:22121\n"  // 11 same listen as alpha
      "  redis: true\n";             // 12 redis refused
  const LoadResult r = parse(text);
  EXPECT_FALSE(r.config);
  std::vector<std::pair<int, std::string>> got;
  for (const ConfigError& e : r.errors) got.emplace_back(e.line, e.directive);
  const std::vector<std::pair<int, std::string>> want = {
      {3, "hash"},    {4, "timeout"},  {5, "bogus"},   {7, "servers"},
      {9, "servers"}, {10, "servers"}, {11, "listen"}, {12, "redis"}};
  EXPECT_EQ(got, want);
}

TEST(ConfErrors, LoadFileNamesTheFileInErrors) {
  const std::string path = ::testing::TempDir() + "conf_errors_test.yml";
  std::ofstream(path) << pool("  hash: sha1\n");
  const LoadResult r = load_config_file(path);
  std::remove(path.c_str());
  ASSERT_EQ(r.errors.size(), 1u);
  EXPECT_EQ(r.errors[0].file, path);
  EXPECT_EQ(r.errors[0].to_string().rfind(path + ":3: hash: expected one of", 0), 0u);
}

}  // namespace
}  // namespace memshard::conf
