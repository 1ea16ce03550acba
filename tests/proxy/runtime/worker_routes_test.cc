// WorkerRoutes (runtime/worker_routes.h): what a worker keeps across
// reloads. A server the new config keeps keeps its connections and
// counters; a server dropped goes once it owes nothing; routes replaced
// while a request they hold is in flight stay until it is done; every
// apply bumps the epoch clients watch. Real configs (conf::parse_config),
// the backends on a fake worker loop; no server is ever contacted.
#include "proxy/runtime/worker_routes.h"

#include <gtest/gtest.h>

#include <memory>
#include <stdexcept>
#include <string>
#include <vector>

#include "conf/config.h"
#include "proxy/routes/topology.h"
#include "tests/proxy/backends/fake_backend.h"

namespace memshard::proxy {
namespace {

using testing_backends::FakeContext;

std::shared_ptr<const Topology> topology(const std::vector<std::string>& servers,
                                         uint64_t generation, const std::string& pool = "alpha") {
  std::string text = pool + ":\n  listen: 127.0.0.1:22199\n  servers:\n";
  for (const auto& s : servers) text += "   - " + s + ":1\n";
  conf::LoadResult loaded = conf::parse_config(text, "worker_routes_test.yml");
  if (!loaded.errors.empty()) throw std::runtime_error(loaded.errors.front().to_string());
  return build_topology(*loaded.config, generation);
}

class WorkerRoutesTest : public ::testing::Test {
 protected:
  FakeContext ctx_;
  WorkerRoutes routes_{ctx_};
};

TEST_F(WorkerRoutesTest, ARouteForEachPoolOfTheTopologyAndNoneForOthers) {
  EXPECT_EQ(routes_.route("alpha"), nullptr) << "no topology yet";
  routes_.apply(topology({"127.0.0.1:1", "127.0.0.1:2"}, 7));
  const PoolRoute* alpha = routes_.route("alpha");
  ASSERT_NE(alpha, nullptr);
  EXPECT_EQ(alpha->backends.size(), 2u);
  EXPECT_NE(alpha->key, nullptr);
  EXPECT_NE(alpha->multi_get, nullptr);
  EXPECT_NE(alpha->all, nullptr);
  EXPECT_EQ(routes_.route("beta"), nullptr);
  EXPECT_EQ(routes_.generation(), 7u);
}

TEST_F(WorkerRoutesTest, EveryApplyBumpsTheEpoch) {
  const uint64_t before = routes_.epoch();
  routes_.apply(topology({"127.0.0.1:1"}, 1));
  const uint64_t once = routes_.epoch();
  routes_.apply(topology({"127.0.0.1:1"}, 2));
  EXPECT_GT(once, before);
  EXPECT_GT(routes_.epoch(), once) << "even when nothing changed: clients look their pool up again";
}

TEST_F(WorkerRoutesTest, AServerTheNewConfigKeepsKeepsItsConnectionsAndCounters) {
  routes_.apply(topology({"127.0.0.1:1", "127.0.0.1:2"}, 1));
  BackendServer* kept = routes_.route("alpha")->backends[1];
  kept->stats().requests.add(5);
  routes_.apply(topology({"127.0.0.1:3", "127.0.0.1:2"}, 2));
  const PoolRoute* alpha = routes_.route("alpha");
  ASSERT_EQ(alpha->backends.size(), 2u);
  EXPECT_EQ(alpha->backends[1], kept) << "the same BackendServer: the same connections";
  EXPECT_NE(alpha->backends[0], kept);
  StatsSnapshot snap;
  routes_.collect(snap);
  // The counters come in ServerStats' declaration order.
  size_t index = 0, at = 0;
  ServerStats().for_each([&](std::string_view name, const Counter&) {
    if (name == "requests") index = at;
    ++at;
  });
  uint64_t requests = 0;
  for (const auto& [name, server] : snap.pools["alpha"].servers) {
    if (server.identity == "127.0.0.1:2") requests = server.counters.at(index);
  }
  EXPECT_EQ(requests, 5u) << "its counters carried over";
}

TEST_F(WorkerRoutesTest, CountersOfAServerThatLeftGoOnceReaped) {
  routes_.apply(topology({"127.0.0.1:1", "127.0.0.1:2"}, 1));
  routes_.apply(topology({"127.0.0.1:1"}, 2));
  routes_.reap();
  StatsSnapshot snap;
  routes_.collect(snap);
  ASSERT_EQ(snap.pools["alpha"].servers.size(), 1u);
  EXPECT_EQ(snap.pools["alpha"].servers.begin()->second.identity, "127.0.0.1:1");
}

TEST_F(WorkerRoutesTest, RoutesHoldingARequestOutliveTheirReplacementUntilItIsDone) {
  routes_.apply(topology({"127.0.0.1:1"}, 1));
  const PoolRoute* old = routes_.route("alpha");
  RouteLife* life = old->life.get();
  ++life->held_requests;  // a composite route's work in flight
  routes_.apply(topology({"127.0.0.1:2"}, 2));
  routes_.reap();
  // Still alive: the held request may send through it (the sanitizers
  // would catch a use after free here).
  EXPECT_EQ(life->held_requests, 1u);
  EXPECT_EQ(old->pool->config.name, "alpha");
  --life->held_requests;
  routes_.reap();  // now it may go
  EXPECT_NE(routes_.route("alpha"), nullptr);
  EXPECT_EQ(routes_.route("alpha")->backends[0]->identity(), "127.0.0.1:2");
}

TEST_F(WorkerRoutesTest, APoolRemovedHasNoRouteAndItsCountersGo) {
  routes_.apply(topology({"127.0.0.1:1"}, 1, "alpha"));
  routes_.route("alpha")->stats->requests.add(3);
  EXPECT_EQ(routes_.requests(), 3u);
  routes_.apply(topology({"127.0.0.1:1"}, 2, "beta"));
  routes_.reap();
  EXPECT_EQ(routes_.route("alpha"), nullptr);
  EXPECT_NE(routes_.route("beta"), nullptr);
  EXPECT_EQ(routes_.requests(), 0u) << "the removed pool's counters are not summed any more";
}

}  // namespace
}  // namespace memshard::proxy
