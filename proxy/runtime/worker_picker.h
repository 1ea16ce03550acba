// Which worker takes an accepted connection.
//
// A connection goes to the worker that matches the CPU its packets arrive
// on (SO_INCOMING_CPU): on loopback that is the CPU its client ran on when
// it connected; on a NIC with several receive queues, the CPU that takes
// its queue's interrupts. Connections from one client thread (or one
// queue) then share a worker, so the scheduler can keep that worker and
// its client on one CPU, and a wake-up between them does not have to cross
// CPUs (on the 2-vCPU bench machine, two processes passing a byte back and
// forth over pipes spend 15-18 us of CPU each per round trip on different
// CPUs, 2 us on the same one).
//
// Locality must not cost balance: a worker more than the slack above the
// least-loaded one gets no more connections until the others catch up, so
// clients that all arrive on one CPU still spread over every worker.
#pragma once

#include <cstddef>
#include <cstdint>
#include <span>
#include <vector>

namespace memshard::proxy {

class WorkerPicker {
 public:
  // `allowed_cpus`: the CPUs this process may run on (its affinity mask),
  // in any order. With no more workers than CPUs, the k-th lowest maps
  // to worker k % workers; with more, the k-th CPU's connections take
  // turns among workers k, k + cpus, k + 2 cpus ... (so --threads above
  // the CPU count still spreads evenly).
  WorkerPicker(size_t workers, std::vector<int> allowed_cpus);

  // `incoming_cpu`: the connection's SO_INCOMING_CPU, or -1 when unknown
  // (unix sockets); then workers take turns. `loads[i]`: worker i's open
  // client connections, including those handed to it and not yet adopted.
  size_t pick(int incoming_cpu, std::span<const uint64_t> loads);
  // By CPU number, the first worker of the CPU's group (-1: not in the
  // mask): where a connection moving between workers goes
  // (Worker::Placement).
  std::vector<int> first_worker_by_cpu() const { return group_of_cpu_; }

  // How far above the least-loaded worker a preferred worker may be: a
  // few connections of imbalance cost nothing; beyond that, a quarter of
  // the least-loaded worker's share keeps large fleets within 25% of even.
  static constexpr uint64_t kMinSlack = 8;
  static constexpr uint64_t slack(uint64_t least_load) {
    return least_load / 4 > kMinSlack ? least_load / 4 : kMinSlack;
  }
  // Connections that, accepted together from anywhere, reach every one of
  // `workers` workers: no worker can be more than slack(0) + 1 ahead of an
  // idle one.
  static constexpr uint64_t reaching_every_worker(uint64_t workers) {
    return workers == 0 ? 0 : (slack(0) + 1) * (workers - 1) + 1;
  }

 private:
  size_t preferred(int incoming_cpu);

  size_t workers_;
  size_t groups_;                  // min(CPUs in the mask, workers), at least 1
  std::vector<int> group_of_cpu_;  // by CPU number; -1: not in the mask
  std::vector<size_t> turn_;       // per group: turns among its workers
  size_t next_ = 0;                // turns, for connections with no CPU
};

}  // namespace memshard::proxy
