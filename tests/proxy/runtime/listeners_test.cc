// Listeners (proxy/runtime/listeners.h): the pools' sockets and who may
// come in. Real sockets on 127.0.0.1, the event loop run on the test's
// thread until what a test waits for has happened (bounded_wait.h). A
// client connected while the loop does not run waits in the socket's
// backlog, so a test can connect first and let the loop accept later: a
// client that waited through a reload shows that its socket was kept.
#include "proxy/runtime/listeners.h"

#include <gtest/gtest.h>
#include <sys/resource.h>
#include <unistd.h>

#include <csignal>
#include <memory>
#include <stdexcept>
#include <string>
#include <vector>

#include "bounded_wait.h"
#include "conf/config.h"
#include "harness.h"
#include "proxy/runtime/descriptor_budget.h"
#include "scripted_server.h"
#include "test_topology.h"

namespace memshard::proxy {
namespace {

using memshard::testing::free_port;
using memshard::testing::RawClient;
using test::run_base_until;
using test::topology_of;

constexpr std::string_view kRefused = "ERROR Too many open connections\r\n";

struct Adopted {
  int fd;
  std::string pool;
  std::shared_ptr<ClientCount> clients;
};

// "name" on `port`, with one server that need not exist (nothing here
// connects to servers) and `extra` directives.
std::string pool_yaml(const std::string& name, uint16_t port, const std::string& extra = "") {
  return name + ":\n  listen: 127.0.0.1:" + std::to_string(port) +
         "\n  servers:\n   - 127.0.0.1:1:1\n" + extra;
}

class ListenersTest : public ::testing::Test {
 protected:
  ListenersTest() {
    std::signal(SIGPIPE, SIG_IGN);
    base_ = event_base_new();
    listeners_ = std::make_unique<Listeners>(
        base_, [this](int fd, const std::string& pool, std::shared_ptr<ClientCount> clients, int) {
          adopted_.push_back({fd, pool, std::move(clients)});
        });
  }
  ~ListenersTest() override {
    listeners_.reset();
    for (const Adopted& a : adopted_) close(a.fd);
    event_base_free(base_);
  }

  // Runs the loop until `n` clients were let in.
  bool let_in(size_t n) {
    return run_base_until(base_, [&] { return adopted_.size() >= n; });
  }
  // One client is let in on `port`, the next refused as memcached refuses.
  void one_in_then_refused(uint16_t port) {
    RawClient first(port);
    ASSERT_TRUE(let_in(1));
    RawClient second(port);
    run_base_until(base_, [&] { return listeners_->rejected() >= 1; });
    EXPECT_EQ(second.read_until(kRefused), kRefused);
    EXPECT_EQ(adopted_.size(), 1u);
    EXPECT_EQ(listeners_->rejected(), 1u);
  }

