// Proxy (proxy/runtime/proxy.h) in-process: its control plane on small
// configs, driven as an operator drives it. The proxy runs on a thread of
// the test (its "main thread"), reloads come by SIGHUP or --watch, it stops
// on SIGTERM; requests go through it to two real memcached servers (the
// integration harness starts them), each holding a different value for one
// key, so a reply says which config served it. Every wait is bounded.
#include <arpa/inet.h>
#include <gtest/gtest.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <csignal>
#include <filesystem>
#include <memory>
#include <string>
#include <thread>

#include "bounded_wait.h"
#include "harness.h"
#include "proxy/runtime/proxy.h"

namespace memshard::proxy {
namespace {

using memshard::testing::Memcached;
using memshard::testing::RawClient;
using memshard::testing::TempDir;
using test::eventually;

std::string pool_yaml(const std::string& name, uint16_t listen_port, const Memcached& server) {
  return name + ":\n  listen: 127.0.0.1:" + std::to_string(listen_port) + "\n  servers:\n   - " +
         server.address() + ":1\n";
}

// What the pool listening on `port` answers for the key each server holds.
std::string where(uint16_t port) {
  RawClient client(port);
  return client.roundtrip("get where\r\n", "END\r\n");
}

class ProxyReloadTest : public ::testing::Test {
 protected:
  void SetUp() override {
    std::signal(SIGPIPE, SIG_IGN);
    for (auto [server, value] : {std::pair{&a_, "on-a"}, std::pair{&b_, "on-b"}}) {
      RawClient c(server->port());
      ASSERT_EQ(c.roundtrip("set where 0 0 4\r\n" + std::string(value) + "\r\n"), "STORED\r\n");
    }
    config_ = dir_.write("memshard.yml", pool_yaml("alpha", port_, a_));
  }
  void TearDown() override {
    if (runner_.joinable()) {
      kill(getpid(), SIGTERM);  // drains: every client of the test is gone by now
      runner_.join();
      EXPECT_EQ(exit_code_, 0);
    }
    proxy_.reset();
  }

  void start(bool watch = false) {
    ProxyOptions options;
    options.config_file = config_;
    options.threads = 1;
    options.fixed_threads = true;
    options.stats_port = 0;
    options.park_after_ms = 0;
    options.drain_timeout_ms = 2000;
    options.watch = watch;
    proxy_ = std::make_unique<Proxy>(options);
    proxy_->start();
    runner_ = std::thread([this] { exit_code_ = proxy_->run(); });
  }
  // As `kill -HUP`; true once the proxy has dealt with it either way.
  bool reload_by_signal() {
    const uint64_t done = proxy_->reloads() + proxy_->reload_failures();
    kill(getpid(), SIGHUP);
    return eventually([&] { return proxy_->reloads() + proxy_->reload_failures() > done; });
  }

