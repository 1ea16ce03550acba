// Which routes a pool gets (routes/pool_route.h), built from small configs
// parsed by conf::parse_config as a worker builds them: over one backend
// per server (never asked for a connection here), the plain routes of an
// unreplicated pool, the replicated ones with a placement per copy, the
// reload warm-up around either while a past config's window is open, and
// the hot-key layer around everything.
#include "proxy/routes/pool_route.h"

#include <gtest/gtest.h>

#include <array>
#include <memory>
#include <string>
#include <vector>

#include "conf/config.h"
#include "proxy/routes/replicated_get_route.h"
#include "proxy/routes/replicated_key_route.h"
#include "proxy/routes/switch_routes.h"
#include "proxy/routes/warm_get_route.h"
#include "proxy/routes/warm_key_route.h"
#include "tests/proxy/backends/fake_backend.h"

namespace memshard::proxy {
namespace {

constexpr uint64_t kReloadUsec = 5'000'000;

// A pool "alpha" of `servers` local servers (ports 21001...), with `extra`
// directive lines.
std::string config(int servers, const std::string& extra = "") {
  std::string text = "alpha:\n  listen: 127.0.0.1:22121\n" + extra + "  servers:\n";
  for (int i = 1; i <= servers; ++i) text += "   - 127.0.0.1:2100" + std::to_string(i) + ":1\n";
  return text;
}

std::shared_ptr<const Topology> topology(const std::string& text, uint64_t generation,
                                         const Topology* previous = nullptr) {
  conf::LoadResult r = conf::parse_config(text, "test.yml");
  for (const conf::ConfigError& e : r.errors) ADD_FAILURE() << e.to_string();
  if (!r.config) return nullptr;
  return build_topology(*r.config, generation, previous, kReloadUsec);
}

// Sample keys: enough that every server and every arc of a small ring
// holds some.
std::vector<std::string> sample_keys() {
  std::vector<std::string> keys;
  for (int i = 0; i < 500; ++i) keys.push_back("key:" + std::to_string(i));
  return keys;
}

// One worker's view of a pool: a backend per server of the config in
// force and of each past config, then the pool's routes over them.
class PoolRouteTest : public ::testing::Test {
 protected:
  PoolRoute& make(const std::shared_ptr<const Topology>& topo) {
    topo_ = topo;
    return make_into(route_);
  }
  // The same pool's routes once more, as another worker would build them.
  PoolRoute& make_another() { return make_into(another_); }

  PoolRoute& make_into(PoolRoute& route) {
    const Pool& pool = topo_->pools.front();
    route.pool = &pool;
    route.stats = std::make_shared<PoolStats>();
    for (const ServerInfo& s : pool.servers) route.backends.push_back(&backend(s));
    for (const PastRing& past : pool.past) {
      std::vector<Server*> servers;
      for (const ServerInfo& s : past.servers) servers.push_back(&backend(s));
      route.past_servers.push_back(std::move(servers));
    }
    if (pool.pending) {
      for (const ServerInfo& s : pool.pending->servers) route.next_backends.push_back(&backend(s));
    }
    return route;
  }

  // A worker has one backend per server identity, shared by the configs
  // that name it.
  BackendServer& backend(const ServerInfo& s) {
    for (auto& b : backends_) {
      if (b->identity() == s.identity) return *b;
    }
    ServerSettings settings;
    settings.pool = "alpha";
    backends_.push_back(std::make_unique<BackendServer>(ctx_, s.identity, s.addresses, settings,
                                                        std::make_shared<ServerStats>(),
                                                        std::make_shared<PoolStats>()));
    return *backends_.back();
  }

