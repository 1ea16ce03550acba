// What the status page shows of a config (runtime/pool_layout.h): ring
// shares and copies per server, and server states.
#include "proxy/runtime/pool_layout.h"

#include <gtest/gtest.h>

#include <numeric>
#include <string>

#include "conf/config.h"
#include "proxy/routes/topology.h"

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

// A reload's servers, by what the reload did with them: a server only in
// a config that waits for its reload_switch_at is joining (it takes no
// share until the switch), and one a reload removed while its
// reload_warmup window still looks keys up there is draining.
TEST(PoolLayouts, ServersOfAWaitingSwitchAreJoiningAndRemovedOnesDraining) {
  constexpr uint64_t kMono = 50'000'000;
  constexpr int64_t kUnixSeconds = 1'767'225'600;  // 2026-01-01T00:00:00Z
  auto build = [](const std::string& extra, int servers, uint64_t generation,
                  const Topology* previous) {
    std::string text =
        "alpha:\n  listen: 127.0.0.1:22121\n  reload_warmup: 60000\n" + extra + "  servers:\n";
    for (int i = 1; i <= servers; ++i) text += "   - 127.0.0.1:2100" + std::to_string(i) + ":1\n";
    conf::LoadResult r = conf::parse_config(text, "test.yml");
    for (const conf::ConfigError& e : r.errors) ADD_FAILURE() << e.to_string();
    return build_topology(*r.config, generation, previous, kMono, kUnixSeconds * 1'000'000);
  };
  auto up = [](const std::string&, const std::string&) { return ServerState::up; };
  auto three = build("", 3, 1, nullptr);
  auto waiting =
      build("  reload_switch_at: " + std::to_string(kUnixSeconds + 60) + "\n", 4, 2, three.get());
  ASSERT_TRUE(waiting->pools.front().pending);
  std::vector<PoolLayout> layouts = pool_layouts(*waiting, up, kMono);
  ASSERT_EQ(layouts.size(), 1u);
  ASSERT_EQ(layouts[0].servers.size(), 4u);
  for (int i = 0; i < 3; ++i) EXPECT_EQ(layouts[0].servers[i].state, ServerState::up) << i;
  EXPECT_EQ(layouts[0].servers[3].address, "127.0.0.1:21004");
  EXPECT_EQ(layouts[0].servers[3].state, ServerState::joining);
  EXPECT_EQ(layouts[0].servers[3].share, 0.0) << "no share before the switch";
  EXPECT_EQ(server_state_name(ServerState::joining), "joining");

  auto two = build("", 2, 3, three.get());
  layouts = pool_layouts(*two, up, kMono);
  ASSERT_EQ(layouts[0].servers.size(), 3u);
  EXPECT_EQ(layouts[0].servers[2].address, "127.0.0.1:21003");
  EXPECT_EQ(layouts[0].servers[2].state, ServerState::draining);
}

}  // namespace
}  // namespace memshard::proxy
