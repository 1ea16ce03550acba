// The three libmemcached modes against Debian's libmemcached 1.1.4 itself.
#include <gtest/gtest.h>

#include "ketama/ring.h"
#include "libmemcached_oracle.h"
#include "test_support.h"

namespace memshard::ketama {
namespace {

using testing::LibmemcachedOracle;
using testing::Random;
using testing::server;

// Compares every key's server; reports the first few mismatches.
void expect_same_placement(const Ring& ring, const LibmemcachedOracle& oracle,
                           const std::vector<std::string>& keys) {
  size_t mismatches = 0;
  for (const std::string& key : keys) {
    size_t ours = ring.lookup(key);
    size_t theirs = oracle.server_for(key);
    if (ours != theirs && ++mismatches <= 5) {
      ADD_FAILURE() << "key '" << key << "': ring says " << ours << ", libmemcached says "
                    << theirs;
    }
  }
  EXPECT_EQ(mismatches, 0u) << "of " << keys.size() << " keys";
}

std::vector<std::string> random_keys(Random& random, size_t count) {
  std::vector<std::string> keys;
  for (size_t i = 0; i < count; ++i) {
    keys.push_back(random.key());
  }
  return keys;
}

RingOptions options_for(Mode mode, HashFunction hash = HashFunction::one_at_a_time) {
  RingOptions o;
  o.mode = mode;
  o.hash = hash;
  return o;
}

struct ModeCase {
  Mode mode;
  bool weights;
};

class LibmemcachedModes : public ::testing::TestWithParam<ModeCase> {};

// Many random server lists (IP literals, hostnames, port 11211 and others,
// with and without weights), thousands of keys each.
TEST_P(LibmemcachedModes, RandomServerSetsPlaceKeysLikeLibmemcached) {
  ModeCase c = GetParam();
  Random random(0x6b6574616d61 + static_cast<uint64_t>(c.mode) * 2 + (c.weights ? 1 : 0));
  for (int round = 0; round < 40; ++round) {
    // libmemcached asserts at more than 100 servers (MEMCACHED_CONTINUUM_SIZE).
    size_t count = 1 + random.below(round < 30 ? 30 : 100);
    std::vector<ServerEntry> servers = random.servers(count, c.weights);
    Ring ring = Ring::build(servers, options_for(c.mode));
    LibmemcachedOracle oracle(c.mode, servers, std::nullopt);
    SCOPED_TRACE("round " + std::to_string(round) + ", " + std::to_string(count) + " servers");
    expect_same_placement(ring, oracle, random_keys(random, 2000));
  }
}

INSTANTIATE_TEST_SUITE_P(AllModes, LibmemcachedModes,
                         ::testing::Values(ModeCase{Mode::libmemcached_weighted, false},
                                           ModeCase{Mode::libmemcached_weighted, true},
                                           ModeCase{Mode::libmemcached, false},
                                           ModeCase{Mode::libmemcached, true},
                                           ModeCase{Mode::libmemcached_spy, false},
                                           ModeCase{Mode::libmemcached_spy, true}),
                         [](const ::testing::TestParamInfo<ModeCase>& param) {
                           return std::string(mode_name(param.param.mode)) +
                                  (param.param.weights ? "_weighted_servers" : "_equal_weights");
                         });

// The plain modes hash points and keys with the pool's hash.
TEST(LibmemcachedCompat, PlainModesHonourTheConfiguredHash) {
  Random random(42);
  const HashFunction hashes[] = {
      HashFunction::one_at_a_time, HashFunction::md5,      HashFunction::crc32,
      HashFunction::fnv1_64,       HashFunction::fnv1a_64, HashFunction::fnv1_32,
      HashFunction::fnv1a_32,      HashFunction::murmur,   HashFunction::jenkins};
  for (Mode mode : {Mode::libmemcached, Mode::libmemcached_spy}) {
    for (HashFunction h : hashes) {
      for (bool weights : {false, true}) {
        SCOPED_TRACE(std::string(mode_name(mode)) + " " + std::string(hash_name(h)) +
                     (weights ? " weighted" : ""));
        std::vector<ServerEntry> servers = random.servers(2 + random.below(20), weights);
        Ring ring = Ring::build(servers, options_for(mode, h));
        LibmemcachedOracle oracle(mode, servers, h);
        expect_same_placement(ring, oracle, random_keys(random, 1000));
      }
    }
  }
}

// Published vector (libmemcached's own test suite): plain ketama, default
// hash, 17 servers 10.2.3.4 on ports 11211..11227.
TEST(LibmemcachedCompat, PublishedSeventeenServerVector) {
  std::vector<ServerEntry> servers;
  for (uint16_t port = 11211; port <= 11227; ++port) {
    servers.push_back(server("10.2.3.4", port));
  }
  Ring ring = Ring::build(servers, options_for(Mode::libmemcached));
  EXPECT_EQ(ring.lookup("SZ6hu0SHweFmpwpc0w2R"), 6u);
  EXPECT_EQ(ring.lookup("SQCK9eiCf53YxHWnYA.o"), 1u);
  EXPECT_EQ(ring.lookup("SUSDkGXuuZC9t9VhMwa."), 9u);
  EXPECT_EQ(ring.lookup("SnnqnJARfaCNT679iAF_"), 0u);

  LibmemcachedOracle oracle(Mode::libmemcached, servers);
  EXPECT_EQ(oracle.server_for("SZ6hu0SHweFmpwpc0w2R"), 6u);
  EXPECT_EQ(oracle.server_for("SnnqnJARfaCNT679iAF_"), 0u);
}

TEST(LibmemcachedCompat, UnixSocketsAndMixedLists) {
  Random random(7);
  std::vector<ServerEntry> servers = {testing::unix_socket("/var/run/memcached/a.sock"),
                                      server("10.0.0.1"), server("10.0.0.2", 22122),
                                      testing::unix_socket("/tmp/m.sock", 3)};
  for (Mode mode : {Mode::libmemcached_weighted, Mode::libmemcached, Mode::libmemcached_spy}) {
    SCOPED_TRACE(std::string(mode_name(mode)));
    Ring ring = Ring::build(servers, options_for(mode));
    LibmemcachedOracle oracle(mode, servers);
    expect_same_placement(ring, oracle, random_keys(random, 2000));
  }
}

// Equal weights > 1 still switch plain ketama to the weighted continuum.
TEST(LibmemcachedCompat, PlainModeWithAllWeightsTwo) {
  Random random(9);
  std::vector<ServerEntry> servers = testing::numbered_servers(25);
  for (ServerEntry& s : servers) {
    s.weight = 2;
  }
  for (Mode mode : {Mode::libmemcached, Mode::libmemcached_spy, Mode::libmemcached_weighted}) {
    SCOPED_TRACE(std::string(mode_name(mode)));
    Ring ring = Ring::build(servers, options_for(mode));
    LibmemcachedOracle oracle(mode, servers);
    expect_same_placement(ring, oracle, random_keys(random, 3000));
    // 25 equal servers: the float formula gives 156 points, not 160.
    EXPECT_EQ(ring.point_count(0), 156u);
  }
}

}  // namespace
}  // namespace memshard::ketama
