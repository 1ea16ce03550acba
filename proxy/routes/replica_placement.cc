#include "proxy/routes/replica_placement.h"

#include <algorithm>
#include <array>

#include "proxy/support/stats.h"

namespace memshard::proxy {

ReplicaPlacement::ReplicaPlacement(const ketama::Ring& ring, std::vector<bool> live,
                                   size_t replicas, std::vector<Server*> servers)
    : ring_(ring),
      live_(std::move(live)),
      replicas_(std::min(replicas, kMaxReplicas)),
      servers_(std::move(servers)) {}

size_t ReplicaPlacement::copies(std::string_view key, std::span<size_t, kMaxReplicas> out) const {
  std::array<size_t, kMaxReplicas> all;
  const size_t n = ring_.preference_list(key, std::span<size_t>(all.data(), replicas_));
  size_t live = 0;
  for (size_t i = 0; i < n; ++i) {
    if (live_.empty() || live_[all[i]]) out[live++] = all[i];
  }
  return live;
}

size_t ReplicaPlacement::ejected_copies(std::string_view key,
                                        std::span<size_t, kMaxReplicas> out) const {
  if (live_.empty()) return 0;
  std::array<size_t, kMaxReplicas> all;
  const size_t n = ring_.preference_list(key, std::span<size_t>(all.data(), replicas_));
  size_t out_count = 0;
  for (size_t i = 0; i < n; ++i) {
    if (!live_[all[i]]) out[out_count++] = all[i];
  }
  return out_count;
}

ServerStats* ReplicaPlacement::counters(std::string_view key, size_t copy) const {
  std::array<size_t, kMaxReplicas> all;
  return copy < copies(key, all) ? servers_[all[copy]]->counters() : nullptr;
}

size_t CopyPlacement::place(std::string_view key) const {
  std::array<size_t, kMaxReplicas> copies;
  const size_t n = replicas_.copies(key, copies);
  return copy_ < n ? copies[copy_] : npos;
}

}  // namespace memshard::proxy
