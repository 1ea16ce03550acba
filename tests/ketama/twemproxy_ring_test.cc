// twemproxy mode: recorded placements of a live nutcracker 0.5.0, and the
// structure of the ring (names, order, point counts, truncation, hash_tag,
// single server, auto_eject, modula and random).
#include <gtest/gtest.h>

#include <algorithm>
#include <numeric>
#include <set>

#include "ketama/continuum.h"
#include "ketama/ring.h"
#include "test_support.h"

namespace memshard::ketama {
namespace {

using testing::server;
using testing::unix_socket;

struct RecordedServer {
  const char* host;
  uint16_t port;
  uint32_t weight;
  const char* name;
};
struct RecordedKey {
  std::string key;
  size_t server;
};
struct RecordedPool {
  const char* pool;
  const char* hash;
  const char* distribution;
  const char* hash_tag;
  std::vector<RecordedServer> servers;
  std::vector<RecordedKey> keys;
};

const std::vector<RecordedPool>& recorded_pools() {
  static const std::vector<RecordedPool> pools = {
#include "nutcracker_vectors.inc"
  };
  return pools;
}

TEST(TwemproxyRing, PlacesKeysWhereLiveNutcrackerPutThem) {
  ASSERT_GE(recorded_pools().size(), 12u);
  for (const RecordedPool& pool : recorded_pools()) {
    SCOPED_TRACE(pool.pool);
    std::vector<ServerEntry> servers;
    for (const RecordedServer& s : pool.servers) {
      servers.push_back(server(s.host, s.port, s.weight, s.name));
    }
    RingOptions options;
    options.hash = parse_hash_name(pool.hash).value();
    options.distribution = parse_distribution_name(pool.distribution).value();
    options.hash_tag = pool.hash_tag;
    Ring ring = Ring::build(servers, options);
    for (const RecordedKey& k : pool.keys) {
      EXPECT_EQ(ring.lookup(k.key), k.server) << "key '" << k.key << "'";
    }
  }
}

TEST(TwemproxyRing, RingNames) {
  Ring ring =
      Ring::build({server("10.0.0.1"), server("10.0.0.2", 22122),
                   server("10.0.0.3", 11211, 1, "alpha"), server("cache.example.com"),
                   unix_socket("/var/run/memcached.sock"), unix_socket("/tmp/m.sock", 1, "sock")},
                  RingOptions{});
  EXPECT_EQ(ring.ring_name(0), "10.0.0.1");
  EXPECT_EQ(ring.ring_name(1), "10.0.0.2:22122");
  EXPECT_EQ(ring.ring_name(2), "alpha");
  EXPECT_EQ(ring.ring_name(3), "cache.example.com");
  EXPECT_EQ(ring.ring_name(4), "/var/run/memcached.sock:");
  EXPECT_EQ(ring.ring_name(5), "sock");
}

TEST(TwemproxyRing, ServersAreOrderedByNameShorterFirst) {
  std::vector<std::string> names = {"ab", "b", "aa", "a", "ba", "\xff", "c"};
  std::vector<uint32_t> order = detail::twemproxy_order(names);
  std::vector<std::string> sorted;
  for (uint32_t i : order) {
    sorted.push_back(names[i]);
  }
  EXPECT_EQ(sorted, (std::vector<std::string>{"a", "b", "c", "\xff", "aa", "ab", "ba"}));

  // The order is what modula indexes.
  RingOptions options;
  options.distribution = Distribution::modula;
  Ring ring = Ring::build({server("h", 1, 1, "bb"), server("h", 2, 2, "a"), server("h", 3, 1, "c")},
                          options);
  EXPECT_EQ(ring.slots(), (std::vector<uint32_t>{1, 1, 2, 0}));
}

// Equal points on two servers: the search stops at the first, and twemproxy
// keeps them in sorted-name order. A 3000-server ring (480000 points) has
// about 27 such ties.
TEST(TwemproxyRing, TiesGoToTheServerFirstInNameOrder) {
  std::vector<ServerEntry> servers = testing::numbered_servers(3000, 22122);
  Ring ring = Ring::build(servers, RingOptions{});
  std::vector<std::string> names;
  for (size_t i = 0; i < servers.size(); ++i) {
    names.push_back(ring.ring_name(i));
  }
  std::vector<uint32_t> order = detail::twemproxy_order(names);
  std::vector<uint32_t> rank(servers.size());
  for (uint32_t r = 0; r < order.size(); ++r) {
    rank[order[r]] = r;
  }
  const std::vector<Point>& points = ring.points();
  size_t ties = 0;
  for (size_t i = 1; i < points.size(); ++i) {
    if (points[i].value == points[i - 1].value && points[i].server != points[i - 1].server) {
      ++ties;
      EXPECT_LT(rank[points[i - 1].server], rank[points[i].server]);
      EXPECT_EQ(ring.server_for_hash(points[i].value), points[i - 1].server);
    }
  }
  EXPECT_GT(ties, 0u) << "no tie to check; pick another server set";
}

TEST(TwemproxyRing, EqualWeightsGive156PointsForSomeServerCounts) {
  std::vector<size_t> short_counts;
  for (size_t n = 2; n <= 64; ++n) {
    Ring ring = Ring::build(testing::numbered_servers(n), RingOptions{});
    std::set<size_t> counts;
    for (size_t i = 0; i < n; ++i) {
      counts.insert(ring.point_count(i));
    }
    ASSERT_EQ(counts.size(), 1u) << n << " equal servers";
    if (*counts.begin() != 160) {
      EXPECT_EQ(*counts.begin(), 156u) << n;
      short_counts.push_back(n);
    }
    EXPECT_EQ(ring.points().size(), n * *counts.begin());
  }
  for (size_t n : {25, 47, 50, 55, 61}) {
    EXPECT_NE(std::find(short_counts.begin(), short_counts.end(), n), short_counts.end()) << n;
  }
  EXPECT_EQ(std::find(short_counts.begin(), short_counts.end(), 10u), short_counts.end());
}

TEST(TwemproxyRing, AVeryLightServerGetsNoPoints) {
  Ring ring = Ring::build({server("10.0.0.1", 11211, 1), server("10.0.0.2", 11211, 1000000)},
                          RingOptions{});
  EXPECT_EQ(ring.point_count(0), 0u);
  // Not 320: (float)1000000 / 1000001 * 40 * 2 is 79.99992, floored to 79.
  EXPECT_EQ(ring.point_count(1), 316u);
  EXPECT_EQ(ring.owned_hashes()[0], 0u);
  testing::Random random(3);
  for (int i = 0; i < 1000; ++i) {
    EXPECT_EQ(ring.lookup(random.key()), 1u);
  }
}

TEST(TwemproxyRing, WeightsScalePointCounts) {
  Ring ring = Ring::build({server("a", 1, 1), server("b", 1, 2), server("c", 1, 3)}, RingOptions{});
  // pct * 40 * 3: 1/6 -> 20, 2/6 -> 40, 3/6 -> 60 digests of 4 points.
  EXPECT_EQ(ring.point_count(0), 80u);
  EXPECT_EQ(ring.point_count(1), 160u);
  EXPECT_EQ(ring.point_count(2), 240u);
}

TEST(TwemproxyRing, LongPointStringsAreCutAt272Characters) {
  EXPECT_EQ(detail::twemproxy_point_string("abc", 7), "abc-7");
  std::string name(269, 'x');
  EXPECT_EQ(detail::twemproxy_point_string(name, 9), name + "-9");    // 271: fits
  EXPECT_EQ(detail::twemproxy_point_string(name, 39), name + "-39");  // 272: fits
  std::string longer(270, 'y');
  EXPECT_EQ(detail::twemproxy_point_string(longer, 10), longer + "-1");  // 273: cut
  std::string very_long(1000, 'z');
  EXPECT_EQ(detail::twemproxy_point_string(very_long, 3), std::string(272, 'z'));
  // Two servers whose names differ only after character 272 get the same
  // points: the cut is real, not an artefact of the test.
  Ring ring = Ring::build({server("h", 1, 1, very_long + "1"), server("h", 2, 1, very_long + "2")},
                          RingOptions{});
  for (size_t i = 0; i + 1 < ring.points().size(); i += 2) {
    EXPECT_EQ(ring.points()[i].value, ring.points()[i + 1].value);
  }
}

TEST(TwemproxyRing, HashTagHashesOnlyTheTaggedPart) {
  RingOptions options;
  options.hash_tag = "{}";
  Ring ring = Ring::build(testing::numbered_servers(10), options);
  auto h = [](std::string_view s) { return hash(HashFunction::fnv1a_64, s); };
  EXPECT_EQ(ring.hash_key("user:{42}:name"), h("42"));
  EXPECT_EQ(ring.hash_key("{42}"), h("42"));
  EXPECT_EQ(ring.hash_key("a{b}c{d}"), h("b"));
  EXPECT_EQ(ring.hash_key("x}y{z}"), h("z"));
  EXPECT_EQ(ring.hash_key("user:{}:name"), h("user:{}:name"));  // nothing between
  EXPECT_EQ(ring.hash_key("user:{42"), h("user:{42"));          // never closed
  EXPECT_EQ(ring.hash_key("plain"), h("plain"));
  EXPECT_EQ(ring.lookup("a:{42}"), ring.lookup("b:{42}:c"));

  options.hash_tag = "$$";
  Ring dollars = Ring::build(testing::numbered_servers(10), options);
  EXPECT_EQ(dollars.hash_key("a$bc$d"), h("bc"));

  options.hash_tag = "{";
  EXPECT_THROW(Ring::build(testing::numbered_servers(2), options), std::invalid_argument);
}

TEST(TwemproxyRing, EmptyKeyHashesToZero) {
  Ring ring = Ring::build(testing::numbered_servers(5), RingOptions{});
  EXPECT_EQ(ring.hash_key(""), 0u);
  EXPECT_EQ(ring.lookup(""), ring.server_for_hash(0));
}

TEST(TwemproxyRing, OneServerTakesEveryKeyWithoutHashing) {
  Ring ring = Ring::build({server("10.0.0.1")}, RingOptions{});
  EXPECT_EQ(ring.lookup("anything"), 0u);
  EXPECT_EQ(ring.server_for_hash(123), 0u);
  EXPECT_EQ(ring.owned_hashes(), std::vector<uint64_t>{uint64_t{1} << 32});
  EXPECT_EQ(ring.arcs().size(), 1u);

  Ring dead = Ring::build({server("10.0.0.1")}, RingOptions{}, {false});
  EXPECT_EQ(dead.lookup("anything"), Ring::npos);
}

TEST(TwemproxyRing, EjectedServersLeaveAndCountsFollowTheLiveOnes) {
  std::vector<ServerEntry> servers = testing::numbered_servers(25);
  std::vector<bool> live(25, true);
  live[3] = false;
  live[17] = false;
  Ring ejected = Ring::build(servers, RingOptions{}, live);
  // 23 live servers: 160 points each (25 would give 156).
  EXPECT_EQ(ejected.point_count(0), 160u);
  EXPECT_EQ(ejected.point_count(3), 0u);
  EXPECT_FALSE(ejected.is_live(3));
  EXPECT_EQ(ejected.owned_hashes()[17], 0u);

  // Same placement as a ring of the live servers only, indices mapped back.
  std::vector<ServerEntry> survivors;
  std::vector<size_t> original;
  for (size_t i = 0; i < servers.size(); ++i) {
    if (live[i]) {
      survivors.push_back(servers[i]);
      original.push_back(i);
    }
  }
  Ring rebuilt = Ring::build(survivors, RingOptions{});
  testing::Random random(11);
  for (int i = 0; i < 5000; ++i) {
    std::string key = random.key();
    EXPECT_EQ(ejected.lookup(key), original[rebuilt.lookup(key)]);
  }

  Ring none = Ring::build(servers, RingOptions{}, std::vector<bool>(25, false));
  EXPECT_EQ(none.lookup("k"), Ring::npos);
  EXPECT_TRUE(none.preference_list("k", 3).empty());
  EXPECT_TRUE(none.arcs().empty());
}

TEST(TwemproxyRing, ModulaOwnsExactResidueCounts) {
  RingOptions options;
  options.distribution = Distribution::modula;
  Ring ring = Ring::build({server("a", 1, 3), server("b", 1, 1), server("c", 1, 3)}, options);
  ASSERT_EQ(ring.slots().size(), 7u);
  std::vector<uint64_t> owned = ring.owned_hashes();
  // 2^32 = 7 * 613566756 + 4: slots 0..3 get one extra value.
  EXPECT_EQ(owned[0], 3 * uint64_t{613566756} + 3);
  EXPECT_EQ(owned[1], uint64_t{613566756} + 1);
  EXPECT_EQ(owned[2], 3 * uint64_t{613566756});
  EXPECT_EQ(std::accumulate(owned.begin(), owned.end(), uint64_t{0}), uint64_t{1} << 32);
  EXPECT_EQ(ring.server_for_hash(0), 0u);
  EXPECT_EQ(ring.server_for_hash(3), 1u);
  EXPECT_EQ(ring.server_for_hash(6), 2u);
  EXPECT_EQ(ring.server_for_hash(7), 0u);
  EXPECT_TRUE(ring.points().empty());
}

TEST(TwemproxyRing, RandomPicksOnlyLiveServers) {
  RingOptions options;
  options.distribution = Distribution::random;
  Ring ring = Ring::build(testing::numbered_servers(4), options, {true, false, true, true});
  std::set<size_t> seen;
  for (int i = 0; i < 2000; ++i) {
    size_t s = ring.lookup("same key");
    ASSERT_NE(s, 1u);
    seen.insert(s);
  }
  EXPECT_EQ(seen, (std::set<size_t>{0, 2, 3}));
  std::vector<uint64_t> owned = ring.owned_hashes();
  EXPECT_EQ(owned[1], 0u);
  EXPECT_EQ(std::accumulate(owned.begin(), owned.end(), uint64_t{0}), uint64_t{1} << 32);
}

TEST(TwemproxyRing, ARingOfNoServersPlacesNoKey) {
  const Ring none = Ring::none();
  EXPECT_EQ(none.lookup("k"), Ring::npos);
  EXPECT_TRUE(none.servers().empty());
  EXPECT_TRUE(none.preference_list("k", 2).empty());
  EXPECT_TRUE(none.arcs().empty());
}

TEST(TwemproxyRing, RejectsBadInput) {
  EXPECT_THROW(Ring::build({}, RingOptions{}), std::invalid_argument);
  EXPECT_THROW(Ring::build(testing::numbered_servers(2), RingOptions{}, {true}),
               std::invalid_argument);
}

}  // namespace
}  // namespace memshard::ketama
