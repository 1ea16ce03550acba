// Servers listed by DNS name: every address of a name is tried, and a name
// that moves is followed while memshard runs. Names come from a hosts file
// only memshard (and nutcracker, for placement) sees (private_hosts.h), so
// the machine's own /etc/hosts neither helps nor hides anything.
#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "failure_util.h"
#include "harness.h"
#include "private_hosts.h"

namespace memshard::testing {
namespace {

using namespace std::chrono_literals;
using Clock = std::chrono::steady_clock;
using failures::eventually;

std::optional<std::string> get_from(const std::string& host, uint16_t port,
                                    const std::string& key) {
  RawClient c(host, port);
  std::vector<Value> values;
  std::string reply = c.roundtrip("get " + key + "\r\n", "END\r\n");
  if (!parse_values(reply, values) || values.size() != 1) return std::nullopt;
  return values[0].data;
}

uint64_t proxy_stat(uint16_t port, const std::string& name) {
  RawClient c(port);
  auto v = stat_value(c.roundtrip("stats\r\n", "END\r\n"), name);
  return v ? std::stoull(*v) : UINT64_MAX;
}

// Whether `pid` holds an established TCP connection to 127.0.0.1:port.
bool connected_to(pid_t pid, uint16_t port) {
  for (const TcpSocket& s : tcp_sockets_of(pid)) {
    if (s.remote_address == "0100007F" && s.remote_port == port && s.state == 1) return true;
  }
  return false;
}

class Names : public ::testing::Test {
 protected:
  void SetUp() override {
    std::string why = PrivateHosts::unavailable();
    if (!why.empty()) GTEST_SKIP() << why;
  }

  void start(const PrivateHosts& hosts, const std::vector<std::string>& servers,
             std::vector<std::pair<std::string, std::string>> directives) {
    port_ = free_port();
    // md5 spreads keys that differ in their last bytes; the default
    // fnv1a_64 can put nearly all of them on one of two servers.
    directives.insert(directives.begin(), {{"timeout", "2000"}, {"hash", "md5"}});
    config_ = dir_.write("memshard.yml",
                         config_yaml({PoolSpec{"pool", "127.0.0.1:" + std::to_string(port_),
                                               std::move(directives), servers}}));
    memshard_ = std::make_unique<Memshard>(config_, std::vector<std::string>{"-v", "6"}, port_,
                                           dir_.path() + "/memshard.log", hosts.launcher());
  }

  std::string log() const { return run_command({"cat", dir_.path() + "/memshard.log"}).out; }

