// Which worker an accepted connection goes to (proxy/runtime/worker_picker.h), as
// seen from outside: connections opened from a thread on one CPU land on
// that CPU's worker, and a flood from one CPU still spreads over every
// worker. The per-worker counts come from /metrics.
#include <gtest/gtest.h>
#include <pthread.h>
#include <sched.h>

#include <memory>
#include <vector>

#include "ops_util.h"

namespace memshard::testing::ops {
namespace {

class WorkerSteering : public ::testing::Test {
 protected:
  void SetUp() override {
    cpus_ = allowed_cpus();
    if (cpus_.size() < 2) GTEST_SKIP() << "needs two CPUs to run on";
    fleet_ = std::make_unique<Fleet>(1);
    port_ = free_port();
    PoolSpec pool{
        "alpha", "127.0.0.1:" + std::to_string(port_), {}, {(*fleet_)[0].address() + ":1"}};
    // memshard inherits this process's CPUs: its worker k matches the k-th.
    proxy_ = start_proxy(dir_, config_yaml({pool}), port_, {"--threads", "2", "--fixed-threads"});
  }

  // Opens `count` connections from a thread on `cpu`; each answers a
  // request, so its worker has adopted it.
  void connect_from(int cpu, int count) {
    PinnedTo pin(cpu);
    ASSERT_TRUE(pin.ok());
    for (int i = 0; i < count; ++i) {
      clients_.push_back(std::make_unique<RawClient>(port_));
      ASSERT_EQ(clients_.back()->roundtrip("version\r\n").rfind("VERSION ", 0), 0u);
    }
  }

  // memshard_worker_connections for workers 0 and 1; {-1, -1} on failure.
  std::vector<double> per_worker() {
    std::vector<Sample> s;
    std::string error;
    if (!fetch_metrics(proxy_->stats_port, s, nullptr, &error)) {
      ADD_FAILURE() << error;
      return {-1, -1};
    }
    std::vector<double> out;
    for (const char* w : {"0", "1"}) {
      out.push_back(metric(s, "memshard_worker_connections", {{"worker", w}}).value_or(-1));
    }
    return out;
  }

  std::vector<int> cpus_;
  TempDir dir_;
  std::unique_ptr<Fleet> fleet_;
  uint16_t port_ = 0;
  std::unique_ptr<Proxy> proxy_;
  std::vector<std::unique_ptr<RawClient>> clients_;
};

TEST_F(WorkerSteering, ConnectionsGoToTheWorkerOfTheirCpu) {
  connect_from(cpus_[1], 4);
  EXPECT_EQ(per_worker(), (std::vector<double>{0, 4})) << "from the second CPU: worker 1";
  connect_from(cpus_[0], 3);
  EXPECT_EQ(per_worker(), (std::vector<double>{3, 4})) << "from the first CPU: worker 0";
  connect_from(cpus_[1], 2);
  EXPECT_EQ(per_worker(), (std::vector<double>{3, 6}));

  // A closed connection leaves its worker's count.
  clients_.erase(clients_.begin());
  EXPECT_TRUE(wait_until([&] {
    return per_worker() == std::vector<double>{3, 5};
  })) << per_worker()[0]
      << " " << per_worker()[1];
}

TEST_F(WorkerSteering, ConnectionsFromOneCpuStillSpreadOverEveryWorker) {
  // The second CPU's worker takes connections while it is at most 8 (the
  // slack) ahead of the other; then they alternate.
  connect_from(cpus_[1], 30);
  std::vector<double> n = per_worker();
  EXPECT_EQ(n[0] + n[1], 30);
  EXPECT_GT(n[1], n[0]);
  EXPECT_GE(n[0], 10) << "worker 0 took the overflow";
  EXPECT_LE(n[1] - n[0], 9);
}

}  // namespace
}  // namespace memshard::testing::ops
