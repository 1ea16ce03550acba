// mcrouter's hashes as pool settings: distribution ch3, wch3, crc32, the
// fractional weights of wch3's server lines and hash_salt, with the errors
// that keep each where it means something.
#include <gtest/gtest.h>

#include "conf/values.h"
#include "conf_test_util.h"

namespace memshard::conf {
namespace {

using namespace memshard::conf::testing;

TEST(ConfMcrouterHash, Distributions) {
  EXPECT_EQ(only_pool(pool("  distribution: ch3\n")).ring.distribution, ketama::Distribution::ch3);
  EXPECT_EQ(only_pool(pool("  distribution: wch3\n")).ring.distribution,
            ketama::Distribution::wch3);
  EXPECT_EQ(only_pool(pool("  distribution: crc32\n")).ring.distribution,
            ketama::Distribution::crc32);
}

TEST(ConfMcrouterHash, Salt) {
  const PoolConfig p = only_pool(pool("  distribution: ch3\n  hash_salt: pool-a\n"));
  EXPECT_EQ(p.ring.hash_salt, "pool-a");
  EXPECT_EQ(only_pool(pool("  distribution: crc32\n  hash_salt: \"\"\n")).ring.hash_salt, "");
  EXPECT_EQ(only_pool(pool("")).ring.hash_salt, "");
}

TEST(ConfMcrouterHash, SaltOnlyWithMcrouterHashes) {
  expect_error(only_error(pool("  hash_salt: x\n")), 3, "hash_salt",
               "hash_salt is appended to keys by mcrouter's hashes only, and pool 'alpha' has "
               "distribution ketama; expected distribution ch3, wch3 or crc32, or no hash_salt");
}

TEST(ConfMcrouterHash, FractionalWeightsForWch3) {
  // The servers may come before the distribution.
  const PoolConfig p = only_pool(
      "alpha:\n  listen: 127.0.0.1:22121\n  servers:\n   - 10.0.0.1:11211:1\n"
      "   - 10.0.0.2:11211:0.5\n   - 10.0.0.3:11211:0\n   - 10.0.0.4:11211:0.125 d\n"
      "   - 10.0.0.5:11211:1.0\n  distribution: wch3\n");
  ASSERT_EQ(p.servers.size(), 5u);
  const double expected[] = {1.0, 0.5, 0.0, 0.125, 1.0};
  for (size_t i = 0; i < 5; ++i) EXPECT_EQ(p.servers[i].entry.fraction, expected[i]) << i;
  EXPECT_EQ(p.servers[3].entry.name, "d");
  EXPECT_EQ(p.servers[1].entry.weight_text(), "0.5");
  // Read to the nearest double, as mcrouter's JSON parser reads 0.1.
  EXPECT_EQ(only_pool(pool("  distribution: wch3\n", "   - h:1:0.1\n")).servers[0].entry.fraction,
            0.1);
}

TEST(ConfMcrouterHash, Wch3WeightAboveOne) {
  expect_error(only_error(pool("  distribution: wch3\n", "   - 10.0.0.1:11211:2\n")), 5, "servers",
               "expected a weight from 0 to 1 with distribution wch3 (mcrouter's WeightedCh3: the "
               "share of its keys a server keeps, such as 0.5), found \"10.0.0.1:11211:2\"");
  EXPECT_FALSE(parse(pool("  distribution: wch3\n", "   - h:1:1.5\n")).config);
}

TEST(ConfMcrouterHash, FractionalWeightsRefusedElsewhere) {
  for (const char* d : {"", "  distribution: ketama\n", "  distribution: modula\n",
                        "  distribution: ch3\n", "  distribution: crc32\n"}) {
    const std::string text = pool(d, "   - 10.0.0.1:11211:1\n   - 10.0.0.2:11211:0.5\n");
    const int line = 4 + (d[0] != 0 ? 1 : 0) + 1;
    expect_error(only_error(text), line, "servers",
                 "expected a whole number weight from 1 to 2147483647 after the last ':' (a "
                 "weight from 0 to 1 such as 0.5 is distribution wch3's only), found "
                 "\"10.0.0.2:11211:0.5\"");
  }
  // Twemproxy's zero weight keeps its own words.
  expect_error(only_error(pool("  distribution: ch3\n", "   - 10.0.0.1:11211:0\n")), 5, "servers",
               "expected a weight of at least 1 (twemproxy refuses a zero weight), found "
               "\"10.0.0.1:11211:0\"");
}

TEST(ConfMcrouterHash, WeightFormats) {
  using detail::parse_server;
  EXPECT_FALSE(parse_server("h:1:.5").value);
  EXPECT_FALSE(parse_server("h:1:5.").value);
  EXPECT_EQ(parse_server("h:1:5e-1").value->fraction, 0.5);  // JSON writes numbers so too
  EXPECT_EQ(parse_server("h:1:2.5E-1").value->fraction, 0.25);
  EXPECT_FALSE(parse_server("h:1:5e").value);
  EXPECT_FALSE(parse_server("h:1:0x1").value);
  EXPECT_FALSE(parse_server("h:1:-0.5").value);
  EXPECT_EQ(parse_server("h:1:0.75").value->fraction, 0.75);
  EXPECT_EQ(parse_server("h:1:0.75").value->weight, 0u);
  EXPECT_EQ(parse_server("h:1:3").value->fraction, 3.0);
}

TEST(ConfMcrouterHash, NoHashBesideThem) {
  expect_error(only_error(pool("  distribution: ch3\n  hash: md5\n")), 4, "hash",
               "distribution ch3 hashes keys with mcrouter's furc_hash, not with hash:; expected "
               "no hash in pool 'alpha' (twemproxy's hash: crc32 is another function, for ketama "
               "or modula)");
  expect_error(only_error(pool("  hash: crc32\n  distribution: crc32\n")), 3, "hash",
               "distribution crc32 hashes keys with mcrouter's Crc32 (the whole CRC-32), not with "
               "hash:; expected no hash in pool 'alpha' (twemproxy's hash: crc32 is another "
               "function, for ketama or modula)");
}

TEST(ConfMcrouterHash, NoKetamaCompatBesideThem) {
  expect_error(only_error(pool("  distribution: wch3\n  ketama_compat: libmemcached\n")), 4,
               "ketama_compat",
               "distribution wch3 places keys as mcrouter does, by the servers' order in the "
               "list; expected no ketama_compat in pool 'alpha'");
}

TEST(ConfMcrouterHash, NotInARoutingPool) {
  const LoadResult r = parse(
      "front:\n  listen: 127.0.0.1:22121\n  hash_salt: s\n  routes:\n   - pool: back\n"
      "back:\n  distribution: ch3\n  servers:\n   - 10.0.0.1:11211:1\n");
  ASSERT_EQ(r.errors.size(), 1u);
  EXPECT_EQ(r.errors[0].directive, "hash_salt");
  EXPECT_EQ(r.errors[0].line, 3);
}

}  // namespace
}  // namespace memshard::conf