  TempDir dir_;
  uint16_t port_ = 0;
  std::string config_;
  std::unique_ptr<Memshard> memshard_;
};

// Debian's installer writes localhost as ::1 as well as 127.0.0.1, and
// getaddrinfo gives ::1 first; memcached listens on 127.0.0.1 only. Every
// key whose server is localhost:PORT must still be stored there.
TEST_F(Names, LocalhostOnAStandardDebianHostsFile) {
  PrivateHosts hosts(kDebianHosts);
  std::vector<std::string> order = hosts.lookup("localhost");
  ASSERT_FALSE(order.empty());
  ASSERT_EQ(order.front(), "::1") << "the test needs ::1 first, as on Debian";
  Memcached named, literal;
  start(hosts, {"localhost:" + std::to_string(named.port()) + ":1", literal.address() + ":1"}, {});
  std::vector<std::string> keys;
  for (int i = 0; i < 200; ++i) keys.push_back("debian:" + std::to_string(i));
  std::vector<std::string> where = ring_lookup(config_, keys);
  ASSERT_EQ(where.size(), keys.size());
  RawClient c(port_);
  size_t on_named = 0;
  for (size_t i = 0; i < keys.size(); ++i) {
    ASSERT_EQ(c.roundtrip(set_command(keys[i], "v" + keys[i])), "STORED\r\n") << keys[i];
    bool named_owner = where[i].starts_with("localhost:");
    on_named += named_owner;
    const Memcached& owner = named_owner ? named : literal;
    EXPECT_EQ(get_from(owner.host(), owner.port(), keys[i]), "v" + keys[i]) << keys[i];
  }
  EXPECT_GT(on_named, 20u);
}

// A name that moves from one memcached to another under load: no client
// error (the old server still answers what was sent to it), new requests
// reach the new address, the old connections close, no key changes server
// (the same keys nutcracker, started on the moved name, puts there).
TEST_F(Names, ServerFollowsItsNameUnderLoad) {
  Memcached stable;
  Memcached before(0, {}, "127.0.0.1");
  Memcached after(before.port(), {}, "127.0.0.2");  // same port, another address
  const std::string name = "cache-moving.test";
  PrivateHosts hosts("127.0.0.1\t" + name + "\n");
  const std::string moving = name + ":" + std::to_string(before.port());
  start(hosts, {moving + ":1", stable.address() + ":1"}, {{"dns_refresh", "100"}});

  std::atomic<bool> stop{false};
  std::atomic<uint64_t> ok{0}, errors{0};
  std::string first_error;
  std::thread load([&] {
    RawClient c(port_);
    auto end = Clock::now() + 20s;
    for (int i = 0; !stop && Clock::now() < end; ++i) {
      std::string key = "load:" + std::to_string(i % 500);
      std::string got = c.roundtrip(set_command(key, "x"));
      if (got == "STORED\r\n") {
        ++ok;
      } else {
        if (errors++ == 0) first_error = got;
      }
    }
  });
  ASSERT_TRUE(eventually([&] { return ok > 200; }, 10s));
  ASSERT_TRUE(connected_to(memshard_->process().pid(), before.port()));
  hosts.write("127.0.0.2\t" + name + "\n");
  EXPECT_TRUE(eventually([&] { return proxy_stat(port_, "dns_address_changes") == 1; }, 10s))
      << log();
  uint64_t ok_at_move = ok;
  ASSERT_TRUE(eventually([&] { return ok > ok_at_move + 500; }, 10s));
  // Connections to the old address finish and close (housekeeping: 1 s).
  EXPECT_TRUE(
      eventually([&] { return !connected_to(memshard_->process().pid(), before.port()); }, 5s));
  stop = true;
  load.join();
  EXPECT_EQ(errors, 0u) << "first: " << printable(first_error);
  EXPECT_NE(log().find("now resolves to 127.0.0.2:" + std::to_string(before.port())),
            std::string::npos)
      << log();

  // After the move: every key of the named server is on the new memcached,
  // every other key on the stable one, as the config's ring says.
  std::vector<std::string> keys;
  for (int i = 0; i < 300; ++i) keys.push_back("moved:" + std::to_string(i));
  std::vector<std::string> where = ring_lookup(config_, keys);
  ASSERT_EQ(where.size(), keys.size());
  RawClient c(port_);
  size_t on_moving = 0;
  for (size_t i = 0; i < keys.size(); ++i) {
    ASSERT_EQ(c.roundtrip(set_command(keys[i], "m" + keys[i])), "STORED\r\n");
    bool named_owner = where[i] == moving;
    on_moving += named_owner;
    EXPECT_EQ(get_from("127.0.0.2", after.port(), keys[i]).has_value(), named_owner) << keys[i];
    EXPECT_EQ(get_from("127.0.0.1", stable.port(), keys[i]).has_value(), !named_owner) << keys[i];
  }
  EXPECT_GT(on_moving, 30u);

  // nutcracker, which resolves the name when it starts, places every key
  // as memshard does: what it stores, memshard reads back.
  if (!have_nutcracker()) GTEST_SKIP() << "nutcracker is not installed";
  uint16_t nut_port = free_port();
  std::string nut_config = dir_.write(
      "nutcracker.yml", config_yaml({PoolSpec{"pool",
                                              "127.0.0.1:" + std::to_string(nut_port),
                                              {{"timeout", "2000"}, {"hash", "md5"}},
                                              {moving + ":1", stable.address() + ":1"}}}));
  std::vector<std::string> argv = hosts.launcher();
  argv.insert(argv.end(), {"nutcracker", "-c", nut_config, "-s", std::to_string(free_port()), "-a",
                           "127.0.0.1"});
  Process nutcracker(argv, dir_.path() + "/nutcracker.log");
  ASSERT_TRUE(wait_listening(nut_port));
  RawClient n(nut_port);
  for (size_t i = 0; i < keys.size(); ++i) {
    ASSERT_EQ(n.roundtrip(set_command(keys[i], "n" + keys[i])), "STORED\r\n");
  }
  for (size_t i = 0; i < keys.size(); ++i) {
    EXPECT_EQ(c.roundtrip("get " + keys[i] + "\r\n", "END\r\n"),
              "VALUE " + keys[i] + " 0 " + std::to_string(keys[i].size() + 1) + "\r\nn" + keys[i] +
                  "\r\nEND\r\n");
  }
}

// With dns_refresh off, a failed connection is what makes memshard look
// the name up again: the old memcached dies, the name now points at the
// new one, and requests reach it without a reload.
TEST_F(Names, FailedConnectionLooksTheNameUpAgain) {
  Memcached before(0, {}, "127.0.0.1");
  Memcached after(before.port(), {}, "127.0.0.2");
  const std::string name = "cache-replaced.test";
  PrivateHosts hosts("127.0.0.1\t" + name + "\n");
  start(hosts, {name + ":" + std::to_string(before.port()) + ":1"}, {{"dns_refresh", "0"}});
  RawClient c(port_);
  ASSERT_EQ(c.roundtrip(set_command("k", "old")), "STORED\r\n");
  ASSERT_EQ(get_from("127.0.0.1", before.port(), "k"), "old");
  hosts.write("127.0.0.2\t" + name + "\n");
  std::this_thread::sleep_for(300ms);
  EXPECT_EQ(proxy_stat(port_, "dns_address_changes"), 0u) << "looked up without a failure";
  before.process().stop();
  // The first requests fail with the server gone; the lookup follows.
  EXPECT_TRUE(eventually(
      [&] {
        RawClient d(port_);
        return d.roundtrip(set_command("k", "new")) == "STORED\r\n";
      },
      10s))
      << log();
  EXPECT_EQ(get_from("127.0.0.2", after.port(), "k"), "new");
  EXPECT_EQ(proxy_stat(port_, "dns_address_changes"), 1u);
}

// A name that stops resolving keeps its last address: logged, counted, and
// still served; when it resolves again, it is said so.
TEST_F(Names, NameThatStopsResolvingKeepsItsLastAddress) {
  Memcached server;
  const std::string name = "cache-flaky.test";
  PrivateHosts hosts("127.0.0.1\t" + name + "\n");
  start(hosts, {name + ":" + std::to_string(server.port()) + ":1"}, {{"dns_refresh", "100"}});
  hosts.write("# " + name + " gone\n");
  ASSERT_TRUE(eventually([&] { return proxy_stat(port_, "dns_failures") >= 2; }, 10s)) << log();
  RawClient c(port_);
  EXPECT_EQ(c.roundtrip(set_command("k", "v")), "STORED\r\n");
  EXPECT_EQ(get_from("127.0.0.1", server.port(), "k"), "v");
  EXPECT_EQ(proxy_stat(port_, "dns_address_changes"), 0u);
  hosts.write("127.0.0.1\t" + name + "\n");
  EXPECT_TRUE(eventually(
      [&] {
        return log().find(name + ":" + std::to_string(server.port()) + " resolves again") !=
               std::string::npos;
      },
      10s))
      << log();
  std::string text = log();
  EXPECT_EQ(
      count_of(text, "keeping its last address(es) 127.0.0.1:" + std::to_string(server.port())), 1u)
      << "a failing name is said once a streak\n"
      << text;
}

}  // namespace
}  // namespace memshard::testing
