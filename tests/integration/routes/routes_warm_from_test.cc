// A route's warm-up from another pool (warm_from, warm_ttl;
// docs/routing.md, "Warm-up from another pool"): the real memshard in
// front of a cold pool (sessions) and a warm one (feeds), each a real
// memcached, every copy checked on the servers themselves.
#include <gtest/gtest.h>

#include <set>
#include <string>
#include <thread>

#include "binary_util.h"
#include "harness.h"
#include "routes_fixture.h"

namespace memshard::testing::routes {
namespace {

const std::string kWarmRoute =
    "    - pool: sessions\n      warm_from: feeds\n      warm_ttl: 300\n";

void put(uint16_t port, const std::string& key, const std::string& value, uint32_t flags = 0) {
  RawClient c(port);
  ASSERT_EQ(c.roundtrip(set_command(key, value, "set", flags)), "STORED\r\n") << key;
}

// The copy's TTL as the cold server keeps it: warm_ttl, less the seconds
// since.
void expect_copied(uint16_t cold, const std::string& key, const std::string& value, long ttl) {
  const auto h = held_on(cold, key);
  ASSERT_TRUE(h) << key << " was not copied to the cold pool";
  EXPECT_EQ(h->value, value) << key;
  EXPECT_LE(h->ttl, ttl) << key;
  EXPECT_GE(h->ttl, ttl - 10) << key;
}

TEST_F(Routes, WarmFromAnswersAKeyOnlyWarmAndCopiesItColdWithWarmTtl) {
  start(config(kWarmRoute));
  put(server(kFeeds), "w:1", "warm-one", 5);
  RawClient c(port_);
  EXPECT_EQ(c.roundtrip("get w:1\r\n", "END\r\n"), "VALUE w:1 5 8\r\nwarm-one\r\nEND\r\n");
  // get copies behind its answer: wait for it.
  const auto deadline = Clock::now() + 5s;
  while (!held_on(server(kSessions), "w:1") && Clock::now() < deadline) {
    std::this_thread::sleep_for(10ms);
  }
  expect_copied(server(kSessions), "w:1", "warm-one", 300);
  // The copy keeps the flags.
  RawClient cold(server(kSessions));
  EXPECT_EQ(cold.roundtrip("get w:1\r\n", "END\r\n"), "VALUE w:1 5 8\r\nwarm-one\r\nEND\r\n");
  EXPECT_EQ(route_stat("front:(default):warm_lookups"), 1u);
  EXPECT_EQ(route_stat("front:(default):warm_hits"), 1u);
  // Counted once memshard has read the copy's answer.
  while (route_stat("front:(default):warm_copies") == 0 && Clock::now() < deadline) {
    std::this_thread::sleep_for(10ms);
  }
  EXPECT_EQ(route_stat("front:(default):warm_copies"), 1u);
  // Now it is cold: the warm pool is not asked again.
  EXPECT_EQ(c.roundtrip("get w:1\r\n", "END\r\n"), "VALUE w:1 5 8\r\nwarm-one\r\nEND\r\n");
  EXPECT_EQ(route_stat("front:(default):warm_lookups"), 1u);
}

TEST_F(Routes, WarmFromMultiGetGetsGatAndMetaGet) {
  start(config(kWarmRoute));
  put(server(kSessions), "m:cold", "C");
  put(server(kFeeds), "m:cold", "stale");  // the cold side wins
  put(server(kFeeds), "m:warm", "W");
  RawClient c(port_);
  EXPECT_EQ(c.roundtrip("get m:none m:warm m:cold\r\n", "END\r\n"),
            "VALUE m:warm 0 1\r\nW\r\nVALUE m:cold 0 1\r\nC\r\nEND\r\n");
  // gets: copied first, then read cold for a cas of the cold server's.
  put(server(kFeeds), "m:gets", "G");
  const std::string gets = c.roundtrip("gets m:gets\r\n", "END\r\n");
  EXPECT_EQ(gets.rfind("VALUE m:gets 0 1 ", 0), 0u) << gets;
  expect_copied(server(kSessions), "m:gets", "G", 300);
  // gat: the copy takes the gat's expiry.
  put(server(kFeeds), "m:gat", "T");
  EXPECT_EQ(c.roundtrip("gat 100 m:gat\r\n", "END\r\n"), "VALUE m:gat 0 1\r\nT\r\nEND\r\n");
  expect_copied(server(kSessions), "m:gat", "T", 100);
  // meta.
  put(server(kFeeds), "m:mg", "M", 9);
  EXPECT_EQ(c.roundtrip("mg m:mg v f\r\n"), "VA 1 f9\r\nM\r\n");
  expect_copied(server(kSessions), "m:mg", "M", 300);
  EXPECT_EQ(c.roundtrip("mg m:nowhere v\r\n"), "EN\r\n");
  // binary get.
  put(server(kFeeds), "m:bin", "B", 3);
  RawClient b(port_);
  b.send(bin::request(bin::kGetK, "m:bin"));
  auto f = bin::read_frame(b);
  ASSERT_TRUE(f);
  EXPECT_EQ(f->status, bin::kOk);
  EXPECT_EQ(f->value, "B");
  EXPECT_EQ(f->flags(), 3u);
  expect_copied(server(kSessions), "m:bin", "B", 300);
  // binary GAT: copied with its own expiry; GETKQ then NOOP: the hit
  // answered, the miss silent.
  put(server(kFeeds), "m:bgat", "G");
  b.send(bin::request(bin::kGat, "m:bgat", bin::touch_extras(200)));
  f = bin::read_frame(b);
  ASSERT_TRUE(f);
  EXPECT_EQ(f->status, bin::kOk);
  EXPECT_EQ(f->value, "G");
  expect_copied(server(kSessions), "m:bgat", "G", 200);
  put(server(kFeeds), "m:bq", "Q");
  b.send(bin::request(bin::kGetKQ, "m:bq") + bin::request(bin::kGetKQ, "m:bqnone") +
         bin::request(bin::kNoop));
  const auto frames = bin::read_frames_until(b, bin::kNoop);
  ASSERT_EQ(frames.size(), 2u) << bin::describe(frames);
  EXPECT_EQ(frames[0].key, "m:bq");
  EXPECT_EQ(frames[0].value, "Q");
  expect_copied(server(kSessions), "m:bq", "Q", 300);
  EXPECT_FALSE(held_on(server(kSessions), "m:none"));
}

TEST_F(Routes, WarmFromWritesGoToTheColdPoolOnly) {
  start(config(kWarmRoute));
  RawClient c(port_);
  ASSERT_EQ(c.roundtrip(set_command("wr:1", "new")), "STORED\r\n");
  ASSERT_EQ(c.roundtrip("ms wr:2 1\r\nm\r\n"), "HD\r\n");
  EXPECT_EQ(holders("wr:1"), std::set<Server>{kSessions});
  EXPECT_EQ(holders("wr:2"), std::set<Server>{kSessions});
  // A delete leaves the warm copy alone: the client's business, as in
  // mcrouter.
  put(server(kFeeds), "wr:3", "old");
  ASSERT_EQ(c.roundtrip("delete wr:3\r\n"), "NOT_FOUND\r\n");
  EXPECT_EQ(holders("wr:3"), std::set<Server>{kFeeds});
  // A miss in both is a miss, and copies nothing.
  EXPECT_EQ(c.roundtrip("get wr:none\r\n", "END\r\n"), "END\r\n");
  EXPECT_TRUE(holders("wr:none").empty());
  EXPECT_EQ(route_stat("front:(default):warm_hits"), 0u);
  EXPECT_EQ(route_stat("front:(default):warm_lookups"), 1u);
}

TEST_F(Routes, RingLookupShowsTheWarmPoolAndABlackhole) {
  config_ = dir_.write("memshard.yml",
                       config("    - prefix: \"junk:\"\n      blackhole: true\n" + kWarmRoute));
  const auto r = run_command(
      {memshard_binary(), "ring", "lookup", "-c", config_, "--pool", "front"}, "w:1\njunk:1\n");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.out.find("w:1\t(default)\tsessions\t" + fleet_[kSessions].address() +
                       "\twarm feeds\t" + fleet_[kFeeds].address()),
            std::string::npos)
      << r.out;
  EXPECT_NE(r.out.find("junk:1\tjunk:\t-\tblackhole"), std::string::npos) << r.out;
}

}  // namespace
}  // namespace memshard::testing::routes
