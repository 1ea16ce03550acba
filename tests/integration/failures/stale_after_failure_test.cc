// Nothing stale after a failure (docs/failures.md): a server that was out
// and comes back serves no value that a write acknowledged meanwhile
// replaced; at most auto_eject_max of a pool is ejected; a server that
// flaps waits longer for its next probe. Real memcached, real signals.
// (tests/integration/stale runs the same under load, Jepsen-style.)
#include <gtest/gtest.h>

#include <atomic>
#include <cerrno>
#include <chrono>
#include <cstring>
#include <iostream>
#include <mutex>
#include <sstream>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "failure_util.h"
#include "harness.h"

namespace memshard::testing::failures {
namespace {

using namespace std::chrono_literals;

class StaleAfterFailure : public ::testing::Test {
 protected:
  void SetUp() override { fleet_ = std::make_unique<Fleet>(3); }
  void TearDown() override {
    if (proxy_) proxy_->dump_log_on_failure();
  }
  void start(Directives d) {
    proxy_ = std::make_unique<Proxy>(dir_, fleet_->server_lines(), std::move(d));
    by_server_ = keys_by_server(proxy_->config(), *fleet_, 100, "stale");
  }
  // Sets every key to `value` through memshard; each must be STORED.
  void set_all(const std::string& value) {
    RawClient c(proxy_->port());
    for (const auto& keys : by_server_) {
      for (const auto& k : keys) ASSERT_EQ(c.roundtrip(set_command(k, value)), "STORED\r\n") << k;
    }
  }
  // How many of `keys` read `value` through memshard.
  size_t reading(const std::vector<std::string>& keys, const std::string& value) {
    RawClient c(proxy_->port());
    size_t n = 0;
    for (const auto& k : keys) {
      const std::string r = c.roundtrip("get " + k + "\r\n", "END\r\n");
      n += r.find("\r\n" + value + "\r\n") != std::string::npos;
    }
    return n;
  }
  uint64_t server_stat(const std::string& name) {
    RawClient c(proxy_->port());
    std::istringstream lines(c.roundtrip("stats servers\r\n", "END\r\n"));
    uint64_t sum = 0;
    for (std::string line; std::getline(lines, line);) {
      const size_t at = line.find(":" + name + " ");
      if (at != std::string::npos) sum += std::stoull(line.substr(at + name.size() + 2));
    }
    return sum;
  }