  testing_backends::FakeContext ctx_;
  std::vector<std::unique_ptr<BackendServer>> backends_;
  std::shared_ptr<const Topology> topo_;
  PoolRoute route_;
  PoolRoute another_;
};

template <typename T, typename P>
bool is(const std::unique_ptr<P>& p) {
  return dynamic_cast<T*>(p.get()) != nullptr;
}

TEST_F(PoolRouteTest, AnUnreplicatedPoolGetsKeySplitAndBroadcastOverItsRing) {
  PoolRoute& r = make(topology(config(3), 1));
  r.build_plain_routes();
  EXPECT_TRUE(is<KeyRoute>(r.key));
  EXPECT_TRUE(is<SplitRoute>(r.multi_get));
  EXPECT_TRUE(is<BroadcastRoute>(r.all));
  EXPECT_EQ(r.replicas, nullptr);
  EXPECT_TRUE(r.copy_keys.empty());
  EXPECT_TRUE(r.copy_reads.empty());
  EXPECT_EQ(r.past, nullptr);
  EXPECT_EQ(r.own_key, nullptr);
  ASSERT_NE(r.placement, nullptr);
  ASSERT_EQ(r.placement->size(), 3u);
  for (size_t i = 0; i < 3; ++i) EXPECT_EQ(&r.placement->server(i), r.backends[i]);
  for (const std::string& k : sample_keys()) {
    EXPECT_EQ(r.placement->place(k), r.pool->ring.lookup(k)) << k;
  }
}

TEST_F(PoolRouteTest, BuildRoutesPutsTheHotKeyLayerAroundThem) {
  PoolRoute& r = make(topology(config(3), 1));
  r.build_routes();
  EXPECT_FALSE(is<KeyRoute>(r.key)) << "wrapped";
  EXPECT_FALSE(is<SplitRoute>(r.multi_get)) << "wrapped";
  EXPECT_TRUE(is<BroadcastRoute>(r.all)) << "no hot_key_cache: flush_all has nothing to clear";
}

TEST_F(PoolRouteTest, WithAHotKeyCacheFlushAllIsWrappedToo) {
  PoolRoute& r = make(topology(config(3, "  hot_key_cache: 1\n"), 1));
  r.build_routes();
  EXPECT_FALSE(is<KeyRoute>(r.key));
  EXPECT_FALSE(is<SplitRoute>(r.multi_get));
  EXPECT_FALSE(is<BroadcastRoute>(r.all)) << "flush_all clears the cache";
}

TEST_F(PoolRouteTest, AReplicatedPoolGetsAPlacementAndRoutesPerCopy) {
  PoolRoute& r = make(topology(config(4, "  replicas: 3\n  write_policy: majority\n"), 1));
  r.build_plain_routes();
  EXPECT_TRUE(is<ReplicatedKeyRoute>(r.key));
  EXPECT_TRUE(is<ReplicatedGetRoute>(r.multi_get));
  EXPECT_TRUE(is<BroadcastRoute>(r.all));
  ASSERT_NE(r.replicas, nullptr);
  EXPECT_EQ(r.replicas->replicas(), 3u);
  ASSERT_EQ(r.copy_placements.size(), 3u);
  EXPECT_EQ(r.copy_keys.size(), 3u);
  EXPECT_EQ(r.copy_reads.size(), 3u);
  for (const std::string& k : sample_keys()) {
    const std::vector<size_t> list = r.pool->ring.preference_list(k, 3);
    ASSERT_EQ(list.size(), 3u);
    for (size_t copy = 0; copy < 3; ++copy) {
      EXPECT_EQ(r.copy_placements[copy]->place(k), list[copy]) << k << " copy " << copy;
    }
  }
  EXPECT_EQ(r.past, nullptr);
  // build_routes: the same copies, the hot-key layer around the routes.
  PoolRoute& built = make_another();
  built.build_routes();
  ASSERT_NE(built.replicas, nullptr);
  EXPECT_EQ(built.replicas->replicas(), 3u);
  EXPECT_EQ(built.copy_keys.size(), 3u);
  EXPECT_EQ(built.copy_reads.size(), 3u);
  EXPECT_FALSE(is<ReplicatedKeyRoute>(built.key)) << "wrapped";
  EXPECT_FALSE(is<ReplicatedGetRoute>(built.multi_get)) << "wrapped";
}

TEST_F(PoolRouteTest, AReloadWithWarmupWrapsThePoolsOwnRoutes) {
  auto before = topology(config(3), 1);
  auto after = topology(config(4, "  reload_warmup: 60000\n"), 2, before.get());
  ASSERT_EQ(after->pools.front().past.size(), 1u);
  PoolRoute& r = make(after);
  r.build_plain_routes();
  EXPECT_TRUE(is<WarmKeyRoute>(r.key));
  EXPECT_TRUE(is<WarmGetRoute>(r.multi_get));
  EXPECT_TRUE(is<KeyRoute>(r.own_key)) << "the pool's own route, inside the warm-up";
  EXPECT_TRUE(is<SplitRoute>(r.own_multi_get));
  ASSERT_NE(r.past, nullptr);
  EXPECT_TRUE(r.past->open(kReloadUsec));
  // A moved key is looked for where the old ring kept it; one that did
  // not move is not looked for anywhere else.
  const ketama::Ring& old_ring = before->pools.front().ring;
  const ketama::Ring& new_ring = after->pools.front().ring;
  size_t moved = 0;
  for (const std::string& k : sample_keys()) {
    std::array<Server*, kMaxPastOwners> owners{};
    const size_t n = r.past->owners(k, kReloadUsec, owners);
    const std::string old_identity = before->pools.front().servers[old_ring.lookup(k)].identity;
    const std::string new_identity = after->pools.front().servers[new_ring.lookup(k)].identity;
    if (old_identity == new_identity) {
      EXPECT_EQ(n, 0u) << k;
      continue;
    }
    ++moved;
    ASSERT_EQ(n, 1u) << k;
    EXPECT_EQ(owners[0], r.past_servers[0][old_ring.lookup(k)]) << k;
  }
  EXPECT_GT(moved, 0u) << "a fourth server takes some keys";
  // build_routes: the warm-up inside the hot-key layer, the pool's own
  // routes inside the warm-up.
  PoolRoute& built = make_another();
  built.build_routes();
  EXPECT_FALSE(is<WarmKeyRoute>(built.key)) << "wrapped";
  EXPECT_TRUE(is<KeyRoute>(built.own_key));
  EXPECT_TRUE(is<SplitRoute>(built.own_multi_get));
  ASSERT_NE(built.past, nullptr);
}

TEST_F(PoolRouteTest, AReplicatedPoolsWarmupWrapsItsReplicatedRoutes) {
  auto before = topology(config(3, "  replicas: 2\n"), 1);
  auto after = topology(config(4, "  replicas: 2\n  reload_warmup: 60000\n"), 2, before.get());
  PoolRoute& r = make(after);
  r.build_plain_routes();
  EXPECT_TRUE(is<WarmKeyRoute>(r.key));
  EXPECT_TRUE(is<WarmGetRoute>(r.multi_get));
  EXPECT_TRUE(is<ReplicatedKeyRoute>(r.own_key));
  EXPECT_TRUE(is<ReplicatedGetRoute>(r.own_multi_get));
}

TEST_F(PoolRouteTest, NoWarmupWithoutAWindowOrWhenNothingMoved) {
  auto before = topology(config(3), 1);
  {
    // The reload has no reload_warmup: nothing is kept of the old ring.
    PoolRoute& r = make(topology(config(4), 2, before.get()));
    r.build_plain_routes();
    EXPECT_TRUE(is<KeyRoute>(r.key));
    EXPECT_EQ(r.past, nullptr);
  }
  route_ = PoolRoute();
  {
    // The same servers again: no key moved, so no past ring.
    PoolRoute& r = make(topology(config(3, "  reload_warmup: 60000\n"), 2, before.get()));
    r.build_plain_routes();
    EXPECT_TRUE(is<KeyRoute>(r.key));
    EXPECT_TRUE(is<SplitRoute>(r.multi_get));
    EXPECT_EQ(r.past, nullptr);
  }
}

TEST_F(PoolRouteTest, AWaitingSwitchGetsTheRoutesOfBothPlacementsAndPicksPerKey) {
  auto before = topology(config(3), 1);
  // kReloadUsec on the monotonic clock is some wall-clock time: a switch an
  // hour ahead of the real one is ahead of this one too.
  const int64_t in_an_hour = static_cast<int64_t>(time(nullptr)) + 3600;
  auto after = topology(
      config(4, "  reload_warmup: 60000\n  reload_switch_at: " + std::to_string(in_an_hour) + "\n"),
      2, before.get());
  ASSERT_TRUE(after->pools.front().pending);
  PoolRoute& r = make(after);
  r.build_routes();
  EXPECT_TRUE(is<WarmKeyRoute>(r.before_key)) << "the routes in force, with the future ring";
  EXPECT_TRUE(is<WarmGetRoute>(r.before_multi_get));
  ASSERT_NE(r.next, nullptr);
  EXPECT_TRUE(is<WarmKeyRoute>(r.next->key)) << "the waiting placement falls back on the old";
  EXPECT_TRUE(is<WarmGetRoute>(r.next->multi_get));
  EXPECT_EQ(r.next->placement->size(), 4u);
  ASSERT_NE(r.all_servers, nullptr);
  EXPECT_EQ(r.all_servers->size(), 4u) << "flush_all reaches every server of both";
  EXPECT_FALSE(r.holding());
  // Keys that will move are deleted where they will be, and only those.
  ASSERT_NE(r.past, nullptr);
  size_t moving = 0;
  for (const std::string& k : sample_keys()) {
    std::array<Server*, kMaxPastOwners> owners;
    PastPlacement::Kinds kinds;
    const size_t n = r.past->owners(k, kReloadUsec, owners, &kinds);
    const size_t now = r.pool->ring.lookup(k);
    const size_t then = r.pool->pending->ring.lookup(k);
    const bool moves = r.pool->servers[now].identity != r.pool->pending->servers[then].identity;
    EXPECT_EQ(kinds.future, moves ? 1u : 0u) << k;
    EXPECT_EQ(n, kinds.future) << k;
    if (!moves) continue;
    ++moving;
    EXPECT_EQ(owners[0], r.next_backends[then]) << k;
  }
  EXPECT_GT(moving, 50u);
}

}  // namespace
}  // namespace memshard::proxy