  event_base* base_;
  std::unique_ptr<Listeners> listeners_;
  std::vector<Adopted> adopted_;
  const uint16_t p1_ = free_port();
  const uint16_t p2_ = free_port();
};

TEST_F(ListenersTest, AClientLetInGoesToAdoptWithItsPoolAndIsCounted) {
  listeners_->open(*topology_of(pool_yaml("alpha", p1_) + pool_yaml("beta", p2_)));
  RawClient to_beta(p2_);
  ASSERT_TRUE(let_in(1));
  EXPECT_EQ(adopted_[0].pool, "beta");
  EXPECT_EQ(adopted_[0].clients->open(), 1u);
  RawClient to_alpha(p1_);
  ASSERT_TRUE(let_in(2));
  EXPECT_EQ(adopted_[1].pool, "alpha");
  EXPECT_EQ(adopted_[1].clients->open(), 1u) << "each pool counts its own clients";
  EXPECT_EQ(listeners_->rejected(), 0u);
}

TEST_F(ListenersTest, APoolsClientLimitRefusesTheNextAsMemcachedDoes) {
  listeners_->open(*topology_of(pool_yaml("alpha", p1_, "  client_connections: 1\n")));
  one_in_then_refused(p1_);
}

// A socket whose address stays is the same socket: a client waiting in its
// backlog through the swap is let in after it, under the pool that now
// owns the address.
TEST_F(ListenersTest, ASwapKeepsTheSocketsThatStayAndClosesTheOthers) {
  listeners_->open(*topology_of(pool_yaml("alpha", p1_)));
  RawClient waiting(p1_);
  std::string why;
  ASSERT_TRUE(
      listeners_->swap(*topology_of(pool_yaml("renamed", p1_) + pool_yaml("beta", p2_)), why))
      << why;
  ASSERT_TRUE(let_in(1));
  EXPECT_EQ(adopted_[0].pool, "renamed");
  RawClient to_beta(p2_);
  ASSERT_TRUE(let_in(2));
  EXPECT_EQ(adopted_[1].pool, "beta");

  ASSERT_TRUE(listeners_->swap(*topology_of(pool_yaml("beta", p2_)), why)) << why;
  EXPECT_FALSE(memshard::testing::wait_listening(p1_, std::chrono::milliseconds(200)))
      << "a socket no pool listens on stayed open";
}

TEST_F(ListenersTest, ASwapThatCannotBindChangesNothing) {
  listeners_->open(*topology_of(pool_yaml("alpha", p1_)));
  const test::RefusingPort taken;  // bound by another socket: no bind succeeds
  std::string why;
  EXPECT_FALSE(
      listeners_->swap(*topology_of(pool_yaml("gamma", free_port()) + pool_yaml("alpha", p1_) +
                                    pool_yaml("beta", taken.port())),
                       why));
  EXPECT_NE(why.find("cannot listen on " + taken.address()), std::string::npos) << why;
  RawClient to_alpha(p1_);
  ASSERT_TRUE(let_in(1));
  EXPECT_EQ(adopted_[0].pool, "alpha") << "the refused swap changed the socket's pool";
}

// Lowers the soft descriptor limit for the test's length.
class DescriptorLimit {
 public:
  explicit DescriptorLimit(rlim_t soft) {
    getrlimit(RLIMIT_NOFILE, &was_);
    rlimit lowered = was_;
    lowered.rlim_cur = soft;
    ok_ = setrlimit(RLIMIT_NOFILE, &lowered) == 0;
  }
  ~DescriptorLimit() { setrlimit(RLIMIT_NOFILE, &was_); }
  bool ok() const { return ok_; }

 private:
  rlimit was_{};
  bool ok_ = false;
};

// Room for exactly one client: the next is refused although its pool has
// no limit of its own, and the operator's figure says so.
TEST_F(ListenersTest, TheDescriptorLimitLeavesRoomForSoManyClients) {
  const auto topology = topology_of(pool_yaml("alpha", p1_));
  listeners_->open(*topology);
  const uint64_t servers = server_connections_at_most(*topology, 1);
  DescriptorLimit limit(open_descriptors() + servers + DescriptorBudget::kSpare + 1);
  ASSERT_TRUE(limit.ok());
  listeners_->set_budget(*topology, 1, true);
  EXPECT_EQ(listeners_->max_connections(), 1u);

  one_in_then_refused(p1_);
}

TEST_F(ListenersTest, NoRoomForAnyClientAtStartIsAnError) {
  const auto topology = topology_of(pool_yaml("alpha", p1_));
  listeners_->open(*topology);
  DescriptorLimit limit(open_descriptors() + 1);
  ASSERT_TRUE(limit.ok());
  try {
    listeners_->set_budget(*topology, 1, true);
    ADD_FAILURE() << "started with no room for a client";
  } catch (const std::runtime_error& e) {
    EXPECT_NE(std::string(e.what()).find("raise the limit"), std::string::npos) << e.what();
  }
}

}  // namespace
}  // namespace memshard::proxy
