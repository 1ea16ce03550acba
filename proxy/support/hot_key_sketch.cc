#include "proxy/support/hot_key_sketch.h"

#include <algorithm>
#include <cmath>
#include <map>

namespace memshard::proxy {

HotKeySketch::HotKeySketch(size_t capacity) : capacity_(std::max<size_t>(capacity, 1)) {
  counters_.reserve(capacity_);
  counts_.reserve(capacity_);
  index_.reserve(capacity_ * 2);
}

size_t HotKeySketch::min_index() const {
  return static_cast<size_t>(std::min_element(counts_.begin(), counts_.end()) - counts_.begin());
}

void HotKeySketch::add(std::string_view key, std::string_view server) {
  ++total_;
  // Heterogeneous lookup needs C++20 transparent hashing on the map; a
  // temporary string is the price of the sampled path only.
  std::string k(key);
  if (auto it = index_.find(k); it != index_.end()) {
    ++counts_[it->second];
    ++counters_[it->second].count;
    return;
  }
  if (counters_.size() < capacity_) {
    index_.emplace(k, counters_.size());
    counters_.push_back(HotKeyCounter{std::move(k), std::string(server), 1, 0});
    counts_.push_back(1);
    return;
  }
  size_t i = min_index();
  HotKeyCounter& c = counters_[i];
  index_.erase(c.key);
  c.error = c.count;
  c.count += 1;
  counts_[i] = c.count;
  c.server.assign(server);
  c.key = std::move(k);
  index_.emplace(c.key, i);
}

void HotKeySketch::halve() {
  total_ /= 2;
  std::vector<HotKeyCounter> kept;
  kept.reserve(capacity_);
  for (HotKeyCounter& c : counters_) {
    c.count /= 2;
    c.error /= 2;
    if (c.count > 0) kept.push_back(std::move(c));
  }
  counters_ = std::move(kept);
  counts_.clear();
  index_.clear();
  for (size_t i = 0; i < counters_.size(); ++i) {
    counts_.push_back(counters_[i].count);
    index_.emplace(counters_[i].key, i);
  }
}

HotKeySummary HotKeySketch::summary() const {
  HotKeySummary s;
  s.counters = counters_;
  s.total = total_;
  s.min_count = counters_.size() < capacity_ ? 0 : counts_[min_index()];
  return s;
}

std::vector<HotKeyReport> merge_hot_keys(const std::vector<HotKeySummary>& summaries,
                                         double threshold, size_t limit, double confidence_sigmas) {
  struct Bounds {
    std::string server;
    uint64_t lower = 0, upper = 0;
    uint64_t server_count = 0;
  };
  std::map<std::string, Bounds> keys;
  uint64_t total = 0;
  for (const HotKeySummary& s : summaries) {
    total += s.total;
    for (const HotKeyCounter& c : s.counters) {
      Bounds& b = keys[c.key];
      b.lower += c.count - std::min(c.error, c.count);
      b.upper += c.count;
      // The server of the summary that counted the key most: after a
      // reload moved it, most of the recent traffic went there.
      if (c.count > b.server_count) {
        b.server = c.server;
        b.server_count = c.count;
      }
    }
  }
  if (total == 0) return {};
  // A summary that left a key out may still have seen it min_count times.
  for (auto& [key, b] : keys) {
    for (const HotKeySummary& s : summaries) {
      bool counted = std::any_of(s.counters.begin(), s.counters.end(),
                                 [&](const HotKeyCounter& c) { return c.key == key; });
      if (!counted) b.upper += s.min_count;
    }
  }
  std::vector<HotKeyReport> out;
  const double n = static_cast<double>(total);
  for (auto& [key, b] : keys) {
    double lower = static_cast<double>(b.lower) / n;
    double upper = static_cast<double>(b.upper) / n;
    double share = (lower + upper) / 2;
    double sampling = confidence_sigmas * std::sqrt(std::max(share * (1 - share), 0.0) / n);
    if (lower - sampling < threshold) continue;
    out.push_back(HotKeyReport{key, b.server, share, (upper - lower) / 2 + sampling});
  }
  std::sort(out.begin(), out.end(),
            [](const HotKeyReport& a, const HotKeyReport& b) { return a.share > b.share; });
  if (out.size() > limit) out.resize(limit);
  return out;
}

}  // namespace memshard::proxy
