#include "proxy/routes/past_placement.h"

#include <algorithm>

namespace memshard::proxy {

PastPlacement::PastPlacement(const std::vector<PastRing>& past,
                             std::vector<std::vector<Server*>> servers, const Placement* current,
                             const ReplicaPlacement* replicas)
    : past_(past), servers_(std::move(servers)), current_(current), replicas_(replicas) {}

size_t PastPlacement::current(std::string_view key, std::span<Server*, kMaxReplicas> out) const {
  if (replicas_ != nullptr) {
    std::array<size_t, kMaxReplicas> idx;
    const size_t n = replicas_->copies(key, idx);
    for (size_t i = 0; i < n; ++i) out[i] = &replicas_->server(idx[i]);
    return n;
  }
  const size_t i = current_ != nullptr ? current_->place(key) : Placement::npos;
  if (i == Placement::npos) return 0;
  out[0] = &current_->server(i);
  return 1;
}

bool PastPlacement::open(uint64_t now_usec) const {
  return std::any_of(past_.begin(), past_.end(),
                     [&](const PastRing& p) { return p.until_usec > now_usec; });
}

size_t PastPlacement::owners(std::string_view key, uint64_t now_usec,
                             std::span<Server*, kMaxPastOwners> out, Kinds* kinds) const {
  if (kinds != nullptr) *kinds = {};
  std::array<Server*, kMaxReplicas> now;
  const size_t current = this->current(key, now);
  const auto seen = [&](Server* s, size_t n) {
    return std::find(now.begin(), now.begin() + current, s) != now.begin() + current ||
           std::find(out.begin(), out.begin() + n, s) != out.begin() + n;
  };
  size_t n = 0;
  for (size_t p = 0; p < past_.size(); ++p) {
    const PastRing& ring = past_[p];
    if (ring.until_usec <= now_usec) continue;
    std::array<size_t, kMaxReplicas> idx;
    const size_t copies = std::clamp<size_t>(ring.replicas, 1, kMaxReplicas);
    const size_t k = ring.ring.preference_list(key, std::span<size_t>(idx.data(), copies));
    for (size_t c = 0; c < k && n < out.size(); ++c) {
      if (!ring.live.empty() && !ring.live[idx[c]]) continue;
      Server* s = servers_[p][idx[c]];
      if (s == nullptr || seen(s, n)) continue;
      out[n++] = s;
      if (kinds == nullptr) continue;
      if (ring.future && n == kinds->future + 1) ++kinds->future;
      kinds->switching = kinds->switching || ring.future || ring.scheduled;
    }
  }
  return n;
}

}  // namespace memshard::proxy
