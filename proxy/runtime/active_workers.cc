#include "proxy/runtime/active_workers.h"

#include <sched.h>

#include <algorithm>
#include <cstdio>
#include <string>

#include "proxy/runtime/thread_busy.h"
#include "proxy/support/clock.h"
#include "proxy/support/log.h"

namespace memshard::proxy {

std::vector<int> allowed_cpus() {
  std::vector<int> cpus;
  cpu_set_t set;
  CPU_ZERO(&set);
  if (sched_getaffinity(0, sizeof(set), &set) == 0) {
    for (int cpu = 0; cpu < CPU_SETSIZE; ++cpu) {
      if (CPU_ISSET(cpu, &set)) cpus.push_back(cpu);
    }
  }
  return cpus;
}

ActiveWorkers::ActiveWorkers(event_base* base, const std::vector<std::unique_ptr<Worker>>& workers,
                             std::vector<int> cpus, bool fixed)
    : workers_(workers), cpus_(std::move(cpus)) {
  set_active(fixed ? workers_.size() : 1);
  if (fixed || workers_.size() <= 1) return;
  WorkerGovernor::Settings settings;
  settings.max_workers = workers_.size();
  governor_ = std::make_unique<WorkerGovernor>(settings);
  timer_ = std::make_unique<Timer>(
      base, [this] { tick(); }, true);
  timer_->arm_usec(settings.tick_usec);
}

Worker& ActiveWorkers::pick(int cpu) {
  const auto active = static_cast<size_t>(active_.load(std::memory_order_relaxed));
  loads_.resize(active);
  for (size_t i = 0; i < active; ++i) loads_[i] = workers_[i]->client_load();
  return *workers_[picker_->pick(cpu, loads_)];
}

void ActiveWorkers::tick() {
  figures_.resize(workers_.size());
  for (size_t i = 0; i < workers_.size(); ++i) {
    const Worker& w = *workers_[i];
    figures_[i] = {thread_busy_usec(w.thread_id()), w.requests(), w.wakeups(),
                   w.stats().curr_connections.get()};
  }
  const auto was = static_cast<size_t>(active_.load(std::memory_order_relaxed));
  const uint64_t decided = governor_->decisions();
  const uint64_t at_usec = monotonic_usec();
  const size_t now = governor_->tick(at_usec, figures_);
  // What each decision was made of, tick by tick (the noise a trial is
  // judged through shows here), and each worker's part of it: how fast
  // connections reach a worker that became active shows in its share.
  if (log_level() >= LogLevel::debug) {
    std::string parts;
    const double seconds = static_cast<double>(at_usec - last_tick_usec_) / 1e6;
    for (size_t i = 0; i < figures_.size() && last_tick_usec_ != 0; ++i) {
      const WorkerGovernor::Figures& f = figures_[i];
      const WorkerGovernor::Figures before = i < last_figures_.size() ? last_figures_[i] : f;
      char buf[96];
      snprintf(buf, sizeof(buf), "; worker %zu: %.0f requests/s, %.0f%% busy, %llu connections", i,
               static_cast<double>(f.requests - before.requests) / seconds,
               static_cast<double>(f.busy_usec - before.busy_usec) / 1e4 / seconds,
               static_cast<unsigned long long>(f.connections));
      parts += buf;
    }
    log_debug("workers: tick at %zu active: %.0f requests/s, %.0f%% busy%s", was,
              governor_->requests_per_second(), governor_->busy() * 100, parts.c_str());
    last_figures_ = figures_;
    last_tick_usec_ = at_usec;
  }
  // A trial's verdict is said even when it keeps the count.
  if (now == was && governor_->decisions() == decided) return;
  log_info("workers: %zu of %zu active (%s)", now, workers_.size(), governor_->reason().c_str());
  if (now != was) set_active(now);
}

// Connections are counted by worker (parked ones aside: they cost no
// worker time, and one that wakes on a worker no longer active moves then).
// Each active worker above an even share sends its excess to those below.
void ActiveWorkers::set_active(size_t n) {
  n = std::clamp<size_t>(n, 1, workers_.size());
  active_.store(static_cast<int>(n), std::memory_order_relaxed);
  picker_ = std::make_unique<WorkerPicker>(n, cpus_);
  std::vector<uint64_t> load(workers_.size());
  uint64_t total = 0;
  for (size_t i = 0; i < workers_.size(); ++i) {
    const WorkerStats& st = workers_[i]->stats();
    const uint64_t open = st.curr_connections.get(), parked = st.parked_connections.get();
    load[i] = open > parked ? open - parked : 0;
    total += load[i];
  }
  const uint64_t share = (total + n - 1) / n;
  const std::vector<int> worker_of_cpu = picker_->first_worker_by_cpu();
  for (size_t i = 0; i < workers_.size(); ++i) {
    Worker::Placement p;
    p.active = n;
    p.worker_of_cpu = worker_of_cpu;
    p.send.assign(workers_.size(), 0);
    if (i < n && load[i] > share) {
      uint64_t excess = load[i] - share;
      for (size_t j = 0; j < n && excess > 0; ++j) {
        if (j == i || load[j] >= share) continue;
        const uint64_t give = std::min(excess, share - load[j]);
        p.send[j] = give;
        load[j] += give;
        excess -= give;
      }
    }
    workers_[i]->place(std::move(p));
  }
}

}  // namespace memshard::proxy
