// NameRefresh (proxy/runtime/name_refresh.h): servers listed by DNS name
// are looked up again on a thread of its own, and what it finds comes back
// on the loop's thread. Real getaddrinfo, real threads, the loop run on
// the test's thread (bounded by run_base_until).
//
// The names live in a hosts file of the test's own: the test process
// enters a mount namespace of its own (as root, as CI runs) and binds the
// file over /etc/hosts, with an nsswitch.conf that asks files only, so a
// name that is missing fails at once and no lookup leaves the machine.
// glibc reads /etc/hosts at every lookup, so rewriting the file moves a
// name, as a DNS change would. Where that cannot be had, the tests skip.
#include "proxy/runtime/name_refresh.h"

#include <gtest/gtest.h>
#include <sched.h>
#include <stdlib.h>
#include <sys/mount.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <memory>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

#include "bounded_wait.h"
#include "conf/config.h"
#include "proxy/routes/topology.h"
#include "proxy/support/clock.h"
#include "test_topology.h"

namespace memshard::proxy {
namespace {

using test::topology_of;

namespace fs = std::filesystem;

// This process's /etc/hosts, set up once; the threads made after it see it
// too (a thread starts in its creator's mount namespace).
class PrivateHosts {
 public:
  // Null, with why, where a mount namespace cannot be had.
  static PrivateHosts* get(std::string& why) {
    static std::string failure;
    static std::unique_ptr<PrivateHosts> hosts = [] {
      try {
        return std::make_unique<PrivateHosts>();
      } catch (const std::exception& e) {
        failure = e.what();
        return std::unique_ptr<PrivateHosts>();
      }
    }();
    why = failure;
    return hosts.get();
  }

  PrivateHosts() {
    if (geteuid() != 0) throw std::runtime_error("a private /etc/hosts needs root");
    char tmpl[] = "/tmp/memshard-name-refresh-XXXXXX";
    if (mkdtemp(tmpl) == nullptr) throw std::runtime_error("mkdtemp");
    dir_ = tmpl;
    write("");
    write_file(dir_ / "nsswitch.conf", "hosts: files\n");
    // Private, so that the binds never reach the machine's own namespace.
    if (unshare(CLONE_NEWNS) != 0 || mount(nullptr, "/", nullptr, MS_REC | MS_PRIVATE, nullptr) ||
        mount((dir_ / "hosts").c_str(), "/etc/hosts", nullptr, MS_BIND, nullptr) != 0 ||
        mount((dir_ / "nsswitch.conf").c_str(), "/etc/nsswitch.conf", nullptr, MS_BIND, nullptr)) {
      throw std::runtime_error(std::string("no mount namespace of our own: ") + strerror(errno));
    }
  }
  ~PrivateHosts() {
    umount("/etc/hosts");
    umount("/etc/nsswitch.conf");
    std::error_code ec;
    fs::remove_all(dir_, ec);
  }

  // In place: the bind follows the file's inode.
  void write(const std::string& text) const { write_file(dir_ / "hosts", text); }

 private:
  static void write_file(const fs::path& path, const std::string& text) {
    std::ofstream out(path, std::ios::trunc);
    out << text;
    if (!out.flush()) throw std::runtime_error("cannot write " + path.string());
  }
  fs::path dir_;
};

constexpr char kHostsA1[] =
    "127.0.0.1 localhost\n"
    "127.0.0.1 cache-a.test\n"
    "127.0.0.1 cache-b.test\n";

// Pool alpha, its servers by name (and one by address); no periodic
// lookups unless `dns_refresh` says so.
std::string alpha_yaml(const std::vector<std::string>& servers, int dns_refresh_ms = 0) {
  std::string text =
      "alpha:\n"
      "  listen: 127.0.0.1:22199\n"
      "  dns_refresh: " +
      std::to_string(dns_refresh_ms) + "\n  servers:\n";
  for (const std::string& s : servers) text += "   - " + s + ":1\n";
  return text;
}

class NameRefreshTest : public ::testing::Test {
 protected:
  void SetUp() override {
    std::string why;
    hosts_ = PrivateHosts::get(why);
    if (hosts_ == nullptr) GTEST_SKIP() << why;
    hosts_->write(kHostsA1);
    refresh_ = std::make_unique<NameRefresh>(base_, [this](const NameRefresh::Result& r) {
      results_.push_back(r);
      result_threads_.push_back(std::this_thread::get_id());
    });
  }
  ~NameRefreshTest() override {
    refresh_.reset();
    event_base_free(base_);
  }

  void follow(const std::string& yaml) {
    topology_ = topology_of(yaml);
    refresh_->set_topology(*topology_);
  }
  bool run_until(const std::function<bool()>& done) { return test::run_base_until(base_, done); }
  // Results for one server so far.
  std::vector<NameRefresh::Result> results_for(const std::string& identity) const {
    std::vector<NameRefresh::Result> out;
    for (const auto& r : results_) {
      if (r.identity == identity) out.push_back(r);
    }
    return out;
  }
  // As a worker reports it: from a thread of its own.
  void fail_connection(const std::string& identity) {
    std::thread([&] { refresh_->connect_failed("alpha", identity); }).join();
  }

