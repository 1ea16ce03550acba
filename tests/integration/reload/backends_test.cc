// What a reload does to backend connections: servers that stay keep their
// connections (no reconnect), and a request already sent to a server that
// the new config removes still completes there.
#include <gtest/gtest.h>

#include <csignal>
#include <set>
#include <thread>

#include "proxy/runtime/worker_picker.h"
#include "reload_util.h"

namespace memshard::testing::reload {
namespace {

std::vector<std::string> numbered(const std::string& prefix, int n) {
  std::vector<std::string> keys;
  for (int i = 0; i < n; ++i) keys.push_back(key_of(prefix, static_cast<uint64_t>(i)));
  return keys;
}

// Sets a few keys and multi-gets many (spanning every server) on each
// connection; fails the test on any error.
void traffic(std::vector<std::unique_ptr<Conn>>& conns, const std::string& prefix) {
  std::vector<std::string> keys = numbered(prefix, 200);
  for (size_t c = 0; c < conns.size(); ++c) {
    Conn& conn = *conns[c];
    for (size_t i = c; i < keys.size(); i += conns.size() * 4) {
      ASSERT_TRUE(conn.set(keys[i], value_for(keys[i], i))) << conn.error();
    }
    std::vector<Hit> hits;
    ASSERT_TRUE(conn.get(keys, hits)) << conn.error();
  }
}

uint64_t generation_of(uint16_t port) {
  return stat_of(proxy_stats(port), "config_generation");
}

TEST(ReloadBackends, ServersThatStayKeepTheirConnections) {
  std::vector<std::unique_ptr<Memcached>> mc;
  std::vector<uint16_t> ports;
  for (int i = 0; i < 4; ++i) {
    mc.push_back(std::make_unique<Memcached>());
    ports.push_back(mc.back()->port());
  }
  const uint64_t threads = 2;
  uint16_t port = free_port();
  PoolDef before;
  before.listen = listen_on(port);
  before.servers = {{ports[0], 1}, {ports[1], 1}, {ports[2], 1}};
  PoolDef after = before;
  after.servers = {{ports[0], 1}, {ports[1], 3}, {ports[2], 1}, {ports[3], 1}};  // reweight + add

  // Connections each memcached has with nobody but this stat query.
  std::vector<uint64_t> idle_conns;
  for (auto& m : mc) idle_conns.push_back(m->stat("curr_connections"));

  TempDir dir;
  const std::string path = dir.write("memshard.yml", yaml(before));
  Memshard ms(path, memshard_args({"--threads", std::to_string(threads), "--fixed-threads"}), port);
  ASSERT_TRUE(wait_ready(port));

  // Every worker connects to every server; then clients that stay open
  // across the reload.
  ASSERT_TRUE(warm_every_worker(port, ms.process().pid(), {ports[0], ports[1], ports[2]},
                                static_cast<int>(threads)));
  std::vector<std::unique_ptr<Conn>> conns;
  for (uint64_t i = 0; i < memshard::proxy::WorkerPicker::reaching_every_worker(threads); ++i)
    conns.push_back(std::make_unique<Conn>(port));
  traffic(conns, "warm:");
  if (HasFatalFailure()) return;
  // Every worker now holds its one connection to every server.
  for (size_t i = 0; i < 3; ++i) {
    ASSERT_EQ(mc[i]->stat("curr_connections"), idle_conns[i] + threads)
        << "warm-up did not reach every worker for server " << i;
  }

  // Each stat query is itself one more connection, counted in its answer.
  std::vector<uint64_t> total_before;
  for (auto& m : mc) total_before.push_back(m->stat("total_connections"));

  dir.write("memshard.yml", yaml(after));
  ms.process().signal(SIGHUP);
  ASSERT_TRUE(wait_stat(port, "config_generation", [](uint64_t g) { return g == 2; }).has_value())
      << "the reload did not happen";

  // Traffic again, on the old connections and on new ones.
  for (int i = 0; i < 6; ++i) conns.push_back(std::make_unique<Conn>(port));
  traffic(conns, "again:");
  if (HasFatalFailure()) return;

  for (size_t i = 0; i < 3; ++i) {
    uint64_t total_after = mc[i]->stat("total_connections");
    EXPECT_EQ(total_after - total_before[i], 1u)
        << "server " << i
        << " (kept by the reload) was connected to again: " << total_after - total_before[i] - 1
        << " new connection(s) besides the stat query";
    EXPECT_EQ(mc[i]->stat("curr_connections"), idle_conns[i] + threads) << "server " << i;
  }
  // The added server: one connection per worker, plus the stat query.
  EXPECT_EQ(mc[3]->stat("total_connections") - total_before[3], 1 + threads);
  EXPECT_EQ(mc[3]->stat("curr_connections"), idle_conns[3] + threads);
  EXPECT_EQ(generation_of(port), 2u);
  // (after the counts: this check itself connects to every server)
  EXPECT_TRUE(keys_land_per_config(port, yaml(after), ports, "placed"));
}

TEST(ReloadBackends, InFlightMultiGetCompletesOnTheRemovedServer) {
  std::vector<std::unique_ptr<Memcached>> mc;
  std::vector<uint16_t> ports;
  for (int i = 0; i < 5; ++i) {
    mc.push_back(std::make_unique<Memcached>());
    ports.push_back(mc.back()->port());
  }
  uint16_t port = free_port();
  PoolDef old_pool;
  old_pool.listen = listen_on(port);
  old_pool.servers = {{ports[0], 1}, {ports[1], 1}, {ports[2], 1}, {ports[3], 1}};
  PoolDef new_pool = old_pool;
  new_pool.servers = {{ports[0], 1}, {ports[2], 1}, {ports[3], 1}, {ports[4], 1}};  // -1 +4
  const std::string old_text = yaml(old_pool), new_text = yaml(new_pool);
  Placement old_where(old_text), new_where(new_text);

  // Keys in an order that interleaves the servers.
  std::vector<std::string> keys = numbered("inflight:", 48);
  std::set<uint16_t> used;
  for (const auto& k : keys) used.insert(old_where.port_of(k));
  ASSERT_EQ(used.size(), 4u) << "the keys do not span every server";

  TempDir dir;
  const std::string path = dir.write("memshard.yml", old_text);
  Memshard ms(path, memshard_args({"--threads", "2", "--fixed-threads"}), port);
  ASSERT_TRUE(wait_ready(port));

  Conn c(port);
  for (size_t i = 0; i < keys.size(); ++i)
    ASSERT_TRUE(c.set(keys[i], value_for(keys[i], i))) << c.error();
  std::vector<Hit> hits;
  ASSERT_TRUE(c.get(keys, hits)) << c.error();
  ASSERT_EQ(hits.size(), keys.size());

  const uint64_t gets_before = stat_of(proxy_stats(port), "cmd_get");
  ASSERT_TRUE(stop_process(mc[1]->process().pid()));
  std::string request = "get";
  for (const auto& k : keys) request += " " + k;
  ASSERT_TRUE(c.send(request + "\r\n"));
  ASSERT_TRUE(wait_stat(port, "cmd_get", [&](uint64_t v) { return v >= gets_before + keys.size(); })
                  .has_value())
      << "the multi-get was never dispatched";
  ASSERT_TRUE(c.idle_for(200ms)) << "a reply came while a server is stopped";

  dir.write("memshard.yml", new_text);
  ms.process().signal(SIGHUP);
  ASSERT_TRUE(wait_stat(port, "config_generation", [](uint64_t g) { return g == 2; }).has_value())
      << "the reload did not happen";
  // New requests already use the new config while the old fragment waits
  // (server 1 is left out of the check: it cannot answer).
  std::vector<uint16_t> running = {ports[0], ports[2], ports[3], ports[4]};
  EXPECT_TRUE(keys_land_per_config(port, new_text, running, "during:", 40));
  ASSERT_TRUE(c.idle_for(100ms)) << "the in-flight multi-get answered before its server resumed";

  mc[1]->process().signal(SIGCONT);
  ASSERT_TRUE(c.read_values(hits)) << c.error();
  ASSERT_EQ(hits.size(), keys.size()) << "incomplete reply to the in-flight multi-get";
  for (size_t i = 0; i < keys.size(); ++i) {
    EXPECT_EQ(hits[i].key, keys[i]) << "position " << i;
    EXPECT_EQ(hits[i].data, value_for(keys[i], i)) << keys[i];
  }

  // The same keys now: a hit only where the new ring keeps the old owner.
  ASSERT_TRUE(c.get(keys, hits)) << c.error();
  std::vector<std::string> expected;
  for (const auto& k : keys) {
    if (new_where.port_of(k) == old_where.port_of(k)) expected.push_back(k);
  }
  std::vector<std::string> got;
  for (const auto& h : hits) got.push_back(h.key);
  EXPECT_EQ(got, expected);
  EXPECT_LT(expected.size(), keys.size());
  EXPECT_TRUE(keys_land_per_config(port, new_text, ports, "after:", 60));
  auto s = proxy_stats(port);
  EXPECT_EQ(stat_of(s, "forward_error"), 0u);
  EXPECT_EQ(stat_of(s, "client_errors"), 0u);
}

}  // namespace
}  // namespace memshard::testing::reload
