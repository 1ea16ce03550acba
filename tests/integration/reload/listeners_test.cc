// Reloads that change listeners: a pool whose listen address moves, and a
// pool that goes away with clients still connected.
#include <gtest/gtest.h>
#include <sys/stat.h>

#include <cerrno>
#include <csignal>
#include <cstring>
#include <memory>
#include <string>
#include <thread>

#include "reload_util.h"

namespace memshard::testing::reload {
namespace {

using Clock = std::chrono::steady_clock;

// Polls `stats` on an open connection until config_generation == want.
bool wait_generation_on(Conn& c, uint64_t want, std::chrono::milliseconds limit = 10s) {
  auto deadline = Clock::now() + limit;
  std::map<std::string, std::string> s;
  while (Clock::now() < deadline) {
    if (!c.stats(s)) return false;
    if (stat_of(s, "config_generation") == want) return true;
    std::this_thread::sleep_for(10ms);
  }
  return false;
}

TEST(ReloadListeners, ListenAddressMoves) {
  Memcached m0, m1;
  std::vector<uint16_t> ports = {m0.port(), m1.port()};
  uint16_t old_port = free_port(), new_port = free_port();
  ASSERT_NE(old_port, new_port);
  PoolDef p;
  p.listen = listen_on(old_port);
  p.servers = {{ports[0], 1}, {ports[1], 1}};
  TempDir dir;
  const std::string path = dir.write("memshard.yml", yaml(p));
  Memshard ms(path, memshard_args({"--threads", "2"}), old_port);
  ASSERT_TRUE(wait_ready(old_port));

  Conn before(old_port);
  ASSERT_TRUE(before.set("early", "value-early")) << before.error();

  p.listen = listen_on(new_port);
  p.servers = {{ports[1], 1}, {ports[0], 4}};  // and a reweight, to see the new ring in force
  const std::string moved = yaml(p);
  dir.write("memshard.yml", moved);
  ms.process().signal(SIGHUP);
  ASSERT_TRUE(wait_generation_on(before, 2)) << before.error();

  EXPECT_TRUE(accepts(new_port)) << "the new listen address does not accept";
  EXPECT_FALSE(accepts(old_port)) << "the old listen address still accepts";
  EXPECT_TRUE(keys_land_per_config(new_port, moved, ports, "new-port:"));

  // The connection made on the old port keeps working, on the new config.
  std::vector<Hit> hits;
  for (int i = 0; i < 20; ++i) {
    std::string key = key_of("old-conn", static_cast<uint64_t>(i));
    ASSERT_TRUE(before.set(key, value_for(key, 7))) << before.error();
    ASSERT_TRUE(before.get({key, "early"}, hits)) << before.error();
    ASSERT_GE(hits.size(), 1u);
    EXPECT_EQ(hits[0].key, key);
    EXPECT_EQ(hits[0].data, value_for(key, 7));
    Placement where(moved);
    ASSERT_EQ(direct_get(where.port_of(key), key), value_for(key, 7)) << key;
  }
  before.close();
  std::this_thread::sleep_for(100ms);
  EXPECT_FALSE(accepts(old_port));
  EXPECT_TRUE(accepts(new_port));
  EXPECT_TRUE(ms.process().running());
}

TEST(ReloadListeners, RemovedPoolAnswersPendingRequestsThenCloses) {
  Memcached m0, m1;
  uint16_t alpha_port = free_port(), beta_port = free_port();
  PoolDef alpha, beta;
  alpha.name = "alpha";
  alpha.listen = listen_on(alpha_port);
  alpha.servers = {{m0.port(), 1}};
  beta.name = "beta";
  beta.listen = listen_on(beta_port);
  beta.servers = {{m1.port(), 1}};
  TempDir dir;
  const std::string path = dir.write("memshard.yml", yaml({alpha, beta}));
  Memshard ms(path, memshard_args({"--threads", "2"}), alpha_port);
  ASSERT_TRUE(wait_ready(alpha_port));
  ASSERT_TRUE(wait_ready(beta_port));

  Conn a(alpha_port), idle(beta_port), busy(beta_port);
  ASSERT_TRUE(a.set("ka", "value-a")) << a.error();
  ASSERT_TRUE(busy.set("kb", "value-b")) << busy.error();
  std::map<std::string, std::string> s;
  ASSERT_TRUE(idle.stats(s)) << idle.error();

  // Two requests in flight on beta's only server, stopped.
  const uint64_t gets_before = stat_of(proxy_stats(alpha_port), "cmd_get");
  ASSERT_TRUE(stop_process(m1.process().pid()));
  ASSERT_TRUE(busy.send("get kb\r\nget nothing-here kb\r\n"));
  ASSERT_TRUE(wait_stat(alpha_port, "cmd_get", [&](uint64_t v) {
                return v >= gets_before + 3;
              }).has_value());

  dir.write("memshard.yml", yaml(alpha));
  ms.process().signal(SIGHUP);
  ASSERT_TRUE(
      wait_stat(alpha_port, "config_generation", [](uint64_t g) { return g == 2; }).has_value());

  EXPECT_TRUE(idle.closed_by_peer(3s))
      << "a client of the removed pool with nothing owed stays open";
  EXPECT_FALSE(accepts(beta_port)) << "the removed pool still accepts";
  EXPECT_TRUE(busy.idle_for(200ms))
      << "replies came while their server is stopped: " << busy.describe() << " (memcached state "
      << process_state(m1.process().pid()) << ")";

  m1.process().signal(SIGCONT);
  std::vector<Hit> hits;
  ASSERT_TRUE(busy.read_values(hits)) << busy.error();
  ASSERT_EQ(hits.size(), 1u);
  EXPECT_EQ(hits[0].key, "kb");
  EXPECT_EQ(hits[0].data, "value-b");
  ASSERT_TRUE(busy.read_values(hits)) << busy.error();
  ASSERT_EQ(hits.size(), 1u);
  EXPECT_EQ(hits[0].key, "kb");
  EXPECT_TRUE(busy.closed_by_peer(3s))
      << "the client of the removed pool was not closed after its replies";

  // The pool that stays is untouched.
  ASSERT_TRUE(a.get({"ka"}, hits)) << a.error();
  ASSERT_EQ(hits.size(), 1u);
  EXPECT_EQ(hits[0].data, "value-a");
  EXPECT_TRUE(
      keys_land_per_config(alpha_port, yaml(alpha), {m0.port(), m1.port()}, "alpha:", 20, "alpha"));
}

// A pool on a unix socket (0666) and a second pool on TCP, to ask `stats`
// and to wait on; memshard started with both.
class ReloadUnixListener : public ::testing::Test {
 protected:
  void SetUp() override {
    side_.name = "side";
    side_.listen = listen_on(tcp_port_);
    side_.servers = {{m1_.port(), 1}};
    pool_.listen = sock_ + " 0666";
    pool_.servers = {{m0_.port(), 1}};
    const std::string path = dir_.write("memshard.yml", yaml({pool_, side_}));
    ms_ = std::make_unique<Memshard>(path, memshard_args({"--threads", "2"}), tcp_port_);
    ASSERT_TRUE(wait_ready(tcp_port_));
    ASSERT_TRUE(wait_listening(sock_));
  }