  Memcached a_, b_;
  TempDir dir_;
  const uint16_t port_ = memshard::testing::free_port();
  std::string config_;
  std::unique_ptr<Proxy> proxy_;
  std::thread runner_;
  int exit_code_ = -1;
};

const std::string kOnA = "VALUE where 0 4\r\non-a\r\nEND\r\n";
const std::string kOnB = "VALUE where 0 4\r\non-b\r\nEND\r\n";

TEST_F(ProxyReloadTest, ARefusedReloadChangesNothingAndAnAppliedOneBumpsTheGeneration) {
  start();
  EXPECT_EQ(proxy_->generation(), 1u);
  RawClient kept(port_);  // a client that stays through both reloads
  EXPECT_EQ(kept.roundtrip("get where\r\n", "END\r\n"), kOnA);

  dir_.write("memshard.yml",
             "alpha:\n"
             "  listen: 127.0.0.1:" +
                 std::to_string(port_) +
                 "\n"
                 "  servers: " +
                 b_.address() + "\n");
  ASSERT_TRUE(reload_by_signal());
  EXPECT_EQ(proxy_->reload_failures(), 1u);
  EXPECT_EQ(proxy_->reloads(), 0u);
  EXPECT_EQ(proxy_->generation(), 1u);
  ASSERT_FALSE(proxy_->reload_history().empty());
  const ReloadRecord refused = proxy_->reload_history().back();
  EXPECT_EQ(refused.outcome, ReloadRecord::Outcome::refused);
  EXPECT_EQ(refused.generation, 1u);
  EXPECT_NE(refused.reason.find("memshard.yml:3: servers"), std::string::npos) << refused.reason;
  EXPECT_EQ(kept.roundtrip("get where\r\n", "END\r\n"), kOnA);
  EXPECT_EQ(where(port_), kOnA) << "the listener did not survive a refused reload";

  dir_.write("memshard.yml", pool_yaml("alpha", port_, b_));
  ASSERT_TRUE(reload_by_signal());
  EXPECT_EQ(proxy_->reloads(), 1u);
  EXPECT_EQ(proxy_->generation(), 2u);
  const ReloadRecord applied = proxy_->reload_history().back();
  EXPECT_EQ(applied.outcome, ReloadRecord::Outcome::applied);
  EXPECT_EQ(applied.generation, 2u);
  // One server replaced by another: every key changes server.
  ASSERT_EQ(applied.moved.size(), 1u);
  EXPECT_EQ(applied.moved[0].first, "alpha");
  EXPECT_DOUBLE_EQ(applied.moved[0].second, 1.0);
  // In force for every request parsed after the switch, on old connections
  // as on new ones.
  EXPECT_TRUE(eventually([&] { return kept.roundtrip("get where\r\n", "END\r\n") == kOnB; }));
  EXPECT_EQ(where(port_), kOnB);
}

TEST_F(ProxyReloadTest, AReloadWhoseListenerCannotBindChangesNothing) {
  // Something else holds the port a new pool asks for.
  const uint16_t taken_port = memshard::testing::free_port();
  const int holder = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_port = htons(taken_port);
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  ASSERT_EQ(bind(holder, reinterpret_cast<sockaddr*>(&addr), sizeof(addr)), 0);
  ASSERT_EQ(listen(holder, 1), 0);

  start();
  dir_.write("memshard.yml", pool_yaml("alpha", port_, b_) + pool_yaml("beta", taken_port, b_));
  ASSERT_TRUE(reload_by_signal());
  close(holder);
  EXPECT_EQ(proxy_->reload_failures(), 1u);
  EXPECT_EQ(proxy_->generation(), 1u);
  EXPECT_NE(proxy_->reload_history().back().reason.find("cannot listen on 127.0.0.1:" +
                                                        std::to_string(taken_port)),
            std::string::npos)
      << proxy_->reload_history().back().reason;
  // All or nothing: alpha's new server did not take effect either.
  EXPECT_EQ(where(port_), kOnA);
}

TEST_F(ProxyReloadTest, AReloadThatAddsAPoolListensForIt) {
  const uint16_t beta_port = memshard::testing::free_port();
  start();
  dir_.write("memshard.yml", pool_yaml("alpha", port_, a_) + pool_yaml("beta", beta_port, b_));
  ASSERT_TRUE(reload_by_signal());
  EXPECT_EQ(proxy_->generation(), 2u);
  EXPECT_EQ(where(beta_port), kOnB);
  EXPECT_EQ(where(port_), kOnA);
  // A pool added is not one whose keys moved.
  EXPECT_EQ(proxy_->reload_history().back().moved.size(), 1u);
}

TEST_F(ProxyReloadTest, WithWatchAReplacedConfigIsReloadedWithoutASignal) {
  start(/*watch=*/true);
  EXPECT_EQ(where(port_), kOnA);
  const std::string tmp = dir_.write(".memshard.yml.tmp", pool_yaml("alpha", port_, b_));
  std::filesystem::rename(tmp, config_);
  ASSERT_TRUE(eventually([&] { return proxy_->generation() == 2; })) << "the change was not seen";
  EXPECT_EQ(proxy_->reloads(), 1u);
  EXPECT_EQ(where(port_), kOnB);
}

}  // namespace
}  // namespace memshard::proxy
