// Consistent-hashing properties every ketama mode must have: adding a server
// moves about 1/(N+1) of the keyspace and only onto it, removing one moves
// only its keys, shares are even, preference lists walk the ring.
#include <gtest/gtest.h>

#include <cmath>
#include <numeric>
#include <set>
#include <thread>

#include "ketama/analysis.h"
#include "ketama/ring.h"
#include "test_support.h"

namespace memshard::ketama {
namespace {

using testing::Random;

using testing::default_options;

class EveryMode : public ::testing::TestWithParam<Mode> {};

INSTANTIATE_TEST_SUITE_P(Modes, EveryMode,
                         ::testing::Values(Mode::twemproxy, Mode::libmemcached_weighted,
                                           Mode::libmemcached, Mode::libmemcached_spy,
                                           Mode::libketama, Mode::spymemcached),
                         [](const ::testing::TestParamInfo<Mode>& param) {
                           return std::string(mode_name(param.param));
                         });

TEST_P(EveryMode, AddingAServerMovesAboutOneOverNPlusOneOnlyOntoIt) {
  constexpr size_t kServers = 10;  // 10 and 11 both give full point counts
  std::vector<ServerEntry> servers = testing::numbered_servers(kServers);
  Ring before = Ring::build(servers, default_options(GetParam()));
  servers.push_back(testing::server("10.9.9.9", 11311));
  Ring after = Ring::build(servers, default_options(GetParam()));
  for (size_t i = 0; i < kServers; ++i) {
    ASSERT_EQ(before.point_count(i), after.point_count(i)) << "precondition: same points";
  }

  RingDiff d = diff(before, after);
  const double expected = 1.0 / (kServers + 1);
  EXPECT_NEAR(d.moved, expected, 0.3 * expected);
  ASSERT_EQ(d.servers.size(), kServers + 1);
  EXPECT_TRUE(d.servers.back().only_in_new);
  EXPECT_DOUBLE_EQ(d.servers.back().gained, d.moved);
  for (size_t i = 0; i < kServers; ++i) {
    EXPECT_EQ(d.servers[i].gained, 0.0) << i;
  }

  Random random(100);
  size_t moved = 0;
  constexpr size_t kKeys = 20000;
  for (size_t i = 0; i < kKeys; ++i) {
    std::string key = random.key();
    size_t old_owner = before.lookup(key);
    size_t new_owner = after.lookup(key);
    if (old_owner != new_owner) {
      ++moved;
      ASSERT_EQ(new_owner, kServers) << "key '" << key << "' moved between old servers";
    }
  }
  EXPECT_NEAR(static_cast<double>(moved) / kKeys, d.moved, 0.02);
}

TEST_P(EveryMode, RemovingAServerMovesOnlyItsKeys) {
  std::vector<ServerEntry> servers = testing::numbered_servers(11);
  Ring before = Ring::build(servers, default_options(GetParam()));
  std::vector<bool> live(11, true);
  live[4] = false;
  Ring after = Ring::build(servers, default_options(GetParam()), live);
  for (size_t i = 0; i < 11; ++i) {
    if (i != 4) {
      ASSERT_EQ(before.point_count(i), after.point_count(i)) << "precondition: same points";
    }
  }
  RingDiff d = diff(before, after);
  double removed_share = static_cast<double>(before.owned_hashes()[4]) / 4294967296.0;
  EXPECT_DOUBLE_EQ(d.moved, removed_share);
  EXPECT_DOUBLE_EQ(d.servers[4].lost, removed_share);

  Random random(101);
  for (int i = 0; i < 20000; ++i) {
    std::string key = random.key();
    size_t old_owner = before.lookup(key);
    if (old_owner != 4) {
      ASSERT_EQ(after.lookup(key), old_owner) << key;
    } else {
      ASSERT_NE(after.lookup(key), 4u);
    }
  }
}

// With 160 points a server's share is the sum of 160 arcs; the coefficient
// of variation of such sums is about 1/sqrt(160) = 7.9%. 100 points: 10%.
TEST_P(EveryMode, SharesAreEven) {
  Ring ring = Ring::build(testing::numbered_servers(200), default_options(GetParam()));
  RingReport report = describe(ring);
  size_t points = ring.point_count(0);
  double theory = 1.0 / std::sqrt(static_cast<double>(points));
  EXPECT_GT(report.share_cv, 0.6 * theory);
  EXPECT_LT(report.share_cv, 1.4 * theory);
  double total = 0;
  for (const ServerShare& s : report.servers) {
    total += s.share;
  }
  EXPECT_NEAR(total, 1.0, 1e-12);
}

TEST_P(EveryMode, PreferenceListWalksTheRingClockwise) {
  std::vector<ServerEntry> servers = testing::numbered_servers(12);
  std::vector<bool> live(12, true);
  live[2] = live[7] = false;
  Ring ring = Ring::build(servers, default_options(GetParam()), live);
  Random random(102);
  for (int i = 0; i < 500; ++i) {
    std::string key = random.key();
    std::vector<size_t> list = ring.preference_list(key, 4);
    ASSERT_EQ(list.size(), 4u);
    EXPECT_EQ(list[0], ring.lookup(key));
    // Brute force: servers in order of the points from the key's hash on.
    std::vector<size_t> expected;
    const std::vector<Point>& points = ring.points();
    uint32_t h = ring.hash_key(key);
    size_t start = 0;
    while (start < points.size() && points[start].value < h) {
      ++start;
    }
    for (size_t step = 0; step < points.size() && expected.size() < 4; ++step) {
      size_t s = points[(start + step) % points.size()].server;
      if (std::find(expected.begin(), expected.end(), s) == expected.end()) {
        expected.push_back(s);
      }
    }
    EXPECT_EQ(list, expected);
  }
  EXPECT_EQ(ring.preference_list("k", 100).size(), 10u);  // only the live ones
  EXPECT_TRUE(ring.preference_list("k", 0).empty());
}

TEST_P(EveryMode, OwnedHashesCoverTheKeyspaceAndMatchLookups) {
  Ring ring = Ring::build(Random(103).servers(30, true), default_options(GetParam()));
  std::vector<uint64_t> owned = ring.owned_hashes();
  EXPECT_EQ(std::accumulate(owned.begin(), owned.end(), uint64_t{0}), uint64_t{1} << 32);
  std::vector<Arc> arcs = ring.arcs();
  ASSERT_FALSE(arcs.empty());
  EXPECT_EQ(arcs.back().last, UINT32_MAX);
  for (size_t i = 1; i < arcs.size(); ++i) {
    ASSERT_LT(arcs[i - 1].last, arcs[i].last);
  }
  // Every arc's first and last value belong to its owner.
  uint64_t start = 0;
  for (const Arc& arc : arcs) {
    EXPECT_EQ(ring.server_for_hash(static_cast<uint32_t>(start)), arc.server);
    EXPECT_EQ(ring.server_for_hash(arc.last), arc.server);
    start = uint64_t{arc.last} + 1;
  }
}

// The ring is immutable: concurrent lookups see the same placement.
TEST_P(EveryMode, ConcurrentLookupsAgree) {
  Ring ring = Ring::build(testing::numbered_servers(50), default_options(GetParam()));
  std::vector<std::string> keys;
  Random random(104);
  for (int i = 0; i < 4000; ++i) {
    keys.push_back(random.key());
  }
  std::vector<size_t> expected;
  for (const std::string& k : keys) {
    expected.push_back(ring.lookup(k));
  }
  std::vector<size_t> mismatches(4, 0);
  std::vector<std::thread> threads;
  for (size_t t = 0; t < 4; ++t) {
    threads.emplace_back([&, t] {
      Ring copy = ring;  // copies share the state
      for (size_t i = 0; i < keys.size(); ++i) {
        mismatches[t] += copy.lookup(keys[i]) != expected[i] ? 1 : 0;
      }
    });
  }
  for (std::thread& th : threads) {
    th.join();
  }
  EXPECT_EQ(mismatches, std::vector<size_t>(4, 0));
}

}  // namespace
}  // namespace memshard::ketama
