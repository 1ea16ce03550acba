// A pool that sets only listen and servers gets nutcracker 0.5's defaults
// (CONF_DEFAULT_* in twemproxy's nc_conf.h: nutcracker -t does not print
// them, so they are checked against the source's values).
#include <gtest/gtest.h>

#include "conf_test_util.h"

namespace memshard::conf {
namespace {

using testing::only_pool;
using testing::pool;

TEST(ConfDefaults, MatchNutcracker05) {
  const PoolConfig p = only_pool(pool());
  EXPECT_EQ(p.name, "alpha");
  EXPECT_EQ(p.line, 1);
  EXPECT_EQ(p.ring.hash, ketama::HashFunction::fnv1a_64);
  EXPECT_EQ(p.ring.distribution, ketama::Distribution::ketama);
  EXPECT_EQ(p.ring.hash_tag, "");
  EXPECT_EQ(p.timeout_ms, std::nullopt);  // CONF_DEFAULT_TIMEOUT -1: no timeout
  EXPECT_EQ(p.backlog, 512);
  EXPECT_FALSE(p.preconnect);
  EXPECT_EQ(p.redis_auth, std::nullopt);
  EXPECT_EQ(p.redis_db, 0);
  EXPECT_EQ(p.server_connections, 1u);
  EXPECT_FALSE(p.auto_eject_hosts);
  EXPECT_EQ(p.server_retry_timeout_ms, 30000);
  EXPECT_EQ(p.server_failure_limit, 2u);
  EXPECT_EQ(p.client_connections, 0u);
  EXPECT_FALSE(p.tcpkeepalive);
}

TEST(ConfDefaults, MemshardExtensions) {
  const PoolConfig p = only_pool(pool());
  EXPECT_EQ(p.ring.mode, ketama::Mode::twemproxy);
  EXPECT_EQ(p.item_size_max, 1024u * 1024u);  // memcached's default -I
}

TEST(ConfDefaults, ServerWithoutNameHasEmptyName) {
  const PoolConfig p = only_pool(pool());
  ASSERT_EQ(p.servers.size(), 1u);
  EXPECT_EQ(p.servers[0].entry.name, "");
  EXPECT_EQ(p.servers[0].entry.weight, 1u);
  EXPECT_EQ(p.servers[0].line, 4);
}

TEST(ConfDefaults, FindPoolByName) {
  const LoadResult r = testing::parse(pool() +
                                      "beta:\n  listen: 127.0.0.1:22122\n  servers:\n"
                                      "   - 127.0.0.1:11212:1\n");
  ASSERT_TRUE(r.config);
  EXPECT_EQ(r.config->file, "test.yml");
  ASSERT_NE(r.config->find_pool("beta"), nullptr);
  EXPECT_EQ(r.config->find_pool("beta")->line, 5);
  EXPECT_EQ(r.config->find_pool("gamma"), nullptr);
  EXPECT_EQ(r.config->pools[0].name, "alpha");  // file order
}

}  // namespace
}  // namespace memshard::conf
