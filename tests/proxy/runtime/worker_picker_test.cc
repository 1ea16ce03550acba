// WorkerPicker (proxy/worker_picker.h): connections that arrive on one CPU
// share a worker, and no worker runs more than the slack ahead of the
// least-loaded one however the connections arrive.
#include "proxy/runtime/worker_picker.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <vector>

namespace memshard::proxy {
namespace {

// Accepts `count` connections arriving on `cpu`, each counted on the worker
// it went to; returns the workers picked, in order.
std::vector<size_t> accept(WorkerPicker& picker, std::vector<uint64_t>& loads, int cpu, int count) {
  std::vector<size_t> picked;
  for (int i = 0; i < count; ++i) {
    size_t w = picker.pick(cpu, loads);
    ++loads.at(w);
    picked.push_back(w);
  }
  return picked;
}

TEST(WorkerPicker, EachClientCpuGetsItsOwnWorker) {
  WorkerPicker picker(2, {0, 1});
  std::vector<uint64_t> loads(2, 0);
  // Two client threads, one per CPU, connecting in turn (as the bench's
  // load generator does): every connection lands with its CPU's worker.
  for (int i = 0; i < 32; ++i) {
    EXPECT_EQ(picker.pick(0, loads), 0u);
    ++loads[0];
    EXPECT_EQ(picker.pick(1, loads), 1u);
    ++loads[1];
  }
  EXPECT_EQ(loads, (std::vector<uint64_t>{32, 32}));
}

TEST(WorkerPicker, CpusMapToWorkersByTheirRankInTheMask) {
  // Allowed CPUs 4 and 5 only (taskset -c 4,5): the first is worker 0.
  WorkerPicker two(2, {4, 5});
  std::vector<uint64_t> idle(2, 0);
  EXPECT_EQ(two.pick(4, idle), 0u);
  EXPECT_EQ(two.pick(5, idle), 1u);

  // More CPUs than workers: the CPUs are dealt out in turn.
  WorkerPicker dealt(3, {0, 2, 3, 6, 7});
  std::vector<uint64_t> none(3, 0);
  EXPECT_EQ(dealt.pick(0, none), 0u);
  EXPECT_EQ(dealt.pick(2, none), 1u);
  EXPECT_EQ(dealt.pick(3, none), 2u);
  EXPECT_EQ(dealt.pick(6, none), 0u);
  EXPECT_EQ(dealt.pick(7, none), 1u);
}

TEST(WorkerPicker, ACpuOutsideTheMaskStillKeepsItsConnectionsTogether) {
  WorkerPicker picker(3, {0, 1, 2});
  std::vector<uint64_t> loads(3, 0);
  std::vector<size_t> picked = accept(picker, loads, 7, 5);
  EXPECT_EQ(picked, std::vector<size_t>(5, 7 % 3));
}

TEST(WorkerPicker, MoreWorkersThanCpusTakeTurnsAtEachCpusConnections) {
  // --threads 5 on two CPUs: CPU 0's connections go to workers 0, 2 and 4
  // in turn, CPU 1's to workers 1 and 3, so none of the five is left out.
  WorkerPicker picker(5, {0, 1});
  std::vector<uint64_t> loads(5, 0);
  EXPECT_EQ(accept(picker, loads, 0, 6), (std::vector<size_t>{0, 2, 4, 0, 2, 4}));
  EXPECT_EQ(accept(picker, loads, 1, 4), (std::vector<size_t>{1, 3, 1, 3}));
  EXPECT_EQ(loads, (std::vector<uint64_t>{2, 2, 2, 2, 2}));
}

TEST(WorkerPicker, ConnectionsWithNoCpuTakeTurns) {
  // Unix sockets report no CPU: the workers take turns.
  WorkerPicker picker(3, {0, 1});
  std::vector<uint64_t> loads(3, 0);
  EXPECT_EQ(accept(picker, loads, -1, 7), (std::vector<size_t>{0, 1, 2, 0, 1, 2, 0}));
}

TEST(WorkerPicker, OneCpuCannotTakeMoreThanTheSlack) {
  // Every client on CPU 0 (a single-queue NIC, or one client thread): its
  // worker fills up to the slack over the least-loaded one, then the
  // others get the overflow, so every worker gets a share.
  WorkerPicker picker(4, {0, 1, 2, 3});
  std::vector<uint64_t> loads(4, 0);
  std::vector<size_t> first = accept(picker, loads, 0, 9);
  EXPECT_EQ(std::count(first.begin(), first.end(), 0u), 9) << "the slack over idle workers is 8";
  EXPECT_EQ(loads, (std::vector<uint64_t>{9, 0, 0, 0}));
  EXPECT_EQ(picker.pick(0, loads), 1u) << "9 is past 0 + 8: the least-loaded worker";

  accept(picker, loads, 0, 991);
  uint64_t least = *std::min_element(loads.begin(), loads.end());
  uint64_t most = *std::max_element(loads.begin(), loads.end());
  EXPECT_EQ(most, loads[0]) << "CPU 0's worker still holds the most";
  EXPECT_LE(most, least + WorkerPicker::slack(least) + 1);
  EXPECT_GE(least, 200u) << "every worker took a share of the 1000";
}

TEST(WorkerPicker, ClosedConnectionsReopenTheWayToTheCpusWorker) {
  WorkerPicker picker(2, {0, 1});
  std::vector<uint64_t> loads = {20, 10};
  EXPECT_EQ(picker.pick(0, loads), 1u) << "20 is past 10 + 8";
  loads[0] = 18;  // two of worker 0's clients left
  EXPECT_EQ(picker.pick(0, loads), 0u);
}

TEST(WorkerPicker, ReachingEveryWorkerIsEnoughHoweverTheConnectionsArrive) {
  // The worst case for three workers: the first two CPUs' workers fill up
  // to the slack while the third gets nothing; the next connection, from
  // any CPU, must go to the third.
  ASSERT_EQ(WorkerPicker::reaching_every_worker(3), 19u);
  WorkerPicker picker(3, {0, 1, 2});
  std::vector<uint64_t> loads(3, 0);
  accept(picker, loads, 0, 9);
  accept(picker, loads, 1, 9);
  EXPECT_EQ(loads, (std::vector<uint64_t>{9, 9, 0}));
  EXPECT_EQ(picker.pick(0, loads), 2u);
  EXPECT_EQ(WorkerPicker::reaching_every_worker(1), 1u);
  EXPECT_EQ(WorkerPicker::reaching_every_worker(0), 0u) << "no workers: nothing to reach";
}

TEST(WorkerPicker, SlackIsEightOrAQuarterOfTheLeastLoad) {
  EXPECT_EQ(WorkerPicker::slack(0), 8u);
  EXPECT_EQ(WorkerPicker::slack(32), 8u);
  EXPECT_EQ(WorkerPicker::slack(100), 25u);
  EXPECT_EQ(WorkerPicker::slack(4000), 1000u);
}

}  // namespace
}  // namespace memshard::proxy
