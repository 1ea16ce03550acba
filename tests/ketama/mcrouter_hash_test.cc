// mcrouter's hashes (ketama/mcrouter_hash.h) and the distributions ch3,
// wch3 and crc32 built on them: mcrouter's own test vectors
// (mcrouter/lib/fbi/test/hash_test.cpp, lib/test/WeightedCh3HashFuncTest.cpp,
// lib/test/Crc32HashTest.cpp), and placements made by mcrouter's code for
// 100,000 keys in pools of 1 to 1,000 servers (data/README.md says how),
// which the ring must reproduce key for key.
#include "ketama/mcrouter_hash.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cstdio>
#include <fstream>
#include <numeric>
#include <sstream>
#include <string>
#include <vector>

#include "ketama/analysis.h"
#include "ketama/ring.h"
#include "mcrouter_golden.h"

namespace memshard::ketama {
namespace {

const std::string kData = MEMSHARD_KETAMA_TEST_DATA;

std::vector<std::string> data_lines(const std::string& file) {
  std::ifstream in(kData + "/" + file);
  EXPECT_TRUE(in) << "cannot read " << kData << "/" << file;
  std::vector<std::string> lines;
  std::string line;
  while (std::getline(in, line)) {
    if (!line.empty() && line[0] != '#') lines.push_back(line);
  }
  return lines;
}

// acc = acc * 31 + index over keys "<prefix><i>": mcrouter's checksums.
template <class F>
uint32_t checksum(const char* prefix, uint32_t keys, F index) {
  uint32_t acc = 0;
  char key[32];
  for (uint32_t i = 0; i < keys; ++i) {
    const int len = snprintf(key, sizeof(key), "%s%u", prefix, i);
    acc = acc * 31u + static_cast<uint32_t>(index(std::string_view(key, len)));
  }
  return acc;
}

// Bytes -128 .. 127, as mcrouter's tests build their "max key".
std::string all_bytes() {
  std::string key;
  for (int i = 0; i < 256; ++i) key.push_back(static_cast<char>(i - 128));
  return key;
}

TEST(FurcHash, McrouterGoldenValues) {
  const std::vector<std::string> lines = data_lines("furc_vectors.txt");
  ASSERT_EQ(lines.size(), 264u);
  for (const std::string& line : lines) {
    const size_t close = line.rfind('"');
    ASSERT_TRUE(line.size() > 2 && line[0] == '"' && close > 0) << line;
    const std::string key = line.substr(1, close - 1);
    std::istringstream rest(line.substr(close + 1));
    uint64_t m = 0, expected = 0;
    ASSERT_TRUE(rest >> m >> expected) << line;
    EXPECT_EQ(furc_hash(key, static_cast<uint32_t>(m)), expected)
        << "furc_hash(\"" << key << "\", " << m << ")";
  }
}

TEST(FurcHash, PowersOfTwo) {
  const std::pair<uint32_t, uint32_t> expected[] = {
      {4, 0},     {8, 7},      {32, 22},     {64, 22},     {128, 115},   {256, 115},
      {512, 413}, {1024, 950}, {2048, 1735}, {4096, 3375}, {8192, 3375},
  };
  for (const auto& [m, index] : expected) EXPECT_EQ(furc_hash("key0", m), index) << m;
}

TEST(FurcHash, EdgeCases) {
  EXPECT_EQ(furc_hash("key", 0), 0u);
  EXPECT_EQ(furc_hash("key", 1), 0u);
  EXPECT_EQ(furc_hash("", 1000), furc_hash(std::string_view(), 1000));
  EXPECT_LT(furc_hash("test_key", kFurcMaxPoolSize + 1), kFurcMaxPoolSize + 1);
  EXPECT_LT(furc_hash("test_key", 2 * kFurcMaxPoolSize), 2 * kFurcMaxPoolSize);
}

TEST(FurcHash, McrouterChecksums) {
  const std::pair<uint32_t, uint32_t> expected[] = {
      {2, 1346413954u},          {3, 914505363u},        {5, 1517365794u},
      {7, 4252552508u},          {10, 2894016351u},      {16, 2995729350u},
      {50, 1717182892u},         {100, 2289223413u},     {500, 2400597860u},
      {1000, 2251851331u},       {5000, 2711796627u},    {10000, 1328492545u},
      {100000, 1053928120u},     {1000000, 209068971u},  {8388608, 2328588562u},
      {16777216, 1406750828u},   {100000000, 55292389u}, {1073741824, 1798155495u},
      {4294967295u, 504907336u},
  };
  for (const auto& [m, sum] : expected) {
    EXPECT_EQ(checksum("k", 100000, [m](std::string_view k) { return furc_hash(k, m); }), sum)
        << "m=" << m;
  }
}

// Growing a pool moves a key only onto a new index.
TEST(FurcHash, ConsistentAsThePoolGrows) {
  for (uint32_t i = 0; i < 2000; ++i) {
    const std::string key = "grow:" + std::to_string(i);
    uint32_t before = 0;
    for (uint32_t m = 1; m <= 300; ++m) {
      const uint32_t now = furc_hash(key, m);
      ASSERT_LT(now, m);
      if (now != before) {
        ASSERT_EQ(now, m - 1) << key << " m=" << m;
      }
      before = now;
    }
  }
}

size_t wch3(std::string_view key, const std::vector<double>& weights) {
  return weighted_ch3(key, weights);
}

TEST(WeightedCh3, McrouterBasic) {
  const std::vector<double> w100(100, 1.0), w1(1, 1.0), w99999(99999, 1.0);
  EXPECT_EQ(wch3("sample", w100), 97u);
  EXPECT_EQ(wch3("sample", w1), 0u);
  EXPECT_EQ(wch3("", w100), 72u);
  EXPECT_EQ(wch3("", w1), 0u);
  const std::vector<double> wmax(kFurcMaxPoolSize, 1.0);
  EXPECT_EQ(wch3("", wmax), 6173600u);
  EXPECT_EQ(wch3("sample", wmax), 5167780u);
  std::string key = all_bytes();
  EXPECT_EQ(wch3(key, w99999), 31015u);
  std::reverse(key.begin(), key.end());
  EXPECT_EQ(wch3(key, w99999), 67101u);
}

TEST(WeightedCh3, McrouterZeroWeight) {
  const std::vector<double> w1(1, 0.0), w100(100, 0.0);
  EXPECT_EQ(wch3("sample", w1), 0u);
  EXPECT_EQ(wch3("", w1), 0u);
  EXPECT_EQ(wch3("sample", w100), 59u);
  EXPECT_EQ(wch3("", w100), 45u);
  EXPECT_EQ(wch3(std::string_view(), w100), 45u);  // no bytes at all, salted 32 times
}

TEST(WeightedCh3, McrouterReducedAndRandomWeights) {
  const std::vector<double> reduced = {1.0, 1.0, 0.7};
  std::vector<size_t> ch3_counts(3), wch3_counts(3);
  for (size_t i = 0; i < 1000; ++i) {
    const std::string key = std::to_string(i);
    const uint32_t c = furc_hash(key, 3);
    const size_t w = wch3(key, reduced);
    if (c != 2) {
      EXPECT_EQ(c, w) << key;
    }
    ++ch3_counts[c];
    ++wch3_counts[w];
  }
  EXPECT_EQ(ch3_counts, (std::vector<size_t>{307, 342, 351}));
  EXPECT_EQ(wch3_counts, (std::vector<size_t>{341, 371, 288}));

  const std::vector<double> random = {0.429, 0.541, 0.117, 0.998, 0.283,
                                      0.065, 0.109, 0.042, 0.676, 0.943};
  std::vector<size_t> c10(10), w10(10);
  for (size_t i = 0; i < 10000; ++i) {
    const std::string key = std::to_string(i);
    ++c10[furc_hash(key, 10)];
    ++w10[wch3(key, random)];
  }
  EXPECT_EQ(c10, (std::vector<size_t>{995, 955, 1046, 968, 1032, 972, 1016, 1038, 1010, 968}));
  EXPECT_EQ(w10, (std::vector<size_t>{1016, 1252, 288, 2354, 661, 195, 247, 122, 1668, 2197}));
}

TEST(WeightedCh3, McrouterChecksums) {
  struct Case {
    double weight;
    uint32_t n;
    uint32_t keys;
    uint32_t sum;
  };
  const Case cases[] = {
      {1.0, 2, 100000, 1346413954u},      {1.0, 3, 100000, 914505363u},
      {1.0, 7, 100000, 4252552508u},      {1.0, 10, 100000, 2894016351u},
      {1.0, 16, 100000, 2995729350u},     {1.0, 100, 100000, 2289223413u},
      {1.0, 1000, 100000, 2251851331u},   {1.0, 10000, 100000, 1328492545u},
      {1.0, 100000, 100000, 1053928120u}, {0.5, 2, 10000, 2395690262u},
      {0.5, 10, 10000, 547444706u},       {0.5, 100, 10000, 2951198297u},
      {0.5, 1000, 10000, 1336857622u},    {0.5, 10000, 10000, 3378951161u},
      {0.0, 2, 10000, 3431444300u},       {0.0, 10, 10000, 1290067504u},
      {0.0, 100, 10000, 2604325093u},     {0.0, 1000, 10000, 337394182u},
  };
  for (const Case& c : cases) {
    const std::vector<double> w(c.n, c.weight);
    EXPECT_EQ(checksum("k", c.keys, [&](std::string_view k) { return wch3(k, w); }), c.sum)
        << "weight " << c.weight << " n=" << c.n;
  }
}

TEST(WeightedCh3, McrouterMixedWeights) {
  const std::vector<double> mixed = {1.0, 0.5, 0.0, 0.75, 1.0};
  std::vector<size_t> counts(5);
  const uint32_t sum = checksum("d", 10000, [&](std::string_view k) {
    const size_t i = wch3(k, mixed);
    ++counts[i];
    return i;
  });
  EXPECT_EQ(counts[2], 0u);
  EXPECT_EQ(sum, 2309057571u);
}

// Keys of 129 to 133 bytes: SpookyHash's 32-byte rounds and longer salts.
TEST(WeightedCh3, McrouterLongKeyChecksums) {
  std::string base(128, 'A');
  for (size_t i = 0; i < base.size(); ++i) base[i] = static_cast<char>('A' + i % 26);
  auto sum_of = [&](const std::vector<double>& w) {
    uint32_t acc = 0;
    for (uint32_t i = 0; i < 10000; ++i) {
      acc = acc * 31u + static_cast<uint32_t>(wch3(base + std::to_string(i), w));
    }
    return acc;
  };
  const std::pair<uint32_t, uint32_t> half[] = {
      {2, 3784301429u}, {10, 707485837u}, {100, 4273108085u}, {1000, 954106693u}};
  for (const auto& [n, sum] : half) EXPECT_EQ(sum_of(std::vector<double>(n, 0.5)), sum) << n;
  const std::pair<uint32_t, uint32_t> zero[] = {
      {2, 2171781178u}, {10, 2937312667u}, {100, 532711027u}};
  for (const auto& [n, sum] : zero) EXPECT_EQ(sum_of(std::vector<double>(n, 0.0)), sum) << n;
}

TEST(McrouterCrc32, McrouterBasic) {
  EXPECT_EQ(mcrouter_crc32("sample", 100), 7u);
  EXPECT_EQ(mcrouter_crc32("sample", 1), 0u);
  EXPECT_EQ(mcrouter_crc32("", 100), 0u);
  EXPECT_EQ(mcrouter_crc32("", 1), 0u);
  const size_t max = (size_t{1} << 30) - 1;
  EXPECT_EQ(mcrouter_crc32("", max), 0u);
  EXPECT_EQ(mcrouter_crc32("sample", max), 822834884u);
  std::string key = all_bytes();
  EXPECT_EQ(mcrouter_crc32(key, 99999), 11697u);
  std::reverse(key.begin(), key.end());
  EXPECT_EQ(mcrouter_crc32(key, 99999), 97630u);
}

// --- The golden table: placements made by mcrouter's own code. ---

// Server i's weight in the wch3 lines, read as the config reads
// "host:port:0.123".
double golden_weight(uint32_t i) {
  return std::stod(golden::mcrouter_weight_text(i));
}

Ring golden_ring(const std::string& variant, uint32_t n) {
  std::vector<ServerEntry> servers;
  for (uint32_t i = 0; i < n; ++i) {
    ServerEntry s;
    s.host = "10.0." + std::to_string(i / 256) + "." + std::to_string(i % 256);
    s.port = 11211;
    s.fraction = golden_weight(i);
    s.weight = 0;
    servers.push_back(std::move(s));
  }
  RingOptions options;
  const std::string base = variant.substr(0, variant.find('+'));
  options.distribution = *parse_distribution_name(base);
  if (variant.ends_with("+salt")) options.hash_salt = golden::kMcrouterSalt;
  return Ring::build(std::move(servers), options);
}

TEST(McrouterPlacement, GoldenTable) {
  const std::vector<std::string> keys = golden::mcrouter_keys(100000);
  const std::vector<golden::Placement> table =
      golden::mcrouter_placements(kData + "/mcrouter_placements.txt");
  ASSERT_EQ(table.size(), 6u * 23u);
  for (const golden::Placement& p : table) {
    const Ring ring = golden_ring(p.variant, p.servers);
    uint64_t fnv = 0xcbf29ce484222325ULL;
    std::string got_first;
    for (uint32_t i = 0; i < keys.size(); ++i) {
      const auto index = static_cast<uint32_t>(ring.lookup(keys[i]));
      for (int b = 0; b < 4; ++b) {
        fnv ^= (index >> (8 * b)) & 0xff;
        fnv *= 0x100000001b3ULL;
      }
      if (i < 40) got_first += (i ? "," : "") + std::to_string(index);
    }
    char hex[17];
    snprintf(hex, sizeof(hex), "%016llx", static_cast<unsigned long long>(fnv));
    EXPECT_EQ(got_first, p.first_text)
        << p.variant << " with " << p.servers << " servers, keys 0-39";
    EXPECT_EQ(hex, p.digest) << p.variant << " with " << p.servers
                             << " servers: the 100,000 placements";
  }
}

// --- The ring's side: what mcrouter does around the hash. ---

std::vector<ServerEntry> servers(uint32_t n) {
  std::vector<ServerEntry> out;
  for (uint32_t i = 0; i < n; ++i) {
    ServerEntry s;
    s.host = "10.1.0." + std::to_string(i);
    out.push_back(s);
  }
  return out;
}

Ring ring_of(Distribution d, uint32_t n, std::string salt = "", std::vector<bool> live = {}) {
  RingOptions options;
  options.distribution = d;
  options.hash_salt = std::move(salt);
  return Ring::build(servers(n), options, std::move(live));
}

TEST(McrouterPlacement, HashesTheKeyUpToItsHashStop) {
  for (Distribution d : {Distribution::ch3, Distribution::wch3, Distribution::crc32}) {
    const Ring ring = ring_of(d, 50);
    for (int i = 0; i < 200; ++i) {
      const std::string key = "user:" + std::to_string(i);
      EXPECT_EQ(ring.lookup(key + "|#|profile"), ring.lookup(key));
      EXPECT_EQ(ring.lookup(key + "|#|a|#|b"), ring.lookup(key));
    }
  }
  EXPECT_EQ(ring_of(Distribution::ch3, 50).lookup("k|#|x"), furc_hash("k", 50));
  EXPECT_EQ(ring_of(Distribution::ch3, 50).lookup("k|#x"), furc_hash("k|#x", 50));
}

TEST(McrouterPlacement, SaltIsAppended) {
  const Ring ch3 = ring_of(Distribution::ch3, 77, "pool-a");
  const Ring crc = ring_of(Distribution::crc32, 77, "pool-a");
  const std::string long_key(600, 'x');  // key and salt beyond the stack buffer
  for (const std::string& key : {std::string("a"), std::string("user:9"), long_key}) {
    EXPECT_EQ(ch3.lookup(key), furc_hash(key + "pool-a", 77));
    EXPECT_EQ(crc.lookup(key), mcrouter_crc32(key + "pool-a", 77));
    EXPECT_EQ(ch3.lookup(key + "|#|tail"), furc_hash(key + "pool-a", 77));
  }
}

TEST(McrouterPlacement, HashTagThenHashStop) {
  RingOptions options;
  options.distribution = Distribution::ch3;
  options.hash_tag = "{}";
  const Ring ring = Ring::build(servers(20), options);
  EXPECT_EQ(ring.lookup("a{user:1}b"), furc_hash("user:1", 20));
  EXPECT_EQ(ring.lookup("a{u|#|1}b"), furc_hash("u", 20));
}

// An ejected server leaves the list: the live ones keep their order.
TEST(McrouterPlacement, LiveServersInListOrder) {
  std::vector<bool> live(10, true);
  live[3] = false;
  const Ring ring = ring_of(Distribution::ch3, 10, "", live);
  EXPECT_EQ(ring.slots(), (std::vector<uint32_t>{0, 1, 2, 4, 5, 6, 7, 8, 9}));
  for (int i = 0; i < 500; ++i) {
    const std::string key = "k" + std::to_string(i);
    EXPECT_EQ(ring.lookup(key), ring.slots()[furc_hash(key, 9)]);
  }
}

TEST(McrouterPlacement, ListOrderWhateverTheMode) {
  RingOptions options;
  options.distribution = Distribution::ch3;
  options.mode = Mode::twemproxy;  // sorts modula's slots by name; not these
  std::vector<ServerEntry> list = servers(5);
  std::reverse(list.begin(), list.end());
  const Ring ring = Ring::build(list, options);
  EXPECT_EQ(ring.slots(), (std::vector<uint32_t>{0, 1, 2, 3, 4}));
}

TEST(McrouterPlacement, PreferenceListFollowsTheList) {
  const Ring ring = ring_of(Distribution::ch3, 6);
  for (int i = 0; i < 100; ++i) {
    const std::string key = "k" + std::to_string(i);
    const std::vector<size_t> list = ring.preference_list(key, 3);
    const size_t owner = furc_hash(key, 6);
    EXPECT_EQ(list, (std::vector<size_t>{owner, (owner + 1) % 6, (owner + 2) % 6}));
  }
}

TEST(McrouterPlacement, WeightsOfWch3) {
  std::vector<ServerEntry> list = servers(4);
  const double weights[] = {1.0, 0.5, 0.0, 0.25};
  for (size_t i = 0; i < 4; ++i) {
    list[i].fraction = weights[i];
    list[i].weight = weights[i] == 1.0 ? 1 : 0;
  }
  RingOptions options;
  options.distribution = Distribution::wch3;
  const Ring ring = Ring::build(list, options);
  const std::vector<double> w(std::begin(weights), std::end(weights));
  std::vector<uint64_t> counts(4);
  for (int i = 0; i < 20000; ++i) {
    const std::string key = "w" + std::to_string(i);
    const size_t at = ring.lookup(key);
    ASSERT_EQ(at, weighted_ch3(key, w));
    ++counts[at];
  }
  // The expected shares, against the keys counted.
  const std::vector<uint64_t> owned = ring.owned_hashes();
  EXPECT_EQ(std::accumulate(owned.begin(), owned.end(), uint64_t{0}), uint64_t{1} << 32);
  for (size_t i = 0; i < 4; ++i) {
    const double expected = static_cast<double>(owned[i]) / 4294967296.0;
    EXPECT_NEAR(static_cast<double>(counts[i]) / 20000.0, expected, 0.015) << i;
  }
  EXPECT_LT(owned[2], owned[3]);

  list[1].fraction = 1.5;
  EXPECT_THROW(Ring::build(list, options), std::invalid_argument);
}

TEST(McrouterPlacement, SharesAndNames) {
  for (Distribution d : {Distribution::ch3, Distribution::crc32}) {
    const Ring ring = ring_of(d, 7);
    const std::vector<uint64_t> owned = ring.owned_hashes();
    EXPECT_EQ(std::accumulate(owned.begin(), owned.end(), uint64_t{0}), uint64_t{1} << 32);
    for (uint64_t o : owned) EXPECT_NEAR(static_cast<double>(o) / 4294967296.0, 1.0 / 7, 1e-6);
  }
  EXPECT_EQ(ring_of(Distribution::ch3, 3).key_hash_name(), "furc_hash");
  EXPECT_EQ(ring_of(Distribution::wch3, 3).key_hash_name(), "furc_hash");
  EXPECT_EQ(ring_of(Distribution::crc32, 3).key_hash_name(), "mcrouter_crc32");
  EXPECT_EQ(ring_of(Distribution::ketama, 3).key_hash_name(), "fnv1a_64");
  for (const char* name : {"ch3", "wch3", "crc32"}) {
    EXPECT_EQ(distribution_name(*parse_distribution_name(name)), name);
  }
}

// ch3 to ch3 with one more server: furc moves about 1/(n+1) of the keys,
// all to the new server; the diff samples keys to see it.
TEST(McrouterPlacement, DiffIsSampled) {
  const RingDiff d = diff(ring_of(Distribution::ch3, 9), ring_of(Distribution::ch3, 10));
  EXPECT_FALSE(d.exact);
  EXPECT_GT(d.sampled_keys, 0u);
  EXPECT_NEAR(d.moved, 0.1, 0.01);
  for (const ServerMove& s : d.servers) {
    if (s.address == "10.1.0.9:11211") {
      EXPECT_TRUE(s.only_in_new);
      EXPECT_NEAR(s.gained, 0.1, 0.01);
    } else {
      EXPECT_NEAR(s.gained, 0.0, 1e-12) << s.address;
    }
  }
  const RingDiff same =
      diff(ring_of(Distribution::ch3, 9, "s"), ring_of(Distribution::ch3, 9, "s"));
  EXPECT_EQ(same.moved, 0.0);
  const RingDiff salted = diff(ring_of(Distribution::ch3, 9), ring_of(Distribution::ch3, 9, "s"));
  EXPECT_NEAR(salted.moved, 8.0 / 9.0, 0.01);
}

TEST(McrouterPlacement, WeightText) {
  ServerEntry s;
  EXPECT_EQ(s.weight_text(), "1");
  s.weight = 0;
  s.fraction = 0.5;
  EXPECT_EQ(s.weight_text(), "0.5");
  s.fraction = 0.333;
  EXPECT_EQ(s.weight_text(), "0.333");
  s.fraction = 0;
  EXPECT_EQ(s.weight_text(), "0");
}

}  // namespace
}  // namespace memshard::ketama
