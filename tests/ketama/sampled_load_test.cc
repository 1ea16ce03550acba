// sampled_load(): key counts per server and the figures derived from them.
#include "ketama/sampled_load.h"

#include <gtest/gtest.h>

#include <cmath>

#include "test_support.h"

namespace memshard::ketama {
namespace {

std::vector<std::string> user_keys(size_t n) {
  std::vector<std::string> keys;
  for (size_t i = 0; i < n; ++i) keys.push_back("user:" + std::to_string(i));
  return keys;
}

Ring ring_with(HashFunction f) {
  RingOptions o;
  o.hash = f;
  return Ring::build(testing::numbered_servers(10), o);
}

TEST(SampledLoad, CountsAreLookups) {
  Ring ring = ring_with(HashFunction::md5);
  std::vector<std::string> keys = user_keys(5000);
  SampledLoad load = sampled_load(ring, keys);
  std::vector<uint64_t> expected(10, 0);
  for (const auto& k : keys) ++expected[ring.lookup(k)];
  EXPECT_EQ(load.keys, expected);
  // 5000 keys over shares near 1/10: chance alone strays about sqrt(9/5000).
  EXPECT_NEAR(load.sampling_noise, std::sqrt(9.0 / 5000), 0.005);
}

TEST(SampledLoad, AllOnOneServer) {
  SampledLoad load = sampled_load(ring_with(HashFunction::crc32), user_keys(1000));
  EXPECT_NEAR(load.cv, 3.0, 1e-9);  // sqrt(N - 1)
  EXPECT_NEAR(load.max_over_mean, 10.0, 1e-9);
  EXPECT_GT(load.off_keyspace, 1.0);
}

TEST(SampledLoad, AGoodHashStaysNearTheKeyspaceShares) {
  std::vector<std::string> keys = user_keys(100000);
  SampledLoad md5 = sampled_load(ring_with(HashFunction::md5), keys);
  SampledLoad fnv = sampled_load(ring_with(HashFunction::fnv1a_64), keys);
  EXPECT_LT(md5.off_keyspace, 2 * md5.sampling_noise);
  EXPECT_GT(fnv.off_keyspace, 4 * md5.off_keyspace);
}

TEST(SampledLoad, NothingSampled) {
  SampledLoad load = sampled_load(ring_with(HashFunction::md5), {});
  EXPECT_EQ(load.cv, 0);
  EXPECT_EQ(load.max_over_mean, 0);
  EXPECT_EQ(load.off_keyspace, 0);
}

}  // namespace
}  // namespace memshard::ketama
