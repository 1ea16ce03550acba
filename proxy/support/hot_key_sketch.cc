#include "proxy/support/hot_key_sketch.h"

#include <algorithm>
#include <climits>
#include <cmath>
#include <cstdint>
#include <functional>
#include <map>

namespace memshard::proxy {

HotKeySketch::HotKeySketch(size_t capacity) : capacity_(std::max<size_t>(capacity, 1)) {
  counters_.reserve(capacity_);
  counts_.reserve(capacity_);
  hashes_.reserve(capacity_);
  size_t slots = 16;
  while (slots < capacity_ * 4) slots *= 2;
  slot_hash_.assign(slots, 0);
  slot_counter_.assign(slots, -1);
  mask_ = slots - 1;
}

uint32_t HotKeySketch::min_count() const {
  uint32_t m = UINT32_MAX;
  for (uint32_t c : counts_) m = std::min(m, c);
  return counts_.empty() ? 0 : m;
}

void HotKeySketch::refresh_min() {
  min_value_ = min_count();
  at_min_ = static_cast<size_t>(std::count(counts_.begin(), counts_.end(), min_value_));
}

void HotKeySketch::left_min(uint32_t old_count) {
  if (counters_.size() == capacity_ && old_count == min_value_ && --at_min_ == 0) refresh_min();
}

size_t HotKeySketch::slot_of(uint64_t hash) const {
  size_t i = hash & mask_;
  while (slot_counter_[i] >= 0 && slot_hash_[i] != hash) i = (i + 1) & mask_;
  return i;
}

void HotKeySketch::index_insert(uint64_t hash, uint32_t counter) {
  size_t i = slot_of(hash);
  slot_hash_[i] = hash;
  slot_counter_[i] = static_cast<int32_t>(counter);
}

void HotKeySketch::index_erase(uint64_t hash) {
  size_t i = slot_of(hash);
  if (slot_counter_[i] < 0) return;
  // Backward-shift deletion: pull later entries of the probe run into the
  // hole when their home slot allows, so lookups need no tombstones.
  size_t j = i;
  while (true) {
    j = (j + 1) & mask_;
    if (slot_counter_[j] < 0) break;
    size_t home = slot_hash_[j] & mask_;
    bool movable = i <= j ? (home <= i || home > j) : (home <= i && home > j);
    if (!movable) continue;
    slot_hash_[i] = slot_hash_[j];
    slot_counter_[i] = slot_counter_[j];
    i = j;
  }
  slot_counter_[i] = -1;
}

void HotKeySketch::rebuild_index() {
  std::fill(slot_counter_.begin(), slot_counter_.end(), -1);
  for (size_t c = 0; c < counters_.size(); ++c) index_insert(hashes_[c], static_cast<uint32_t>(c));
}

HotKeyCounter& HotKeySketch::add(std::string_view key) {
  ++total_;
  const uint64_t hash = std::hash<std::string_view>{}(key);
  size_t slot = slot_of(hash);
  if (slot_counter_[slot] >= 0) {
    const auto i = static_cast<size_t>(slot_counter_[slot]);
    left_min(counts_[i]++);
    ++counters_[i].count;
    return counters_[i];
  }
  if (counters_.size() < capacity_) {
    slot_hash_[slot] = hash;
    slot_counter_[slot] = static_cast<int32_t>(counters_.size());
    counters_.push_back(HotKeyCounter{std::string(key), std::string(), 1, 0});
    counters_.back().key.reserve(64);
    counts_.push_back(1);
    hashes_.push_back(hash);
    if (counters_.size() == capacity_) refresh_min();
    return counters_.back();
  }
  // Space-Saving: the least counted key gives its counter up, and the new
  // key may have been seen as often as it was.
  const size_t n = counters_.size();
  size_t i = cursor_ % n;
  for (size_t tried = 0; counts_[i] != min_value_; i = (i + 1) % n) {
    if (++tried > n) {  // cannot happen while the bookkeeping holds; never loop
      refresh_min();
      tried = 0;
    }
  }
  cursor_ = i + 1;
  HotKeyCounter& c = counters_[i];
  index_erase(hashes_[i]);
  c.error = c.count;
  c.count += 1;
  counts_[i] = static_cast<uint32_t>(c.count);
  c.key.assign(key);  // keeps its capacity: no allocation for most keys
  c.server.clear();
  hashes_[i] = hash;
  index_insert(hash, static_cast<uint32_t>(i));
  left_min(min_value_);
  return c;
}

void HotKeySketch::halve() {
  total_ /= 2;
  size_t kept = 0;
  for (size_t i = 0; i < counters_.size(); ++i) {
    HotKeyCounter& c = counters_[i];
    c.count /= 2;
    c.error /= 2;
    if (c.count == 0) continue;
    if (kept != i) {
      counters_[kept] = std::move(c);
      hashes_[kept] = hashes_[i];
    }
    counts_[kept] = static_cast<uint32_t>(counters_[kept].count);
    ++kept;
  }
  counters_.resize(kept);
  counts_.resize(kept);
  hashes_.resize(kept);
  rebuild_index();
  refresh_min();
}

HotKeySummary HotKeySketch::summary() const {
  HotKeySummary s;
  s.counters = counters_;
  s.total = total_;
  s.min_count = counters_.size() < capacity_ ? 0 : min_count();
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
