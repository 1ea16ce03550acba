// Routing across pools behind one listener (docs/routing.md):
// the real memshard binary in front of real memcached servers, one
// or more per pool, every placement checked on the servers themselves.
// Counters, shadow reads and queue, zone copies' policies and a frozen
// server's gutter: routes_policies_test.cc.
#include <gtest/gtest.h>
#include <signal.h>

#include <atomic>
#include <chrono>
#include <map>
#include <optional>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include "binary_util.h"
#include "harness.h"
#include "reload_util.h"
#include "routes_fixture.h"

namespace memshard::testing::routes {
namespace {

TEST_F(Routes, EachPrefixGoesToItsPoolOverTextMetaAndBinary) {
  start(config(standard_routes()));
  RawClient c(port_);
  // Text.
  for (const std::string k : {"sess:t", "feed:t", "user:t", "other:t", "sess"}) {
    ASSERT_EQ(c.roundtrip(set_command(k, "v-" + k)), "STORED\r\n") << k;
  }
  // Meta.
  for (const std::string k : {"sess:m", "feed:m", "user:m", "other:m"}) {
    ASSERT_EQ(c.roundtrip("ms " + k + " 4\r\nmeta\r\n"), "HD\r\n") << k;
  }
  // Binary: a connection of its own, as memcached takes the first byte's
  // protocol for the connection's life.
  RawClient b(port_);
  for (const std::string k : {"sess:b", "feed:b", "user:b", "other:b"}) {
    b.send(bin::request(bin::kSet, k, bin::store_extras(0, 0), "bin"));
    const auto f = bin::read_frame(b);
    ASSERT_TRUE(f) << k;
    EXPECT_EQ(f->status, bin::kOk) << k;
  }
  for (const std::string tail : {"t", "m", "b"}) {
    EXPECT_EQ(holders("sess:" + tail), std::set<Server>{kSessions}) << tail;
    EXPECT_EQ(holders("feed:" + tail), (std::set<Server>{kFeeds, kFeedsNext})) << tail;
    EXPECT_EQ(holders("user:" + tail), (std::set<Server>{kZoneA, kZoneB})) << tail;
    EXPECT_TRUE(on_main("other:" + tail)) << tail;
  }
  // "sess" does not start with "sess:": the default route.
  EXPECT_TRUE(on_main("sess"));
}

TEST_F(Routes, LongestPrefixWins) {
  start(
      config("    - prefix: \"a\"\n      pool: feeds\n"
             "    - prefix: \"ab:\"\n      pool: sessions\n"
             "    - prefix: \"abc\"\n      pool: users_zone_a\n"
             "    - pool: main\n"));
  RawClient c(port_);
  for (const std::string k : {"a1", "ab:1", "abc1", "ab1", "b"}) {
    ASSERT_EQ(c.roundtrip(set_command(k, "x")), "STORED\r\n") << k;
  }
  EXPECT_EQ(holders("a1"), std::set<Server>{kFeeds});
  EXPECT_EQ(holders("ab1"), std::set<Server>{kFeeds});
  EXPECT_EQ(holders("ab:1"), std::set<Server>{kSessions});
  EXPECT_EQ(holders("abc1"), std::set<Server>{kZoneA});
  EXPECT_TRUE(on_main("b"));
}

TEST_F(Routes, MultiKeyCommandsAreSplitByRouteAndAnsweredInRequestOrder) {
  start(config(standard_routes()));
  const std::vector<std::string> keys = {"user:1", "sess:1", "x:1",    "feed:1", "sess:2",
                                         "miss:1", "user:2", "feed:2", "x:2",    "sess:3"};
  {
    Conn c(port_);
    for (const auto& k : keys) {
      if (k.rfind("miss", 0) == 0) continue;
      ASSERT_TRUE(c.set(k, "value of " + k)) << c.error();
    }
    std::vector<Hit> hits;
    ASSERT_TRUE(c.get(keys, hits)) << c.error();
    std::vector<std::string> order;
    for (const auto& h : hits) {
      EXPECT_EQ(h.data, "value of " + h.key);
      order.push_back(h.key);
    }
    std::vector<std::string> want = keys;
    std::erase(want, "miss:1");
    EXPECT_EQ(order, want);
  }
  // gets carries a CAS from each pool's server.
  RawClient c(port_);
  const std::string gets = c.roundtrip("gets sess:1 x:1 feed:1\r\n", "END\r\n");
  std::vector<Value> values;
  ASSERT_TRUE(parse_values(gets, values)) << printable(gets);
  ASSERT_EQ(values.size(), 3u);
  for (const auto& v : values) EXPECT_FALSE(v.cas.empty()) << v.key;
  // Binary quiet gets with a noop: hits in request order, then the noop.
  std::string frames;
  for (size_t i = 0; i < keys.size(); ++i) {
    frames += bin::request(bin::kGetKQ, keys[i], {}, {}, static_cast<uint32_t>(i));
  }
  frames += bin::request(bin::kNoop);
  RawClient b(port_);
  b.send(frames);
  const auto got = bin::read_frames_until(b, bin::kNoop);
  ASSERT_EQ(got.size(), keys.size()) << bin::describe(got);  // 9 hits and the noop
  std::vector<std::string> order;
  for (size_t i = 0; i + 1 < got.size(); ++i) {
    EXPECT_EQ(got[i].value, "value of " + got[i].key);
    order.push_back(got[i].key);
  }
  std::vector<std::string> want = keys;
  std::erase(want, "miss:1");
  EXPECT_EQ(order, want);
  // Meta gets pipelined across routes, closed by mn.
  const std::string meta =
      c.roundtrip("mg sess:2 v k\r\nmg x:2 v k\r\nmg miss:1 v k\r\nmn\r\n", "MN\r\n");
  EXPECT_EQ(meta,
            "VA 15 ksess:2\r\nvalue of sess:2\r\nVA 12 kx:2\r\nvalue of x:2\r\nEN kmiss:1\r\n"
            "MN\r\n");
}

TEST_F(Routes, AKeyNoRouteTakesIsAClientErrorAndTheConnectionGoesOn) {
  start(config("    - prefix: \"sess:\"\n      pool: sessions\n"));
  RawClient c(port_);
  EXPECT_EQ(c.roundtrip(set_command("other", "x")), "CLIENT_ERROR no route for this key\r\n");
  EXPECT_EQ(c.roundtrip("get other\r\n"), "CLIENT_ERROR no route for this key\r\n");
  // One key without a route fails the whole multi-get, as one bad key does
  // in memcached.
  EXPECT_EQ(c.roundtrip("get sess:1 other\r\n"), "CLIENT_ERROR no route for this key\r\n");
  EXPECT_EQ(c.roundtrip("mg other v\r\n"), "CLIENT_ERROR no route for this key\r\n");
  // noreply: silence, and the next command is answered.
  c.send("set other 0 0 1 noreply\r\nx\r\n");
  EXPECT_EQ(c.roundtrip(set_command("sess:1", "y")), "STORED\r\n");
  RawClient b(port_);
  b.send(bin::request(bin::kGet, "other"));
  const auto f = bin::read_frame(b);
  ASSERT_TRUE(f);
  // memshard's binary answer for every CLIENT_ERROR line.
  EXPECT_EQ(f->status, bin::kInvalidArguments);
  EXPECT_EQ(c.roundtrip("get sess:1\r\n", "END\r\n"), "VALUE sess:1 0 1\r\ny\r\nEND\r\n");
  EXPECT_TRUE(holders("other").empty());
}

TEST_F(Routes, FlushAllReachesEveryPoolBehindTheListener) {
  start(config(standard_routes(), "  gutter: spare\n"));
  Conn c(port_);
  for (const std::string k : {"sess:f", "feed:f", "user:f", "x:f", "y:f", "z:f"}) {
    ASSERT_TRUE(c.set(k, "v")) << c.error();
  }
  ASSERT_TRUE(fleet_[kSpare].port() != 0);
  {
    RawClient direct(server(kSpare));
    ASSERT_EQ(direct.roundtrip(set_command("in-spare", "v")), "STORED\r\n");
  }
  RawClient r(port_);
  EXPECT_EQ(r.roundtrip("flush_all\r\n"), "OK\r\n");
  for (const std::string k : {"sess:f", "feed:f", "user:f", "x:f", "y:f", "z:f", "in-spare"}) {
    EXPECT_TRUE(holders(k).empty()) << k;
  }
}

// The shadow share is chosen by the key: the same keys each time, about
// the share of them, and none of the others.
TEST_F(Routes, AShadowShareCopiesTheSameKeysEachTime) {
  start(config(standard_routes("10%")));
  Conn c(port_);
  std::vector<std::string> keys;
  for (int i = 0; i < 2000; ++i) keys.push_back("feed:" + std::to_string(i));
  for (const auto& k : keys) ASSERT_TRUE(c.set(k, "first")) << c.error();
  std::set<std::string> shadowed;
  for (const auto& k : keys) {
    if (held_on(server(kFeedsNext), k)) shadowed.insert(k);
    ASSERT_TRUE(held_on(server(kFeeds), k)) << k;
  }
  EXPECT_GT(shadowed.size(), 100u);
  EXPECT_LT(shadowed.size(), 300u);
  for (const auto& k : keys) ASSERT_TRUE(c.set(k, "second")) << c.error();
  for (const auto& k : keys) {
    const auto h = held_on(server(kFeedsNext), k);
    EXPECT_EQ(h.has_value(), shadowed.count(k) == 1) << k;
    if (h) {
      EXPECT_EQ(h->value, "second") << k;
    }
  }
  EXPECT_EQ(route_stat("front:feed::requests"), 4000u);
  EXPECT_EQ(route_stat("front:feed::shadow_sent"), 2 * shadowed.size());
}

// A shadow pool that is down or frozen costs the clients nothing: no error
// and no wait for it; its failures are counted.
TEST_F(Routes, AShadowThatIsDeadOrFrozenCostsTheClientsNothing) {
  start(config(standard_routes()));
  {
    Conn c(port_);
    ASSERT_TRUE(c.set("feed:warm", "v")) << c.error();
  }
  ASSERT_TRUE(fleet_[kFeedsNext].process().suspend());
  const auto frozen_from = Clock::now();
  {
    Conn c(port_);
    for (int i = 0; i < 300; ++i) {
      const std::string k = "feed:frozen" + std::to_string(i);
      ASSERT_TRUE(c.set(k, "v")) << c.error();
      std::vector<Hit> hits;
      ASSERT_TRUE(c.get({k}, hits)) << c.error();
      ASSERT_EQ(hits.size(), 1u) << k;
    }
  }
  // 600 requests that waited for a shadow with a 200 ms timeout would take
  // two minutes; unwaited, they take milliseconds.
  EXPECT_LT(Clock::now() - frozen_from, 20s);
  fleet_[kFeedsNext].process().resume();
  fleet_[kFeedsNext].process().stop();
  {
    Conn c(port_);
    for (int i = 0; i < 100; ++i) {
      const std::string k = "feed:dead" + std::to_string(i);
      ASSERT_TRUE(c.set(k, "v")) << c.error();
    }
  }
  const auto deadline = Clock::now() + 5s;
  while (route_stat("front:feed::shadow_failed") + route_stat("front:feed::shadow_dropped") == 0 &&
         Clock::now() < deadline) {
    std::this_thread::sleep_for(50ms);
  }
  EXPECT_GT(route_stat("front:feed::shadow_failed") + route_stat("front:feed::shadow_dropped"), 0u);
  EXPECT_EQ(route_stat("front:feed::errors"), 0u);
}

TEST_F(Routes, ZoneCopiesAreReadFromTheOtherZoneWhenOneIsDown) {
  start(config(standard_routes()));
  {
    Conn c(port_);
    for (int i = 0; i < 50; ++i) ASSERT_TRUE(c.set("user:" + std::to_string(i), "z")) << c.error();
  }
  for (int i = 0; i < 50; ++i) {
    EXPECT_EQ(holders("user:" + std::to_string(i)), (std::set<Server>{kZoneA, kZoneB}));
  }
  fleet_[kZoneA].process().stop();
  Conn c(port_);
  for (int i = 0; i < 50; ++i) {
    std::vector<Hit> hits;
    ASSERT_TRUE(c.get({"user:" + std::to_string(i)}, hits)) << c.error();
    ASSERT_EQ(hits.size(), 1u) << i;
    EXPECT_EQ(hits[0].data, "z");
  }
}

// A dead server's keys go to the gutter pool for gutter_ttl seconds at
// most, not onto the ring's next server; once it is back they are its own
// again.
TEST_F(Routes, ADeadServersKeysGoToTheGutterWithACappedTtl) {
  start(config(standard_routes(),
               "  auto_eject_hosts: true\n  server_failure_limit: 1\n"
               "  server_retry_timeout: 1000\n  gutter: spare\n  gutter_ttl: 7\n"));
  // Keys of main's first server.
  std::vector<std::string> own;
  {
    Conn c(port_);
    for (int i = 0; own.size() < 20 && i < 400; ++i) {
      const std::string k = std::to_string(i) + ":g";
      ASSERT_TRUE(c.set(k, "before")) << c.error();
      if (held_on(server(kMainA), k)) own.push_back(k);
    }
  }
  ASSERT_EQ(own.size(), 20u);
  fleet_[kMainA].process().stop();
  size_t stored = 0;
  {
    // The first request may meet the failure in flight: it is retried on
    // the gutter, so each is STORED.
    Conn c(port_);
    for (const auto& k : own) {
      if (!c.set(k, "during")) {
        ADD_FAILURE() << k << ": " << c.error();
        break;
      }
      ++stored;
    }
  }
  EXPECT_EQ(stored, own.size());
  Conn c(port_);
  for (const auto& k : own) {
    const auto in_spare = held_on(server(kSpare), k);
    ASSERT_TRUE(in_spare) << k;
    EXPECT_EQ(in_spare->value, "during");
    EXPECT_GE(in_spare->ttl, 1) << k;
    EXPECT_LE(in_spare->ttl, 7) << k;
    EXPECT_FALSE(held_on(server(kMainB), k)) << k << " went to the ring's next server";
    std::vector<Hit> hits;
    ASSERT_TRUE(c.get({k}, hits)) << c.error();
    ASSERT_EQ(hits.size(), 1u);
    EXPECT_EQ(hits[0].data, "during");
  }
  {
    RawClient r(port_);
    const std::string stats = r.roundtrip("stats\r\n", "END\r\n");
    EXPECT_GE(std::stoull(stat_value(stats, "main:gutter_sets").value_or("0")), own.size());
  }
  // A TTL the client asks for above the cap is capped; below it is kept.
  ASSERT_TRUE(c.send("set " + own[0] + " 0 3 1\r\nx\r\n"));
  std::string reply;
  ASSERT_TRUE(c.read_line(reply));
  EXPECT_EQ(reply, "STORED");
  EXPECT_LE(held_on(server(kSpare), own[0])->ttl, 3);

  // Back: after the retry timeout the server is readmitted and its keys go
  // to it again.
  fleet_[kMainA].restart();
  const auto deadline = Clock::now() + 10s;
  bool home = false;
  while (!home && Clock::now() < deadline) {
    Conn w(port_);
    home = w.set(own[1], "after") && held_on(server(kMainA), own[1]).has_value();
    if (!home) std::this_thread::sleep_for(200ms);
  }
  EXPECT_TRUE(home) << log_tail();
}

TEST_F(Routes, RoutesCountTheirRequestsHitsAndMisses) {
  start(config(standard_routes()));
  Conn c(port_);
  ASSERT_TRUE(c.set("sess:a", "1")) << c.error();
  std::vector<Hit> hits;
  ASSERT_TRUE(c.get({"sess:a"}, hits));
  ASSERT_TRUE(c.get({"sess:b"}, hits));
  ASSERT_TRUE(c.get({"sess:a", "x"}, hits));
  EXPECT_EQ(route_stat("front:sess::requests"), 4u);
  EXPECT_EQ(route_stat("front:sess::hits"), 2u);
  EXPECT_EQ(route_stat("front:sess::misses"), 1u);
  EXPECT_EQ(route_stat("front:(default):requests"), 1u);
  EXPECT_EQ(route_stat("front:(default):misses"), 1u);
}

// A SIGHUP changes the routes while clients keep going: no client sees an
// error, and keys go where the new routes say.
TEST_F(Routes, ASighupChangesTheRoutesWithoutAClientError) {
  start(config("    - pool: main\n"));
  std::atomic<bool> done{false};
  std::atomic<uint64_t> requests{0}, errors{0};
  std::vector<std::thread> load;
  for (int t = 0; t < 2; ++t) {
    load.emplace_back([&, t] {
      Conn c(port_);
      const auto deadline = Clock::now() + 20s;
      for (uint64_t i = 0; !done && Clock::now() < deadline; ++i) {
        const std::string k =
            (i % 2 ? "sess:" : "k:") + std::to_string(t) + ":" + std::to_string(i % 200);
        // A key set by the old routes and read by the new ones can miss
        // (its pool changed in between): a miss, not an error.
        std::vector<Hit> hits;
        if (!c.set(k, "v") || !c.get({k}, hits)) {
          errors.fetch_add(1);
          ADD_FAILURE() << c.error();
          return;
        }
        requests.fetch_add(2);
      }
    });
  }
  std::this_thread::sleep_for(300ms);
  dir_.write("memshard.yml", config(standard_routes()));
  proxy_->process().signal(SIGHUP);
  const auto gen = reload::wait_stat(port_, "config_generation", [](uint64_t g) { return g >= 2; });
  ASSERT_TRUE(gen) << log_tail();
  std::this_thread::sleep_for(300ms);
  done = true;
  for (auto& t : load) t.join();
  EXPECT_EQ(errors.load(), 0u);
  EXPECT_GT(requests.load(), 100u);
  Conn c(port_);
  ASSERT_TRUE(c.set("sess:after", "v"));
  EXPECT_EQ(holders("sess:after"), std::set<Server>{kSessions});
}

// Configs that cannot work are refused, by `-t` and by a reload, which
// keeps the routes in force.
TEST_F(Routes, ARefusedConfigNamesTheProblemAndAReloadKeepsTheRoutesInForce) {
  const std::string good = config(standard_routes());
  struct Bad {
    std::string yaml, says;
  };
  const std::vector<Bad> bad = {
      {config("    - prefix: \"a\"\n      pool: nowhere\n"), "nowhere"},
      {config("    - prefix: \"a\"\n      pool: front\n"), "front"},
      {config(standard_routes(), "  gutter: main\n"), "gutter"},
  };
  for (const auto& b : bad) {
    const std::string path = dir_.write("bad.yml", b.yaml);
    const auto r = run_command({memshard_binary(), "-t", "-c", path});
    EXPECT_NE(r.exit_code, 0) << b.says;
    EXPECT_NE((r.out + r.err).find(b.says), std::string::npos) << r.out << r.err;
    EXPECT_NE((r.out + r.err).find("bad.yml"), std::string::npos) << r.out << r.err;
  }
  start(good);
  dir_.write("memshard.yml", bad[0].yaml);
  proxy_->process().signal(SIGHUP);
  const auto failures =
      reload::wait_stat(port_, "config_reload_failures", [](uint64_t v) { return v >= 1; });
  ASSERT_TRUE(failures) << log_tail();
  Conn c(port_);
  ASSERT_TRUE(c.set("sess:kept", "v")) << c.error();
  EXPECT_EQ(holders("sess:kept"), std::set<Server>{kSessions});
}

TEST_F(Routes, RingLookupShowsEachKeysRouteAndServers) {
  config_ = dir_.write("memshard.yml", config(standard_routes()));
  const auto r =
      run_command({memshard_binary(), "ring", "lookup", "-c", config_, "--pool", "front"},
                  "sess:1\nuser:1\nfeed:1\n");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const std::string sessions = fleet_[kSessions].address();
  EXPECT_NE(r.out.find("sess:1\tsess:\tsessions\t" + sessions), std::string::npos) << r.out;
  EXPECT_NE(r.out.find(fleet_[kZoneA].address()), std::string::npos) << r.out;
  EXPECT_NE(r.out.find(fleet_[kZoneB].address()), std::string::npos) << r.out;
  // The 100% shadow takes feed:1: where its copy goes.
  EXPECT_NE(r.out.find("feed:1\tfeed:\tfeeds\t" + fleet_[kFeeds].address() +
                       "\tshadow feeds_next\t" + fleet_[kFeedsNext].address()),
            std::string::npos)
      << r.out;
}

}  // namespace
}  // namespace memshard::testing::routes
