#include "proxy/runtime/worker_picker.h"

#include <algorithm>

namespace memshard::proxy {

WorkerPicker::WorkerPicker(size_t workers, std::vector<int> allowed_cpus)
    : workers_(std::max<size_t>(workers, 1)) {
  std::sort(allowed_cpus.begin(), allowed_cpus.end());
  allowed_cpus.erase(std::unique(allowed_cpus.begin(), allowed_cpus.end()), allowed_cpus.end());
  std::erase_if(allowed_cpus, [](int cpu) { return cpu < 0; });
  groups_ = std::clamp<size_t>(allowed_cpus.size(), 1, workers_);
  turn_.assign(groups_, 0);
  group_of_cpu_.assign(allowed_cpus.empty() ? 0 : static_cast<size_t>(allowed_cpus.back()) + 1, -1);
  for (size_t rank = 0; rank < allowed_cpus.size(); ++rank) {
    group_of_cpu_[static_cast<size_t>(allowed_cpus[rank])] = static_cast<int>(rank % groups_);
  }
}

size_t WorkerPicker::preferred(int incoming_cpu) {
  if (incoming_cpu < 0) return next_++ % workers_;
  auto cpu = static_cast<size_t>(incoming_cpu);
  // A CPU outside our mask (the client runs where we may not) still gets
  // a group of its own, so its connections stay together.
  size_t group = cpu < group_of_cpu_.size() && group_of_cpu_[cpu] >= 0
                     ? static_cast<size_t>(group_of_cpu_[cpu])
                     : cpu % groups_;
  // Workers group, group + groups_, ... below workers_.
  size_t members = (workers_ - group + groups_ - 1) / groups_;
  return group + groups_ * (turn_[group]++ % members);
}

size_t WorkerPicker::pick(int incoming_cpu, std::span<const uint64_t> loads) {
  size_t want = preferred(incoming_cpu);
  if (loads.size() != workers_) return want;
  auto least = std::min_element(loads.begin(), loads.end());
  if (loads[want] <= *least + slack(*least)) return want;
  return static_cast<size_t>(least - loads.begin());
}

}  // namespace memshard::proxy
