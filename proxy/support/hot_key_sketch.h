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

  // Counts `key` once; the counter returned has an empty server when the
  // key has just taken it (the caller says where the key goes).
  HotKeyCounter& add(std::string_view key);
  // The same, naming the server at once (tests).
  void add(std::string_view key, std::string_view server) {
    HotKeyCounter& c = add(key);
    if (c.server.empty()) c.server.assign(server);
  }
  // Halves every count: older traffic weighs less, so a key that cooled
  // down leaves the summary. Keeps the bounds (they halve with the counts).
  void halve();
  HotKeySummary summary() const;
  uint64_t total() const { return total_; }
  size_t size() const { return counters_.size(); }

 private:
  uint32_t min_count() const;  // by a scan: for readers
  // The least count and how many counters have it, kept as counts change,
  // so that taking the least counted counter rarely needs a scan.
  void refresh_min();
  void left_min(uint32_t old_count);
  // The index: open addressing with linear probing over the keys' 64-bit
  // hashes (two keys with one hash share a counter: 1 in 2^64). No
  // allocation per key counted, unlike a map of strings.
  size_t slot_of(uint64_t hash) const;  // its slot, or the empty one it would take
  void index_insert(uint64_t hash, uint32_t counter);
  void index_erase(uint64_t hash);
  void rebuild_index();

  size_t capacity_;
  std::vector<HotKeyCounter> counters_;
  std::vector<uint32_t> counts_;  // counters_[i].count, contiguous for a vectorised min scan
  std::vector<uint64_t> hashes_;  // counters_[i]'s key hash
  std::vector<uint64_t> slot_hash_;
  std::vector<int32_t> slot_counter_;  // -1: empty
  size_t mask_;
  uint32_t min_value_ = 0;
  size_t at_min_ = 0;
  size_t cursor_ = 0;  // where the search for a least counted counter resumes
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
