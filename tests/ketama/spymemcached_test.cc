// spymemcached's KetamaNodeLocator, checked with the expectations of its own
// KetamaNodeLocatorTest (dustin/java-memcached-client). Nodes there are
// InetSocketAddress.createUnresolved("127.0.0.1", 10000 + i), whose old-JDK
// toString() "127.0.0.1:10000" is the point-string prefix.
#include <gtest/gtest.h>

#include "ketama/ring.h"
#include "test_support.h"

namespace memshard::ketama {
namespace {

using testing::server;

RingOptions spymemcached() {
  RingOptions o;
  o.mode = Mode::spymemcached;
  return o;
}

Ring test_nodes(size_t n) {
  std::vector<ServerEntry> servers;
  for (size_t i = 0; i < n; ++i) {
    servers.push_back(server("127.0.0.1", static_cast<uint16_t>(10000 + i)));
  }
  return Ring::build(servers, spymemcached());
}

TEST(Spymemcached, Lookups) {
  Ring four = test_nodes(4);
  EXPECT_EQ(four.lookup("dustin"), 0u);
  EXPECT_EQ(four.lookup("noelani"), 2u);
  EXPECT_EQ(four.lookup("some other key"), 0u);
}

TEST(Spymemcached, ContinuumWrapping) {
  Ring four = test_nodes(4);
  EXPECT_EQ(four.points().back().value, 4294887009u);  // getMaxKey()
  EXPECT_EQ(four.lookup("V5XS8C8N"), 3u);
  EXPECT_EQ(four.lookup("8KR2DKR2"), 3u);
  EXPECT_EQ(four.lookup("L9KH6X4X"), 3u);
}

TEST(Spymemcached, ClusterResizing) {
  Ring five = test_nodes(5);
  EXPECT_EQ(five.lookup("dustin"), 0u);
  EXPECT_EQ(five.lookup("noelani"), 2u);
  EXPECT_EQ(five.lookup("some other key"), 4u);
}

TEST(Spymemcached, LibKetamaCompat) {
  Ring five = test_nodes(5);
  EXPECT_EQ(five.lookup("36"), 2u);
  EXPECT_EQ(five.lookup("10037"), 3u);
  EXPECT_EQ(five.lookup("22051"), 1u);
  EXPECT_EQ(five.lookup("49044"), 4u);
}

// testLibKetamaCompatTwo: eight equal servers 10.0.1.1..8:11211 (a sample of
// its table; the test checks the first 60 and last 12 rows).
TEST(Spymemcached, LibKetamaCompatTwo) {
  std::vector<ServerEntry> servers;
  for (int i = 1; i <= 8; ++i) {
    servers.push_back(server("10.0.1." + std::to_string(i), 11211, 1));
  }
  Ring ring = Ring::build(servers, spymemcached());
  const std::pair<const char*, int> expected[] = {
      {"0", 1},      {"233", 7},    {"466", 3},    {"699", 1},    {"932", 6},    {"1165", 2},
      {"1398", 1},   {"1631", 6},   {"1864", 5},   {"2097", 3},   {"2330", 7},   {"2563", 3},
      {"2796", 6},   {"3029", 1},   {"3262", 2},   {"3495", 3},   {"3728", 8},   {"3961", 4},
      {"4194", 4},   {"4427", 3},   {"4660", 4},   {"4893", 7},   {"5126", 4},   {"5359", 2},
      {"5592", 2},   {"5825", 3},   {"6058", 2},   {"6291", 7},   {"6524", 5},   {"6757", 5},
      {"6990", 1},   {"7223", 5},   {"7456", 4},   {"7689", 2},   {"7922", 5},   {"8155", 5},
      {"8388", 1},   {"8621", 2},   {"8854", 2},   {"9087", 1},   {"9320", 6},   {"9553", 3},
      {"9786", 2},   {"10019", 5},  {"10252", 1},  {"10485", 5},  {"10718", 5},  {"10951", 2},
      {"11184", 5},  {"11417", 3},  {"11650", 8},  {"11883", 2},  {"12116", 2},  {"12349", 7},
      {"12582", 5},  {"12815", 3},  {"13048", 8},  {"13281", 6},  {"13514", 3},  {"13747", 6},
      {"995609", 1}, {"995842", 6}, {"996075", 6}, {"996308", 6}, {"996541", 2}, {"996774", 6},
      {"997007", 7}, {"997240", 2}, {"997473", 1}, {"997706", 4}, {"999104", 8}, {"999337", 4},
      {"999570", 6}, {"999803", 4},
  };
  for (const auto& [key, host_number] : expected) {
    EXPECT_EQ(ring.lookup(key), static_cast<size_t>(host_number - 1)) << key;
  }
}

TEST(Spymemcached, WeightsAreIgnoredAndNamesKeepThePort) {
  Ring ring =
      Ring::build({server("10.0.0.1", 11211, 1), server("10.0.0.2", 11211, 50)}, spymemcached());
  EXPECT_EQ(ring.point_count(0), 160u);
  EXPECT_EQ(ring.point_count(1), 160u);
  EXPECT_EQ(ring.ring_name(0), "10.0.0.1:11211");
}

// Java's TreeMap.put() replaces: on equal points the later node wins, and the
// continuum holds the value once. A 3000-node ring has a few such ties.
TEST(Spymemcached, LaterNodeWinsEqualPoints) {
  std::vector<ServerEntry> servers = testing::numbered_servers(3000);
  Ring ring = Ring::build(servers, spymemcached());
  RingOptions libketama_like = spymemcached();
  libketama_like.mode = Mode::libketama;  // same points, but keeps both
  Ring both = Ring::build(servers, libketama_like);
  size_t ties = 0;
  const std::vector<Point>& all = both.points();
  for (size_t i = 1; i < all.size(); ++i) {
    if (all[i].value == all[i - 1].value && all[i].server != all[i - 1].server) {
      ++ties;
      EXPECT_EQ(ring.server_for_hash(all[i].value), std::max(all[i].server, all[i - 1].server));
    }
  }
  EXPECT_GT(ties, 0u);
  for (size_t i = 1; i < ring.points().size(); ++i) {
    EXPECT_LT(ring.points()[i - 1].value, ring.points()[i].value);
  }
}

}  // namespace
}  // namespace memshard::ketama