  Memcached m0_, m1_;
  TempDir dir_;
  const std::string sock_ = dir_.path() + "/memshard.sock";
  uint16_t tcp_port_ = free_port();
  PoolDef pool_, side_;
  std::unique_ptr<Memshard> ms_;
};

// The same unix socket path with other permissions: a change of the listen
// directive, but not of the address clients connect to.
TEST_F(ReloadUnixListener, PermissionsChange) {
  struct stat st {};
  ASSERT_EQ(::stat(sock_.c_str(), &st), 0);
  EXPECT_EQ(st.st_mode & 0777, 0666u);
  {
    RawClient c(sock_);
    EXPECT_EQ(c.roundtrip(std::string("set before 0 0 1\r\nx\r\n")), "STORED\r\n");
  }

  pool_.listen = sock_ + " 0600";
  dir_.write("memshard.yml", yaml({pool_, side_}));
  ms_->process().signal(SIGHUP);
  ASSERT_TRUE(
      wait_stat(tcp_port_, "config_generation", [](uint64_t g) { return g == 2; }).has_value());

  // Rebinding the path would unlink the live socket's file (and closing the
  // old listener would unlink the new one's): the file must still be there,
  // with the new permissions.
  if (::stat(sock_.c_str(), &st) == 0) {
    EXPECT_EQ(st.st_mode & 0777, 0600u);
  } else {
    ADD_FAILURE() << sock_ << " is gone after a reload that only changed its permissions: "
                  << strerror(errno);
  }
  EXPECT_TRUE(wait_listening(sock_, 2s)) << "nothing accepts on " << sock_ << " after the reload";
  try {
    RawClient c(sock_);
    EXPECT_EQ(c.roundtrip(std::string("set after 0 0 1\r\ny\r\n")), "STORED\r\n");
    EXPECT_EQ(direct_get(m0_.port(), "after"), "y");
  } catch (const std::exception& e) {
    ADD_FAILURE() << e.what();
  }
}

// A reload refused because one pool cannot bind must leave everything as
// it was, the other pools' unix sockets included.
TEST_F(ReloadUnixListener, RefusedReloadLeavesSocketInPlace) {
  // New permissions for the socket, and a third pool on a port in use
  // (memcached's): the reload must be refused as a whole.
  PoolDef taken;
  taken.name = "taken";
  taken.listen = listen_on(m0_.port());
  taken.servers = {{m1_.port(), 1}};
  pool_.listen = sock_ + " 0600";
  dir_.write("memshard.yml", yaml({pool_, side_, taken}));
  ms_->process().signal(SIGHUP);
  ASSERT_TRUE(wait_stat(tcp_port_, "config_reload_failures", [](uint64_t f) {
                return f == 1;
              }).has_value());
  EXPECT_EQ(stat_of(proxy_stats(tcp_port_), "config_generation"), 1u);

  // Binding the refused config's listener, or rolling it back, must not
  // unlink the socket file of the pool in force.
  struct stat st {};
  if (::stat(sock_.c_str(), &st) == 0) {
    EXPECT_EQ(st.st_mode & 0777, 0666u) << "the refused config's permissions were applied";
  } else {
    ADD_FAILURE() << sock_ << " is gone after a refused reload: " << strerror(errno);
  }
  EXPECT_TRUE(wait_listening(sock_, 2s))
      << "nothing accepts on " << sock_ << " after a refused reload";
}

TEST(ReloadListeners, TwoPoolsSwapListenAddresses) {
  // The sockets stay open (nothing is rebound); each address now serves the
  // other pool. Connections accepted before stay with the pool they came to.
  Memcached m0, m1;
  std::vector<uint16_t> ports = {m0.port(), m1.port()};
  uint16_t pa = free_port(), pb = free_port();
  PoolDef alpha, beta;
  alpha.name = "alpha";
  alpha.listen = listen_on(pa);
  alpha.servers = {{m0.port(), 1}};
  beta.name = "beta";
  beta.listen = listen_on(pb);
  beta.servers = {{m1.port(), 1}};
  TempDir dir;
  const std::string path = dir.write("memshard.yml", yaml({alpha, beta}));
  Memshard ms(path, memshard_args({"--threads", "2"}), pa);
  ASSERT_TRUE(wait_ready(pa));
  ASSERT_TRUE(wait_ready(pb));
  Conn old_a(pa);
  ASSERT_TRUE(old_a.set("before-swap", "x")) << old_a.error();
  ASSERT_EQ(direct_get(m0.port(), "before-swap"), "x");

  std::swap(alpha.listen, beta.listen);
  const std::string swapped = yaml({alpha, beta});
  dir.write("memshard.yml", swapped);
  ms.process().signal(SIGHUP);
  ASSERT_TRUE(wait_generation_on(old_a, 2)) << old_a.error();

  EXPECT_TRUE(keys_land_per_config(pa, swapped, ports, "to-beta", 20, "beta"));
  EXPECT_TRUE(keys_land_per_config(pb, swapped, ports, "to-alpha", 20, "alpha"));
  ASSERT_TRUE(old_a.set("after-swap", "y")) << old_a.error();
  EXPECT_EQ(direct_get(m0.port(), "after-swap"), "y") << "a client of alpha changed pools";
  auto s = proxy_stats(pa);
  EXPECT_EQ(stat_of(s, "config_reload_failures"), 0u);
}

}  // namespace
}  // namespace memshard::testing::reload
