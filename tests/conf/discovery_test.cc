// servers_srv, servers_dns and the discovery_* directives (docs/discovery.md).
#include <gtest/gtest.h>

#include "conf_test_util.h"

namespace memshard::conf {
namespace {

using testing::expect_error;
using testing::only_error;
using testing::only_pool;

std::string discovery_pool(const std::string& lines) {
  return "alpha:\n  listen: 127.0.0.1:22121\n" + lines;
}

TEST(ConfDiscovery, ServersSrvWithItsDefaults) {
  const PoolConfig p = only_pool(
      discovery_pool("  servers_srv: _memcache._tcp.memcached.cache.svc.cluster.local.\n"));
  EXPECT_EQ(p.discovery.kind, DiscoveryConfig::Kind::srv);
  EXPECT_EQ(p.discovery.name, "_memcache._tcp.memcached.cache.svc.cluster.local");
  EXPECT_EQ(p.discovery.refresh_ms, 5000);
  EXPECT_EQ(p.discovery.hold_ms, 30000);
  EXPECT_DOUBLE_EQ(p.discovery.max_change, 0.5);
  EXPECT_TRUE(p.servers.empty());
  EXPECT_EQ(p.discovery.describe(), "servers_srv _memcache._tcp.memcached.cache.svc.cluster.local");
}

TEST(ConfDiscovery, ServersDnsWithItsSettings) {
  const PoolConfig p =
      only_pool(discovery_pool("  servers_dns: memcached.cache:11212\n  discovery_refresh: 1000\n"
                               "  discovery_hold: 0\n  discovery_max_change: 25%\n"));
  EXPECT_EQ(p.discovery.kind, DiscoveryConfig::Kind::dns);
  EXPECT_EQ(p.discovery.name, "memcached.cache");
  EXPECT_EQ(p.discovery.port, 11212);
  EXPECT_EQ(p.discovery.refresh_ms, 1000);
  EXPECT_EQ(p.discovery.hold_ms, 0);
  EXPECT_DOUBLE_EQ(p.discovery.max_change, 0.25);
  EXPECT_EQ(p.discovery.describe(), "servers_dns memcached.cache:11212");
  EXPECT_DOUBLE_EQ(only_pool(discovery_pool("  servers_dns: m:1\n  discovery_max_change: 0\n"))
                       .discovery.max_change,
                   0.0);
}

TEST(ConfDiscovery, Errors) {
  expect_error(only_error(discovery_pool("  servers_dns: memcached\n")), 3, "servers_dns",
               "expected NAME:PORT, such as memcached.cache.svc.cluster.local:11211, found "
               "\"memcached\"");
  expect_error(only_error(discovery_pool("  servers_srv: bad name\n")), 3, "servers_srv",
               "expected an SRV name such as _memcache._tcp.memcached.cache.svc.cluster.local, "
               "found \"bad name\"");
  expect_error(only_error(discovery_pool("  servers_srv: a\n  discovery_refresh: 10\n")), 4,
               "discovery_refresh",
               "expected a whole number of ms from 100 to 86400000, found \"10\"");
  expect_error(only_error(discovery_pool("  discovery_hold: 10\n  servers:\n   - h:1:1\n")), 3,
               "discovery_hold",
               "tunes the lookups of servers_srv or servers_dns, which pool 'alpha' does not "
               "have; set one of them, or remove this");
  expect_error(only_error(discovery_pool("  servers_srv: a\n  servers:\n   - h:1:1\n")), 4,
               "servers",
               "pool 'alpha' takes its servers from servers_srv (line 3); expected either a "
               "servers list or DNS discovery, not both");
  expect_error(only_error(discovery_pool("  servers_srv: a\n  servers_dns: b:1\n")), 4,
               "servers_dns",
               "pool 'alpha' already takes its servers from servers_srv a (line 3); expected one "
               "of servers_srv and servers_dns");
  expect_error(only_error(discovery_pool("  servers_srv: a\n  replicas: 2\n")), 4, "replicas",
               "pool 'alpha' takes its servers from servers_srv, whose count can fall below the "
               "copies kept; expected replicas: 1 with DNS discovery");
}

}  // namespace
}  // namespace memshard::conf
