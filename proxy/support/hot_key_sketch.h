// A bounded summary of the keys a stream names most often: Space-Saving
// (Metwally et al.), `capacity` counters. A key not counted yet takes the
// counter of the least counted one and inherits its count as its error, so
// each counted key's true count lies in [count - error, count], and any key
// not in the summary was seen at most min_count() times. Pure: no clock, no
// threads, so tests feed it plain keys.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

namespace memshard::proxy {

struct HotKeyCounter {
  std::string key;
  std::string server;  // where the key went when it was first counted
  uint64_t count = 0;  // an overestimate
  uint64_t error = 0;  // by at most this much
};

// What one summary says, copied out for merging.
struct HotKeySummary {
  std::vector<HotKeyCounter> counters;
  uint64_t total = 0;      // everything counted
  uint64_t min_count = 0;  // the bound on keys left out (0 while not full)
};

class HotKeySketch {
 public:
  explicit HotKeySketch(size_t capacity);

  void add(std::string_view key, std::string_view server);
  // Halves every count: older traffic weighs less, so a key that cooled
  // down leaves the summary. Keeps the bounds (they halve with the counts).
  void halve();
  HotKeySummary summary() const;
  uint64_t total() const { return total_; }
  size_t size() const { return counters_.size(); }

 private:
  size_t min_index() const;

  size_t capacity_;
  std::vector<HotKeyCounter> counters_;
  std::vector<uint64_t> counts_;  // counters_[i].count, contiguous for the min scan
  std::unordered_map<std::string, size_t> index_;
  uint64_t total_ = 0;
};

// One key of the merged summaries: its share of everything counted, as the
// middle of [lower, upper] with `error` half that width.
struct HotKeyReport {
  std::string key;
  std::string server;
  double share = 0;
  double error = 0;
};

// Merges the summaries of several workers and returns the keys whose share
// is at least `threshold` for certain (lower bound), most counted first, at
// most `limit` of them. `confidence_sigmas`: the counts are a random
// sample of the requests, so `error` also holds that many standard errors
// of the sample share.
std::vector<HotKeyReport> merge_hot_keys(const std::vector<HotKeySummary>& summaries,
                                         double threshold, size_t limit,
                                         double confidence_sigmas = 3.0);

}  // namespace memshard::proxy
