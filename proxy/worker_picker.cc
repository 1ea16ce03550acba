#include "proxy/worker_picker.h"

#include <algorithm>

namespace memshard::proxy {

WorkerPicker::WorkerPicker(size_t workers, std::vector<int> allowed_cpus)
    : workers_(std::max<size_t>(workers, 1)) {
  int highest = -1;
  for (int cpu : allowed_cpus) highest = std::max(highest, cpu);
  worker_of_cpu_.assign(static_cast<size_t>(highest + 1), -1);
  size_t rank = 0;
  for (int cpu : allowed_cpus) {
    if (cpu < 0 || worker_of_cpu_[static_cast<size_t>(cpu)] >= 0) continue;
    worker_of_cpu_[static_cast<size_t>(cpu)] = static_cast<int>(rank++ % workers_);
  }
}

size_t WorkerPicker::preferred(int incoming_cpu) {
  if (incoming_cpu < 0) return next_++ % workers_;
  auto cpu = static_cast<size_t>(incoming_cpu);
  if (cpu < worker_of_cpu_.size() && worker_of_cpu_[cpu] >= 0) {
    return static_cast<size_t>(worker_of_cpu_[cpu]);
  }
  // A CPU outside our mask (the client runs where we may not): still one
  // worker per CPU, so its connections stay together.
  return cpu % workers_;
}

size_t WorkerPicker::pick(int incoming_cpu, std::span<const uint64_t> loads) {
  size_t want = preferred(incoming_cpu);
  if (loads.size() != workers_) return want;
  auto least = std::min_element(loads.begin(), loads.end());
  if (loads[want] <= *least + slack(*least)) return want;
  return static_cast<size_t>(least - loads.begin());
}

}  // namespace memshard::proxy
