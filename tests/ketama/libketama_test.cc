// last.fm libketama: its published vectors.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdio>

#include "ketama/ring.h"
#include "test_support.h"

namespace memshard::ketama {
namespace {

using testing::server;

RingOptions libketama() {
  RingOptions o;
  o.mode = Mode::libketama;
  return o;
}

// The continuum point a hash lands on (libketama's ketama_get_server()
// returns it along with the server).
uint32_t point_for(const Ring& ring, uint32_t h) {
  const std::vector<Point>& points = ring.points();
  auto it = std::lower_bound(points.begin(), points.end(), h,
                             [](const Point& p, uint32_t value) { return p.value < value; });
  return it == points.end() ? points.front().value : it->value;
}

// python_ketama/tests.py in last.fm's repository.
TEST(Libketama, PythonBindingVector) {
  Ring ring =
      Ring::build({server("127.0.0.1", 11211, 600), server("127.0.0.1", 11212, 400)}, libketama());
  EXPECT_EQ(ring.points().size(), 320u);
  EXPECT_EQ(ring.point_count(0), 192u);
  EXPECT_EQ(ring.point_count(1), 128u);
  EXPECT_EQ(ring.ring_name(0), "127.0.0.1:11211");  // port kept even when 11211
  EXPECT_EQ(ring.hash_key("test"), 3446378249u);
  EXPECT_EQ(ring.lookup("test"), 0u);
  EXPECT_EQ(point_for(ring, ring.hash_key("test")), 3454255383u);
}

// libketama/test.sh: ketama_test prints ketama_error() (empty) and then, for
// the keys "0".."999999", "<key hash> <point> <server>" against
// ketama.servers; the MD5 of that output is published.
TEST(Libketama, MillionKeyOutputDigest) {
  Ring ring = Ring::build({server("10.0.1.1", 11211, 600), server("10.0.1.2", 11211, 300),
                           server("10.0.1.3", 11211, 200), server("10.0.1.4", 11211, 350),
                           server("10.0.1.5", 11211, 1000), server("10.0.1.6", 11211, 800),
                           server("10.0.1.7", 11211, 950), server("10.0.1.8", 11211, 100)},
                          libketama());
  std::string output = "\n";
  output.reserve(40'000'000);
  char line[80];
  for (int i = 0; i < 1000000; ++i) {
    std::string key = std::to_string(i);
    uint32_t h = ring.hash_key(key);
    const std::string& address = ring.ring_name(ring.lookup(key));
    int n = std::snprintf(line, sizeof line, "%u %u %s\n", h, point_for(ring, h), address.c_str());
    output.append(line, static_cast<size_t>(n));
  }
  unsigned char digest[16];
  md5_digest(output, digest);
  char hex[33];
  for (int i = 0; i < 16; ++i) {
    std::snprintf(hex + 2 * i, 3, "%02x", digest[i]);
  }
  EXPECT_STREQ(hex, "5672b131391f5aa2b280936aec1eea74");
}

// The digest count is floorf(pct * 40.0 * N): 40.0 is a double, so the
// product is computed in double and only then rounded to float. With 10
// servers of total weight 25, weight 1 gives 0.04f * 40.0 * 10 =
// 15.999999642372131 in double, which rounds to the float 16.0; computed in
// float the product is 15.999999 and floors to 15.
TEST(Libketama, DigestCountUsesADoubleProduct) {
  std::vector<ServerEntry> servers;
  for (uint32_t w : {1, 2, 3, 4, 6, 1, 1, 1, 1, 5}) {
    servers.push_back(server("10.0.0." + std::to_string(servers.size()), 11211, w));
  }
  Ring ring = Ring::build(servers, libketama());
  EXPECT_EQ(ring.point_count(0), 4u * 16);
  EXPECT_EQ(ring.point_count(1), 4u * 32);
  EXPECT_EQ(ring.point_count(2), 4u * 48);
  EXPECT_EQ(ring.point_count(3), 4u * 64);
  EXPECT_EQ(ring.point_count(4), 4u * 96);
}

}  // namespace
}  // namespace memshard::ketama
