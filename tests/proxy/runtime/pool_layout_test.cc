// What the status page shows of a config (runtime/pool_layout.h): ring
// shares and copies per server, and server states.
#include "proxy/runtime/pool_layout.h"

#include <gtest/gtest.h>

#include <numeric>
#include <string>

#include "conf/config.h"

namespace memshard::proxy {
namespace {

ketama::Ring ring_of(ketama::Distribution d) {
  std::vector<ketama::ServerEntry> servers;
  for (int i = 1; i <= 4; ++i) {
    ketama::ServerEntry e;
    e.host = "10.0.0." + std::to_string(i);
    e.weight = i == 4 ? 2 : 1;
    servers.push_back(e);
  }
  ketama::RingOptions o;
  o.distribution = d;
  return ketama::Ring::build(servers, o);
}

TEST(CopyShares, OneCopyIsTheKeyspaceShare) {
  ketama::Ring ring = ring_of(ketama::Distribution::ketama);
  std::vector<double> copies = copy_shares(ring, 1);
  std::vector<uint64_t> owned = ring.owned_hashes();
  ASSERT_EQ(copies.size(), 4u);
  for (size_t i = 0; i < 4; ++i)
    EXPECT_DOUBLE_EQ(copies[i], static_cast<double>(owned[i]) / 4294967296.0);
}

TEST(CopyShares, CopiesSumToOneAndEvenOutWithMoreOfThem) {
  for (ketama::Distribution d : {ketama::Distribution::ketama, ketama::Distribution::modula}) {
    ketama::Ring ring = ring_of(d);
    std::vector<double> two = copy_shares(ring, 2), four = copy_shares(ring, 4);
    EXPECT_NEAR(std::accumulate(two.begin(), two.end(), 0.0), 1.0, 1e-9);
    // Every key on all four servers: each holds a quarter of the copies.
    for (double c : four) EXPECT_NEAR(c, 0.25, 1e-9);
  }
}

TEST(PoolLayouts, ListsListenerWeightsSharesAndStates) {
  conf::LoadResult loaded = conf::parse_config(
      "alpha:\n  listen: 127.0.0.1:22122\n  auto_eject_hosts: true\n  replicas: 2\n"
      "  servers:\n   - 127.0.0.1:11211:1\n   - 127.0.0.1:11212:3 big\n   - 127.0.0.1:11213:1\n",
      "test.yml");
  ASSERT_TRUE(loaded.errors.empty()) << loaded.errors.front().to_string();
  std::shared_ptr<const Topology> t = build_topology(*loaded.config, 1);
  std::vector<PoolLayout> layouts = pool_layouts(
      *t,
      [](const std::string& pool, const std::string& identity) {
        EXPECT_EQ(pool, "alpha");
        return identity == "127.0.0.1:11213" ? ServerState::probing : ServerState::up;
      },
      0);
  ASSERT_EQ(layouts.size(), 1u);
  const PoolLayout& l = layouts[0];
  EXPECT_EQ(l.listen, "127.0.0.1:22122");
  EXPECT_EQ(l.replicas, 2u);
  EXPECT_EQ(l.write_policy, "first");
  EXPECT_TRUE(l.auto_eject_hosts);
  ASSERT_EQ(l.servers.size(), 3u);
  EXPECT_EQ(l.servers[1].address, "127.0.0.1:11212");
  EXPECT_EQ(l.servers[1].weight, 3u);
  EXPECT_GT(l.servers[1].share, l.servers[0].share);
  EXPECT_EQ(l.servers[2].state, ServerState::probing);
  EXPECT_EQ(l.servers[0].state, ServerState::up);
  double shares = 0;
  for (const ServerLayout& s : l.servers) shares += s.share;
  EXPECT_NEAR(shares, 1.0, 1e-9);
}

}  // namespace
}  // namespace memshard::proxy
