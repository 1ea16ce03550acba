// A blackhole route (blackhole: true; docs/routing.md, "Blackhole
// routes"): the real memshard answers the route's requests itself, as
// mcrouter's NullRoute, over text, meta and binary, stores nothing on any
// server, and counts them.
#include <gtest/gtest.h>

#include <string>

#include "binary_util.h"
#include "harness.h"
#include "routes_fixture.h"

namespace memshard::testing::routes {
namespace {

TEST_F(Routes, BlackholeRouteAnswersItselfAndStoresNothing) {
  start(config("    - prefix: \"junk:\"\n      blackhole: true\n    - pool: sessions\n"));
  RawClient c(port_);
  EXPECT_EQ(c.roundtrip(set_command("junk:1", "x")), "NOT_STORED\r\n");
  EXPECT_EQ(c.roundtrip("get junk:1\r\n", "END\r\n"), "END\r\n");
  EXPECT_EQ(c.roundtrip("delete junk:1\r\n"), "NOT_FOUND\r\n");
  EXPECT_EQ(c.roundtrip("incr junk:1 1\r\n"), "NOT_FOUND\r\n");
  EXPECT_EQ(c.roundtrip("ms junk:1 1 Oq1\r\nx\r\n"), "NS Oq1\r\n");
  EXPECT_EQ(c.roundtrip("mg junk:1 v k\r\n"), "EN kjunk:1\r\n");
  // A multi-get across the blackhole and a pool: the pool's hits only.
  ASSERT_EQ(c.roundtrip(set_command("s:1", "real")), "STORED\r\n");
  EXPECT_EQ(c.roundtrip("get junk:1 s:1 junk:2\r\n", "END\r\n"),
            "VALUE s:1 0 4\r\nreal\r\nEND\r\n");
  // Binary.
  RawClient b(port_);
  b.send(bin::request(bin::kSet, "junk:b", bin::store_extras(0, 0), "v"));
  auto f = bin::read_frame(b);
  ASSERT_TRUE(f);
  EXPECT_EQ(f->status, bin::kNotStored);
  b.send(bin::request(bin::kGet, "junk:b"));
  f = bin::read_frame(b);
  ASSERT_TRUE(f);
  EXPECT_EQ(f->status, bin::kKeyNotFound);
  EXPECT_TRUE(holders("junk:1").empty());
  EXPECT_TRUE(holders("junk:b").empty());
  EXPECT_EQ(holders("s:1"), std::set<Server>{kSessions});
  EXPECT_GE(route_stat("front:junk::blackholed"), 9u);
}

}  // namespace
}  // namespace memshard::testing::routes
