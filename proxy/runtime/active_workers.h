// Which workers take new connections, and which one a connection goes to.
// With --fixed-threads every worker is active; otherwise the governor
// (worker_governor.h) makes as few active as keep up with the load, one
// tick at a time. A connection goes to the active worker of the CPU it
// arrived on, within a bound on imbalance (worker_picker.h). When the
// count changes, each active worker over an even share hands its excess to
// those under it; a parked client that wakes on a worker no longer active
// moves then. Main thread only, but for active().
#pragma once

#include <event2/event.h>

#include <atomic>
#include <cstdint>
#include <memory>
#include <vector>

#include "proxy/runtime/worker.h"
#include "proxy/runtime/worker_governor.h"
#include "proxy/runtime/worker_picker.h"
#include "proxy/support/timer.h"

namespace memshard::proxy {

// The CPUs this process may run on, ascending: a cpuset or taskset limits
// them below the machine's.
std::vector<int> allowed_cpus();

class ActiveWorkers {
 public:
  // `workers` are started and outlive this; `cpus` are allowed_cpus().
  ActiveWorkers(event_base* base, const std::vector<std::unique_ptr<Worker>>& workers,
                std::vector<int> cpus, bool fixed);
  ActiveWorkers(const ActiveWorkers&) = delete;
  ActiveWorkers& operator=(const ActiveWorkers&) = delete;

  // The worker for a connection arriving on `cpu` (-1: unknown).
  Worker& pick(int cpu);
  // From any thread.
  int active() const { return active_.load(std::memory_order_relaxed); }
  // The count follows the load (not --fixed-threads, more than one worker).
  bool adaptive() const { return governor_ != nullptr; }
  // A drain: nothing moves any more.
  void freeze() { timer_.reset(); }

 private:
  void tick();
  // Makes `n` workers the active ones and tells every worker where its
  // connections belong now.
  void set_active(size_t n);

  const std::vector<std::unique_ptr<Worker>>& workers_;
  std::vector<int> cpus_;
  std::unique_ptr<WorkerPicker> picker_;
  // Workers 0 .. active_ - 1 take connections.
  std::atomic<int> active_{1};
  std::unique_ptr<WorkerGovernor> governor_;
  std::unique_ptr<Timer> timer_;
  std::vector<WorkerGovernor::Figures> figures_;  // scratch
  // The last tick's figures and time, for the debug log's per-worker view.
  std::vector<WorkerGovernor::Figures> last_figures_;
  uint64_t last_tick_usec_ = 0;
  std::vector<uint64_t> loads_;  // scratch for picker_
};

}  // namespace memshard::proxy