  TempDir dir_;
  std::unique_ptr<Fleet> fleet_;
  std::unique_ptr<Proxy> proxy_;
  std::vector<std::vector<std::string>> by_server_;
};

// The steps: every key v1; one server frozen until ejected; every
// key v2, each STORED (its keys on the others meanwhile); the server
// resumed and re-admitted. Before the repair it held v1 for its keys and
// served them.
TEST_F(StaleAfterFailure, AFrozenServerReturnsWithoutTheValuesItMissed) {
  start({{"timeout", "200"},
         {"auto_eject_hosts", "true"},
         {"server_failure_limit", "2"},
         {"server_retry_timeout", "300"}});
  set_all("v1");
  Memcached& victim = (*fleet_)[0];
  ASSERT_TRUE(victim.process().suspend());
  {
    RawClient c(proxy_->port());  // its keys time out until it is ejected
    for (int i = 0; i < 4 && proxy_stat(proxy_->port(), "server_ejects") == 0; ++i)
      c.roundtrip("get " + by_server_[0][0] + "\r\n");
  }
  ASSERT_TRUE(eventually([&] { return proxy_stat(proxy_->port(), "server_ejects") >= 1; }, 5s));
  std::this_thread::sleep_for(100ms);  // every worker has the ring without it
  set_all("v2");
  EXPECT_GE(server_stat("repair_keys"), by_server_[0].size())
      << "its keys were written elsewhere while it was out";
  victim.process().resume();
  ASSERT_TRUE(
      eventually([&] { return proxy_stat(proxy_->port(), "server_readmissions") >= 1; }, 5s));
  std::this_thread::sleep_for(100ms);
  EXPECT_EQ(reading(by_server_[0], "v1"), 0u) << "a returned server served replaced values";
  for (size_t s = 1; s < by_server_.size(); ++s)
    EXPECT_EQ(reading(by_server_[s], "v2"), by_server_[s].size());
  EXPECT_GE(server_stat("repairs"), by_server_[0].size());
  RawClient direct(victim.port());
  size_t old_left = 0;
  for (const auto& k : by_server_[0])
    old_left += direct.roundtrip("get " + k + "\r\n", "END\r\n").find("v1") != std::string::npos;
  EXPECT_EQ(old_left, 0u) << "the repair deleted the replaced values on the server itself";
}

// A write the server timed out on may still be applied; so it is recorded,
// and the value it missed or took late is never served over a newer one.
TEST_F(StaleAfterFailure, AWriteThatTimedOutIsRecordedAndRepaired) {
  start({{"timeout", "200"}});  // no ejection
  set_all("v1");
  Memcached& victim = (*fleet_)[0];
  ASSERT_TRUE(victim.process().suspend());
  {
    RawClient c(proxy_->port());
    EXPECT_EQ(c.roundtrip(set_command(by_server_[0][0], "v2")), "SERVER_ERROR backend timeout\r\n");
  }
  EXPECT_GE(server_stat("repair_keys"), 1u);
  victim.process().resume();
  ASSERT_TRUE(eventually([&] { return server_stat("repair_keys") == 0; }, 5s))
      << "the background repair did not delete the key";
  EXPECT_GE(server_stat("repairs"), 1u);
}

// With 3 servers and the default auto_eject_max (50%), one may be out: a
// second dead server stays in the ring, counted as held by the cap, and its
// keys fail fast instead of landing on the last one.
TEST_F(StaleAfterFailure, TheCapKeepsHalfThePoolInAndTheRestFailsFast) {
  start({{"timeout", "200"},
         {"auto_eject_hosts", "true"},
         {"server_failure_limit", "2"},
         {"server_retry_timeout", "60000"}});
  set_all("v1");
  (*fleet_)[0].process().signal(SIGKILL);
  (*fleet_)[1].process().signal(SIGKILL);
  RawClient c(proxy_->port());
  size_t stored = 0, failed = 0;
  for (int round = 0; round < 3; ++round) {
    for (size_t s = 0; s < 2; ++s) {
      for (const auto& k : by_server_[s]) {
        const std::string r = c.roundtrip(set_command(k, "v2"));
        (r == "STORED\r\n" ? stored : failed) += 1;
      }
    }
    std::this_thread::sleep_for(200ms);
  }
  EXPECT_EQ(proxy_stat(proxy_->port(), "server_ejects"), 1u) << "more than half the pool went";
  EXPECT_EQ(proxy_stat(proxy_->port(), "main:servers_held_by_cap"), 1u);
  // The ejected server's keys moved; the held one's kept failing.
  EXPECT_GT(failed, by_server_[1].size()) << stored << " stored";
  EXPECT_EQ(reading(by_server_[2], "v1"), by_server_[2].size())
      << "the last server's own keys are untouched";
}

// A server that dies again soon after its re-admission waits twice as
// long for its next probe (the log says how long).
TEST_F(StaleAfterFailure, AFlappingServerIsProbedLessOften) {
  start({{"timeout", "200"},
         {"auto_eject_hosts", "true"},
         {"server_failure_limit", "1"},
         {"server_retry_timeout", "300"},
         {"server_flap_time", "30000"}});
  Memcached& victim = (*fleet_)[0];
  const auto fail_until_ejected = [&](uint64_t ejects) {
    RawClient c(proxy_->port());
    return eventually(
        [&] {
          c.roundtrip("get " + by_server_[0][0] + "\r\n");
          return proxy_stat(proxy_->port(), "server_ejects") >= ejects;
        },
        5s);
  };
  victim.process().signal(SIGKILL);
  ASSERT_TRUE(fail_until_ejected(1));
  victim.restart();
  ASSERT_TRUE(
      eventually([&] { return proxy_stat(proxy_->port(), "server_readmissions") >= 1; }, 5s));
  victim.process().signal(SIGKILL);
  ASSERT_TRUE(fail_until_ejected(2));
  const std::string log = proxy_->log_tail(20000);
  EXPECT_NE(log.find("probing it every 300 ms"), std::string::npos) << log;
  EXPECT_NE(log.find("probing it every 600 ms (it flaps"), std::string::npos) << log;
}

// A connection given up on with writes owed is reset, not closed: the
// bytes memshard's kernel still held for a frozen server are dropped, so
// that the server, resumed, cannot apply writes whose clients were already
// answered SERVER_ERROR. A fake server stands in for the frozen one: it
// reads nothing until the writes have timed out, then reads all it is
// given. A plain close would have delivered the rest and then an EOF.
TEST(StaleAfterFailureReset, AConnectionGivenUpOnIsResetAndDeliversNoMore) {
  std::atomic<bool> thawed{false};
  std::mutex mu;
  std::vector<std::pair<size_t, int>> ends;  // per connection: bytes read, errno at the end
  FakeServer frozen([&](int fd, FakeServer& self) {
    while (!thawed.load() && !self.stopping()) std::this_thread::sleep_for(10ms);
    int end = 0;
    const size_t bytes = read_until_closed(fd, end);
    std::lock_guard<std::mutex> lock(mu);
    ends.emplace_back(bytes, end);
  });
  TempDir dir;
  Proxy proxy(dir, {frozen.address() + ":1"}, {{"timeout", "300"}});
  // 8 sets of 512 KiB: more than the frozen server's receive buffer takes,
  // so memshard's own socket holds the rest when it gives up.
  const std::string value(512 * 1024, 'v');
  std::string sets;
  for (int i = 0; i < 8; ++i) sets += set_command("reset" + std::to_string(i), value);
  RawClient c(proxy.port());
  std::thread sender([&] { c.send(sets); });
  const std::string replies = c.read_count("\r\n", 8, 10s);
  sender.join();
  EXPECT_EQ(replies, [] {
    std::string want;
    for (int i = 0; i < 8; ++i) want += "SERVER_ERROR backend timeout\r\n";
    return want;
  }());
  thawed = true;
  ASSERT_TRUE(eventually(
      [&] {
        std::lock_guard<std::mutex> lock(mu);
        return !ends.empty();
      },
      10s));
  std::lock_guard<std::mutex> lock(mu);
  for (const auto& [bytes, end] : ends) {
    std::cout << "read after the thaw: " << bytes << " of " << sets.size() << " bytes\n";
    EXPECT_EQ(end, ECONNRESET) << "the connection ended with "
                               << (end == 0 ? std::string("EOF") : strerror(end)) << " after "
                               << bytes << " of " << sets.size() << " bytes";
    EXPECT_LT(bytes, sets.size() / 2) << "most of what was owed is dropped";
  }
}

}  // namespace
}  // namespace memshard::testing::failures
