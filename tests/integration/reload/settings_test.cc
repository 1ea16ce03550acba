// Reloads that keep the servers but change how the pool uses them: hash and
// distribution, timeout, server_connections. Kept servers keep their
// backends, so the new settings must reach backends that already exist.
#include <gtest/gtest.h>

#include <csignal>
#include <thread>

#include "reload_util.h"

namespace memshard::testing::reload {
namespace {

using Clock = std::chrono::steady_clock;

class ReloadSettings : public ::testing::Test {
 protected:
  void start(const PoolDef& p, int threads) {
    path_ = dir_.write("memshard.yml", yaml(p));
    ms_ = std::make_unique<Memshard>(path_, memshard_args({"--threads", std::to_string(threads)}),
                                     port_);
    ASSERT_TRUE(wait_ready(port_));
  }
  void reload(const PoolDef& p) {
    uint64_t g = stat_of(proxy_stats(port_), "config_generation");
    dir_.write("memshard.yml", yaml(p));
    ms_->process().signal(SIGHUP);
    ASSERT_TRUE(
        wait_stat(port_, "config_generation", [&](uint64_t v) { return v == g + 1; }).has_value())
        << "the reload did not happen";
  }

  uint16_t port_ = free_port();
  TempDir dir_;
  std::string path_;
  std::unique_ptr<Memshard> ms_;
};

TEST_F(ReloadSettings, HashAndDistributionChange) {
  std::vector<std::unique_ptr<Memcached>> mc;
  std::vector<uint16_t> ports;
  PoolDef p;
  p.listen = listen_on(port_);
  for (int i = 0; i < 4; ++i) {
    mc.push_back(std::make_unique<Memcached>());
    ports.push_back(mc.back()->port());
    p.servers.push_back({ports.back(), static_cast<uint32_t>(1 + i % 2)});
  }
  start(p, 2);
  ASSERT_TRUE(keys_land_per_config(port_, yaml(p), ports, "start"));
  const std::vector<std::pair<std::string, std::string>> steps = {{"md5", "ketama"},
                                                                  {"fnv1a_64", "modula"},
                                                                  {"crc32a", "ketama"},
                                                                  {"murmur", "modula"},
                                                                  {"fnv1a_64", "ketama"}};
  int n = 0;
  for (const auto& [hash, distribution] : steps) {
    p.hash = hash;
    p.distribution = distribution;
    reload(p);
    if (HasFatalFailure()) return;
    EXPECT_TRUE(keys_land_per_config(port_, yaml(p), ports, "step" + std::to_string(n++)))
        << hash << "/" << distribution;
  }
}

TEST_F(ReloadSettings, NewTimeoutReachesKeptServers) {
  Memcached m0, m1;
  PoolDef p;
  p.listen = listen_on(port_);
  p.servers = {{m0.port(), 1}, {m1.port(), 1}};
  start(p, 1);
  // Connections to both servers exist before the reload.
  Conn c(port_, 10s);
  std::vector<std::string> keys;
  for (int i = 0; i < 40; ++i) keys.push_back(key_of("t", static_cast<uint64_t>(i)));
  std::vector<Hit> hits;
  ASSERT_TRUE(c.get(keys, hits)) << c.error();
  ASSERT_EQ(m0.stat("curr_connections"), 2u);  // memshard's + this query

  p.directives = {"timeout: 300"};
  reload(p);
  if (HasFatalFailure()) return;
  Placement where(yaml(p));
  std::string on_m0;
  for (const auto& k : keys) {
    if (where.port_of(k) == m0.port()) on_m0 = k;
  }
  ASSERT_FALSE(on_m0.empty());

  ASSERT_TRUE(stop_process(m0.process().pid()));
  auto started = Clock::now();
  ASSERT_TRUE(c.send("get " + on_m0 + "\r\n"));
  std::string line;
  ASSERT_TRUE(c.read_line(line)) << c.error()
                                 << ": no answer within 10 s; the new timeout (300 ms) "
                                    "did not reach the kept server's connection";
  auto waited = std::chrono::duration_cast<std::chrono::milliseconds>(Clock::now() - started);
  m0.process().signal(SIGCONT);
  EXPECT_TRUE(line.starts_with("SERVER_ERROR")) << line;
  EXPECT_GE(waited.count(), 250);
  EXPECT_LT(waited.count(), 3000) << "the timeout of the config in force is 300 ms";
}

TEST_F(ReloadSettings, ServerConnectionsChange) {
  Memcached m0;
  PoolDef p;
  p.listen = listen_on(port_);
  p.servers = {{m0.port(), 1}};
  const uint64_t idle = m0.stat("curr_connections");  // this query alone
  start(p, 1);

  // Clients to spread over the server's connections (by client id).
  std::vector<std::unique_ptr<Conn>> conns;
  auto traffic = [&](const std::string& tag) {
    for (int i = 0; i < 6; ++i) conns.push_back(std::make_unique<Conn>(port_));
    for (size_t i = 0; i < conns.size(); ++i) {
      std::string key = key_of(tag, i);
      ASSERT_TRUE(conns[i]->set(key, value_for(key, i))) << conns[i]->error();
    }
  };
  traffic("one");
  if (HasFatalFailure()) return;
  EXPECT_EQ(m0.stat("curr_connections"), idle + 1);

  p.directives = {"server_connections: 3"};
  reload(p);
  if (HasFatalFailure()) return;
  traffic("three");
  if (HasFatalFailure()) return;
  EXPECT_EQ(m0.stat("curr_connections"), idle + 3);

  p.directives = {};
  reload(p);
  if (HasFatalFailure()) return;
  traffic("back-to-one");
  if (HasFatalFailure()) return;
  // memcached notices the closes asynchronously.
  uint64_t now = 0;
  for (int i = 0; i < 50; ++i) {
    now = m0.stat("curr_connections");
    if (now == idle + 1) break;
    std::this_thread::sleep_for(20ms);
  }
  EXPECT_EQ(now, idle + 1) << "memshard keeps connections that server_connections no longer allows";
}

// item_size_max (memshard's bound on a value from a client) in force for
// every client after a reload, the ones connected before it included.
TEST_F(ReloadSettings, ItemSizeMaxReachesConnectedClients) {
  Memcached m0(0, {"-I", "8m", "-m", "128"});
  PoolDef p;
  p.listen = listen_on(port_);
  p.servers = {{m0.port(), 1}};
  start(p, 1);
  Conn before(port_, 10s);
  const std::string big(2 * 1024 * 1024, 'v');  // 2 MiB: over the default 1 MiB
  std::string line;
  ASSERT_TRUE(before.send("set big0 0 0 " + std::to_string(big.size()) + "\r\n" + big + "\r\n"));
  ASSERT_TRUE(before.read_line(line)) << before.error();
  ASSERT_TRUE(line.starts_with("SERVER_ERROR")) << "the default limit lets 2 MiB through: " << line;

  p.directives = {"item_size_max: 4194304"};
  reload(p);
  if (HasFatalFailure()) return;
  {
    Conn after(port_, 10s);
    EXPECT_TRUE(after.set("big1", big)) << "a client connected after the reload: " << after.error();
  }
  // A client keeps item_size_max (and the input bound sized from it) per
  // connection: the reload must reach clients already connected.
  ASSERT_TRUE(before.send("set big2 0 0 " + std::to_string(big.size()) + "\r\n" + big + "\r\n"));
  ASSERT_TRUE(before.read_line(line)) << before.error();
  EXPECT_EQ(line, "STORED") << "a client connected before the reload still has the old limit";

  // And back down: 2 MiB is over the limit again, for everyone, a client
  // connected while 4 MiB was in force included.
  Conn high(port_, 10s);
  ASSERT_TRUE(high.set("big3", big)) << high.error();
  p.directives = {};
  reload(p);
  if (HasFatalFailure()) return;
  ASSERT_TRUE(high.send("set big4 0 0 " + std::to_string(big.size()) + "\r\n" + big + "\r\n"));
  ASSERT_TRUE(high.read_line(line)) << high.error();
  EXPECT_TRUE(line.starts_with("SERVER_ERROR")) << "limit lowered by the reload, yet: " << line;
}

// client_idle_timeout (memshard extension) set by a reload: idle clients
// connected before it are closed like the ones connected after it.
TEST_F(ReloadSettings, ClientIdleTimeoutReachesConnectedClients) {
  Memcached m0;
  PoolDef p;
  p.listen = listen_on(port_);
  p.servers = {{m0.port(), 1}};
  start(p, 1);
  Conn before(port_);
  ASSERT_TRUE(before.set("k", "v")) << before.error();

  p.directives = {"client_idle_timeout: 300"};
  reload(p);
  if (HasFatalFailure()) return;
  Conn after(port_);
  ASSERT_TRUE(after.set("k", "v")) << after.error();
  EXPECT_TRUE(after.closed_by_peer(3s)) << "a client connected after the reload, idle, stays open";
  // The idle timeout is armed per connection: the reload must re-arm it on
  // clients already connected.
  EXPECT_TRUE(before.closed_by_peer(2s))
      << "a client connected before the reload stays open, idle for seconds under a 300 ms "
         "client_idle_timeout";
}

}  // namespace
}  // namespace memshard::testing::reload
