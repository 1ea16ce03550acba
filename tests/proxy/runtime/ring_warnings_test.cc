// ring_warnings (proxy/runtime/ring_warnings.h): a valid config whose key
// hash cannot reach every server is warned about, with file, line and
// pool, in the words `-t`, the start and reloads all use.
#include "proxy/runtime/ring_warnings.h"

#include <gtest/gtest.h>

#include <stdexcept>
#include <string>
#include <vector>

#include "conf/config.h"

namespace memshard::proxy {
namespace {

conf::Config config_of(const std::string& yaml) {
  conf::LoadResult loaded = conf::parse_config(yaml, "ring.yml");
  if (!loaded.errors.empty()) throw std::runtime_error(loaded.errors.front().to_string());
  return *loaded.config;
}

// A pool of `n` servers, with `hash` on line 3 (when
// given) and `distribution`.
std::string pool_yaml(const std::string& name, const std::string& hash, int n,
                      const std::string& distribution = "ketama", int port = 22199) {
  std::string text = name + ":\n  listen: 127.0.0.1:" + std::to_string(port) + "\n";
  if (!hash.empty()) text += "  hash: " + hash + "\n";
  text += "  distribution: " + distribution + "\n  servers:\n";
  for (int i = 1; i <= n; ++i) {
    text += "   - 10.0.0." + std::to_string(i) + ":11211:1\n";
  }
  return text;
}

// The N of "keys can reach only N of M servers".
int reached(const std::string& warning, int of) {
  const std::string tail = " of " + std::to_string(of) + " servers";
  const size_t end = warning.find(tail);
  const size_t start = warning.rfind("only ", end);
  if (end == std::string::npos || start == std::string::npos) return -1;
  return std::stoi(warning.substr(start + 5, end - start - 5));
}

TEST(RingWarningsTest, Crc32OnAKetamaRingIsWarnedAboutWithFileLineAndPool) {
  const std::vector<std::string> w = ring_warnings(config_of(pool_yaml("alpha", "crc32", 10)));
  ASSERT_EQ(w.size(), 1u);
  EXPECT_TRUE(
      w[0].starts_with("ring.yml:3: warning: hash: pool 'alpha': crc32 gives only values "
                       "0..32767 (15 bits), so with distribution ketama keys can reach only "))
      << w[0];
  const int n = reached(w[0], 10);
  EXPECT_GE(n, 1) << w[0];
  EXPECT_LT(n, 10) << w[0];
  EXPECT_NE(w[0].find("ring's points"), std::string::npos) << w[0];
}

TEST(RingWarningsTest, HashesWithTheWholeRangeAreNotWarnedAbout) {
  for (const std::string hash : {"", "md5", "fnv1a_64", "crc32a", "crc16", "murmur"}) {
    EXPECT_TRUE(ring_warnings(config_of(pool_yaml("alpha", hash, 10))).empty()) << hash;
  }
}

TEST(RingWarningsTest, Crc32WithModulaIsFineWhileEverySlotIsReachable) {
  EXPECT_TRUE(ring_warnings(config_of(pool_yaml("alpha", "crc32", 10, "modula"))).empty());
}

TEST(RingWarningsTest, Crc32WithModulaPastItsRangeWarnsOfTheSlots) {
  // The first server's 32768 slots take every value crc32 gives; the
  // second's one slot lies past them.
  const std::vector<std::string> w =
      ring_warnings(config_of("alpha:\n"
                              "  listen: 127.0.0.1:22199\n"
                              "  hash: crc32\n"
                              "  distribution: modula\n"
                              "  servers:\n"
                              "   - 10.0.0.1:11211:32768\n"
                              "   - 10.0.0.2:11211:1\n"));
  ASSERT_EQ(w.size(), 1u);
  EXPECT_EQ(reached(w[0], 2), 1) << w[0];
  EXPECT_NE(w[0].find("with distribution modula"), std::string::npos) << w[0];
  EXPECT_NE(w[0].find("the owners of the slots below 32768"), std::string::npos) << w[0];
}

TEST(RingWarningsTest, OneLinePerPoolThatHasTheProblemInPoolOrder) {
  const conf::Config config = config_of(pool_yaml("alpha", "crc32", 10, "ketama", 22199) +
                                        pool_yaml("beta", "md5", 10, "ketama", 22198) +
                                        pool_yaml("gamma", "crc32", 10, "ketama", 22197));
  const std::vector<std::string> w = ring_warnings(config);
  ASSERT_EQ(w.size(), 2u);
  EXPECT_NE(w[0].find("pool 'alpha'"), std::string::npos) << w[0];
  EXPECT_NE(w[1].find("pool 'gamma'"), std::string::npos) << w[1];
  // gamma's hash directive: its pool's third line, after two pools of 15.
  EXPECT_TRUE(w[1].starts_with("ring.yml:33: ")) << w[1];
}

}  // namespace
}  // namespace memshard::proxy