  PrivateHosts* hosts_ = nullptr;
  event_base* base_ = event_base_new();
  std::shared_ptr<const Topology> topology_;
  std::vector<NameRefresh::Result> results_;
  std::vector<std::thread::id> result_threads_;
  std::unique_ptr<NameRefresh> refresh_;
};

const std::string kA = "cache-a.test:11211";
const std::string kB = "cache-b.test:11211";

TEST_F(NameRefreshTest, AFailedConnectionLooksTheNameUpAndTheAnswerComesBackOnTheLoop) {
  follow(alpha_yaml({kA, kB}));
  ASSERT_EQ(topology_->pools[0].servers[0].identity, kA);
  ASSERT_TRUE(topology_->pools[0].servers[0].named);
  // The name moves.
  hosts_->write(
      "127.0.0.1 localhost\n"
      "127.0.0.2 cache-a.test\n");
  fail_connection(kA);
  ASSERT_TRUE(run_until([&] { return !results_.empty(); })) << "no lookup came back";
  ASSERT_EQ(results_.size(), 1u);
  const NameRefresh::Result& r = results_.front();
  EXPECT_EQ(r.pool, "alpha");
  EXPECT_EQ(r.identity, kA);
  ASSERT_TRUE(r.addresses.has_value()) << r.error;
  EXPECT_EQ(*r.addresses, resolve_addresses("127.0.0.2", 11211, false));
  EXPECT_EQ(result_threads_.front(), std::this_thread::get_id())
      << "the result was not handed to the loop's thread";
}

TEST_F(NameRefreshTest, ANameThatNoLongerResolvesComesBackWithoutAddressesAndWhy) {
  follow(alpha_yaml({kA, kB}));
  hosts_->write("127.0.0.1 localhost\n127.0.0.1 cache-b.test\n");
  fail_connection(kA);
  ASSERT_TRUE(run_until([&] { return !results_.empty(); }));
  EXPECT_EQ(results_.front().identity, kA);
  EXPECT_FALSE(results_.front().addresses.has_value());
  EXPECT_NE(results_.front().error.find("cache-a.test"), std::string::npos)
      << results_.front().error;
}

// Lookups are made in the order asked for: once the lookup of b (asked
// after every failure of a) is back, every lookup of a that those failures
// asked for is back too.
TEST_F(NameRefreshTest, FailuresAskForALookupOfTheNameAtMostOnceASecond) {
  follow(alpha_yaml({kA, kB}));
  constexpr int kFailures = 200;
  const uint64_t first_asked_ms = monotonic_ms();
  for (int i = 0; i < kFailures; ++i) refresh_->connect_failed("alpha", kA);
  const uint64_t burst_ms = monotonic_ms() - first_asked_ms;
  refresh_->connect_failed("alpha", kB);  // another name is not held back by a's
  ASSERT_TRUE(run_until([&] { return !results_for(kB).empty(); }));
  if (burst_ms >= 900) GTEST_SKIP() << "the failures took " << burst_ms << " ms: not one second";
  EXPECT_EQ(results_for(kA).size(), 1u);

  // Failures go on: the next lookup of a is made, but not within the
  // second that followed the first one asked for.
  ASSERT_TRUE(run_until([&] {
    refresh_->connect_failed("alpha", kA);
    return results_for(kA).size() >= 2;
  })) << "failures a second later asked for no lookup";
  EXPECT_GE(monotonic_ms() - first_asked_ms, 1000u);
}

TEST_F(NameRefreshTest, ServersListedByAddressAreNeverLookedUp) {
  follow(alpha_yaml({kA, "127.0.0.1:11213"}));
  fail_connection("127.0.0.1:11213");
  fail_connection(kA);
  ASSERT_TRUE(run_until([&] { return !results_for(kA).empty(); }));
  EXPECT_EQ(results_.size(), 1u) << "a server listed by address was looked up";
}

TEST_F(NameRefreshTest, EveryDnsRefreshThePoolsNamesAreLookedUpWithoutAFailure) {
  follow(alpha_yaml({kA, kB}, 50) +
         "beta:\n"
         "  listen: 127.0.0.1:22198\n"
         "  dns_refresh: 50\n"
         "  servers:\n"
         "   - 127.0.0.1:11213:1\n");
  ASSERT_TRUE(run_until([&] { return results_for(kA).size() >= 3 && results_for(kB).size() >= 3; }))
      << "a: " << results_for(kA).size() << " lookups, b: " << results_for(kB).size();
  for (const auto& r : results_) {
    EXPECT_EQ(r.pool, "alpha");
    EXPECT_TRUE(r.addresses.has_value()) << r.error;
  }
}

TEST_F(NameRefreshTest, ANameDroppedByAReloadIsNoLongerLookedUp) {
  follow(alpha_yaml({kA, kB}));
  follow(alpha_yaml({kB, "127.0.0.1:11213"}));
  fail_connection(kA);
  fail_connection(kB);
  ASSERT_TRUE(run_until([&] { return !results_for(kB).empty(); }));
  EXPECT_TRUE(results_for(kA).empty()) << "a name no longer configured was looked up";
}

}  // namespace
}  // namespace memshard::proxy
