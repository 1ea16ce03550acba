// reach(): which servers keys can get to when the key hash covers only part
// of the ring's 2^32 values, checked against lookups of every value.
#include "ketama/reach.h"

#include <gtest/gtest.h>

#include <set>

#include "test_support.h"

namespace memshard::ketama {
namespace {

using testing::server;

// The servers the memshard CLI tests use: 127.0.0.1:40001.. weight 1.
std::vector<ServerEntry> local_servers(size_t n, uint32_t weight = 1) {
  std::vector<ServerEntry> out;
  for (size_t i = 0; i < n; ++i)
    out.push_back(server("127.0.0.1", static_cast<uint16_t>(40001 + i), weight));
  return out;
}

Ring build(std::vector<ServerEntry> servers, HashFunction hash,
           Distribution distribution = Distribution::ketama, Mode mode = Mode::twemproxy) {
  RingOptions o;
  o.hash = hash;
  o.distribution = distribution;
  o.mode = mode;
  return Ring::build(std::move(servers), o);
}

// Owner of every value 0..hash_max, counted by lookup.
std::vector<uint64_t> owned_by_lookup(const Ring& ring, uint32_t hash_max) {
  std::vector<uint64_t> owned(ring.servers().size(), 0);
  for (uint64_t v = 0; v <= hash_max; ++v) ++owned[ring.server_for_hash(static_cast<uint32_t>(v))];
  return owned;
}

size_t nonzero(const std::vector<uint64_t>& v) {
  size_t n = 0;
  for (uint64_t x : v) n += x > 0;
  return n;
}

TEST(Reach, Crc32KetamaReachesOnlyTheOwnersOfTheFirst32768Values) {
  Ring ring = build(local_servers(10), HashFunction::crc32);
  Reach r = key_reach(ring);
  EXPECT_EQ(r.owned, owned_by_lookup(ring, 0x7fff));
  // 1600 points over 2^32 are about 2.7 million apart: none falls below
  // 32768, so every key goes to the owner of the first point.
  ASSERT_GT(ring.points().front().value, 0x7fffu);
  EXPECT_EQ(r.servers, 1u);
  EXPECT_EQ(r.owned[ring.points().front().server], 32768u);
}

TEST(Reach, FullRangeHashReachesEveryServer) {
  for (HashFunction f : {HashFunction::md5, HashFunction::fnv1a_64, HashFunction::crc16}) {
    SCOPED_TRACE(std::string(hash_name(f)));
    Ring ring = build(local_servers(10), f);
    Reach r = key_reach(ring);
    EXPECT_EQ(r.servers, 10u);
    EXPECT_EQ(r.owned, ring.owned_hashes());
  }
}

TEST(Reach, OwnersOfThePointsUpToTheRangeAreReached) {
  // A range ending on the sixth point: keys reach that point's owner and
  // the owners of the five points below it, and no one else.
  Ring ring = build(local_servers(2000), HashFunction::crc32);
  const uint32_t max = ring.points()[5].value;
  ASSERT_LT(max, 200000u);  // small enough to look every value up
  Reach r = reach(ring, max);
  EXPECT_EQ(r.owned, owned_by_lookup(ring, max));
  std::set<uint32_t> owners;
  for (size_t i = 0; i <= 5; ++i) owners.insert(ring.points()[i].server);
  EXPECT_EQ(r.servers, owners.size());
  EXPECT_GT(r.servers, 1u);
  // One value past the point: the next point's owner joins.
  owners.insert(ring.points()[6].server);
  EXPECT_EQ(reach(ring, max + 1).servers, owners.size());
}

TEST(Reach, ModulaWithFewSlotsReachesEveryServer) {
  Ring ring = build(local_servers(10), HashFunction::crc32, Distribution::modula);
  Reach r = key_reach(ring);
  EXPECT_EQ(r.servers, 10u);
  EXPECT_EQ(r.owned, owned_by_lookup(ring, 0x7fff));
}

TEST(Reach, ModulaSlotsPastTheRangeAreNotReached) {
  // 3 x 16384 slots: the third server's slots all lie at 32768 and above.
  Ring ring = build(local_servers(3, 16384), HashFunction::crc32, Distribution::modula);
  Reach r = key_reach(ring);
  EXPECT_EQ(r.owned, owned_by_lookup(ring, 0x7fff));
  EXPECT_EQ(r.servers, 2u);
}

TEST(Reach, RandomIgnoresTheKey) {
  Ring ring = build(local_servers(3, 16384), HashFunction::crc32, Distribution::random);
  EXPECT_EQ(key_reach(ring).servers, 3u);
}

TEST(Reach, PointsHashedWithTheSameShortHashAreAllReachable) {
  // Plain libmemcached ketama hashes the points with the key hash too, so
  // with crc32 points and keys share the 15-bit range.
  Ring ring =
      build(local_servers(10), HashFunction::crc32, Distribution::ketama, Mode::libmemcached);
  Reach r = key_reach(ring);
  EXPECT_EQ(r.owned, owned_by_lookup(ring, 0x7fff));
  EXPECT_EQ(r.servers, nonzero(ring.owned_hashes()));
  EXPECT_EQ(r.servers, 10u);
}

TEST(Reach, Md5ModesIgnoreThePoolHash) {
  Ring ring = build(local_servers(10), HashFunction::crc32, Distribution::ketama,
                    Mode::libmemcached_weighted);
  EXPECT_EQ(key_reach(ring).servers, 10u);
}

}  // namespace
}  // namespace memshard::ketama
