// Expiries per pool (ttl_max, ttl_set; docs/routing.md, "Expiries per
// pool"): the real memshard in front of real memcached servers, each
// item's TTL read on the server itself, for text, meta and binary writes.
#include <gtest/gtest.h>

#include <string>

#include "binary_util.h"
#include "harness.h"
#include "routes_fixture.h"

namespace memshard::testing::routes {
namespace {

// The TTL the server keeps for `key` is within a few seconds below `ttl`
// (-1: none).
void expect_ttl(uint16_t port, const std::string& key, long ttl) {
  const auto h = held_on(port, key);
  ASSERT_TRUE(h) << key;
  if (ttl == -1) {
    EXPECT_EQ(h->ttl, -1) << key;
    return;
  }
  EXPECT_LE(h->ttl, ttl) << key;
  EXPECT_GE(h->ttl, ttl - 5) << key;
}

TEST_F(Routes, TtlMaxCapsAndTtlSetReplacesEveryExpiry) {
  // "max:" keys go to sessions (ttl_max 100), "set:" keys to feeds
  // (ttl_set 50), through the routing pool.
  const std::string yaml = "front:\n  listen: 127.0.0.1:" + std::to_string(port_) +
                           "\n  routes:\n"
                           "    - prefix: \"max:\"\n      pool: sessions\n"
                           "    - prefix: \"set:\"\n      pool: feeds\n"
                           "sessions:\n  ttl_max: 100\n  servers:\n" +
                           line(kSessions) + "feeds:\n  ttl_set: 50\n  servers:\n" + line(kFeeds);
  start(yaml);
  RawClient c(port_);
  // ttl_max: 0 and longer are capped, shorter kept.
  ASSERT_EQ(c.roundtrip("set max:never 0 0 1\r\nx\r\n"), "STORED\r\n");
  ASSERT_EQ(c.roundtrip("set max:long 0 5000 1\r\nx\r\n"), "STORED\r\n");
  ASSERT_EQ(c.roundtrip("set max:short 0 30 1\r\nx\r\n"), "STORED\r\n");
  ASSERT_EQ(c.roundtrip("ms max:meta 1\r\nx\r\n"), "HD\r\n");
  ASSERT_EQ(c.roundtrip("set max:touched 0 30 1\r\nx\r\n"), "STORED\r\n");
  ASSERT_EQ(c.roundtrip("touch max:touched 0\r\n"), "TOUCHED\r\n");
  expect_ttl(server(kSessions), "max:never", 100);
  expect_ttl(server(kSessions), "max:long", 100);
  expect_ttl(server(kSessions), "max:short", 30);
  expect_ttl(server(kSessions), "max:meta", 100);
  expect_ttl(server(kSessions), "max:touched", 100);
  // ttl_set: every expiry becomes 50.
  ASSERT_EQ(c.roundtrip("set set:never 0 0 1\r\nx\r\n"), "STORED\r\n");
  ASSERT_EQ(c.roundtrip("set set:short 0 5 1\r\nx\r\n"), "STORED\r\n");
  ASSERT_EQ(c.roundtrip("ms set:meta 1 T3\r\nx\r\n"), "HD\r\n");
  ASSERT_EQ(c.roundtrip("set set:gat 0 0 1\r\nx\r\n"), "STORED\r\n");
  EXPECT_EQ(c.roundtrip("gat 1000 set:gat\r\n", "END\r\n"), "VALUE set:gat 0 1\r\nx\r\nEND\r\n");
  expect_ttl(server(kFeeds), "set:never", 50);
  expect_ttl(server(kFeeds), "set:short", 50);
  expect_ttl(server(kFeeds), "set:meta", 50);
  expect_ttl(server(kFeeds), "set:gat", 50);
  // Binary: a set's extras carry the exptime.
  RawClient b(port_);
  b.send(bin::request(bin::kSet, "max:bin", bin::store_extras(0, 0), "b"));
  auto f = bin::read_frame(b);
  ASSERT_TRUE(f);
  EXPECT_EQ(f->status, bin::kOk);
  b.send(bin::request(bin::kSet, "set:bin", bin::store_extras(0, 7), "b"));
  f = bin::read_frame(b);
  ASSERT_TRUE(f);
  EXPECT_EQ(f->status, bin::kOk);
  expect_ttl(server(kSessions), "max:bin", 100);
  expect_ttl(server(kFeeds), "set:bin", 50);
}

}  // namespace
}  // namespace memshard::testing::routes
