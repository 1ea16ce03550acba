// memshard-openloop: a log-linear latency histogram in the manner of
// HdrHistogram (Debian packages no C or C++ build of it). Values are
// nanoseconds. Below 2^sub_bits every value has a bucket of its own; above,
// each power of two [2^e, 2^(e+1)) is cut into 2^sub_bits equal buckets, so a
// bucket is 2^-sub_bits of its values wide: at the default 11 bits, 1/2048,
// which keeps every reported percentile within 0.05% of a recorded value
// (3 significant digits). Values at or above 2^max_bits share the last
// bucket; the maximum is kept exactly.
#pragma once

#include <algorithm>
#include <bit>
#include <cstddef>
#include <cstdint>
#include <vector>

namespace memshard::bench {

class LatencyHistogram {
 public:
  // sub_bits 11: 3 significant digits; max_bits 40: 2^40 ns, about 18 minutes.
  explicit LatencyHistogram(int sub_bits = 11, int max_bits = 40)
      : sub_bits_(sub_bits),
        max_bits_(max_bits),
        counts_(static_cast<size_t>(max_bits - sub_bits + 1) << sub_bits) {}

  int sub_bits() const { return sub_bits_; }
  size_t buckets() const { return counts_.size(); }

  void record(uint64_t v) { record_n(v, 1); }
  void record_n(uint64_t v, uint64_t n) {
    if (n == 0) return;
    counts_[index(v)] += n;
    if (total_ == 0 || v < min_) min_ = v;
    if (v > max_) max_ = v;
    total_ += n;
    sum_ += static_cast<double>(v) * static_cast<double>(n);
  }
  // Adds another histogram's counts: it must have the same sub_bits and
  // max_bits (returns false, adding nothing, otherwise).
  bool merge(const LatencyHistogram& o) {
    if (o.sub_bits_ != sub_bits_ || o.max_bits_ != max_bits_) return false;
    if (o.total_ == 0) return true;
    for (size_t i = 0; i < counts_.size(); ++i) counts_[i] += o.counts_[i];
    if (total_ == 0 || o.min_ < min_) min_ = o.min_;
    if (o.max_ > max_) max_ = o.max_;
    total_ += o.total_;
    sum_ += o.sum_;
    return true;
  }
  void reset() {
    std::fill(counts_.begin(), counts_.end(), 0);
    total_ = min_ = max_ = 0;
    sum_ = 0;
  }

  uint64_t count() const { return total_; }
  uint64_t max() const { return max_; }
  uint64_t min() const { return min_; }
  double mean() const { return total_ ? sum_ / static_cast<double>(total_) : 0.0; }

  // The value at percentile p (0 to 100): the highest value of the bucket
  // that holds the sample of rank ceil(p% of the count) (at least the
  // first), as HdrHistogram reports it, but never above the maximum; 0 when
  // empty. percentile(100) is the maximum.
  uint64_t percentile(double p) const {
    if (total_ == 0) return 0;
    if (p >= 100.0) return max_;
    double want = p / 100.0 * static_cast<double>(total_);
    want -= want * 1e-12;  // 99.9% of 1,000 is rank 999, not 1,000 by a rounding error
    auto rank = static_cast<uint64_t>(want);
    if (static_cast<double>(rank) < want) ++rank;
    if (rank < 1) rank = 1;
    if (rank > total_) rank = total_;
    uint64_t seen = 0;
    for (size_t i = 0; i < counts_.size(); ++i) {
      seen += counts_[i];
      if (seen >= rank) {
        uint64_t hi = highest(i);
        if (hi > max_) hi = max_;
        if (hi < min_) hi = min_;
        return hi;
      }
    }
    return max_;
  }

  // The bucket of a value, and the lowest and highest values a bucket holds.
  size_t index(uint64_t v) const {
    const uint64_t sub = uint64_t{1} << sub_bits_;
    if (v < sub) return static_cast<size_t>(v);
    int e = 63 - std::countl_zero(v);  // >= sub_bits
    if (e >= max_bits_) return counts_.size() - 1;
    uint64_t within = (v >> (e - sub_bits_)) - sub;  // 0 .. sub-1
    return static_cast<size_t>(sub + (static_cast<uint64_t>(e - sub_bits_) << sub_bits_) + within);
  }
  uint64_t lowest(size_t i) const {
    const uint64_t sub = uint64_t{1} << sub_bits_;
    if (i < sub) return i;
    uint64_t j = i - sub;
    int e = static_cast<int>(j >> sub_bits_) + sub_bits_;
    uint64_t within = (j & (sub - 1)) + sub;
    return within << (e - sub_bits_);
  }
  uint64_t highest(size_t i) const {
    const uint64_t sub = uint64_t{1} << sub_bits_;
    if (i < sub) return i;
    if (i == counts_.size() - 1) return UINT64_MAX;
    uint64_t j = i - sub;
    int e = static_cast<int>(j >> sub_bits_) + sub_bits_;
    uint64_t within = (j & (sub - 1)) + sub;
    return ((within + 1) << (e - sub_bits_)) - 1;
  }

 private:
  int sub_bits_;
  int max_bits_;
  std::vector<uint64_t> counts_;
  uint64_t total_ = 0;
  uint64_t min_ = 0;
  uint64_t max_ = 0;
  double sum_ = 0;
};

}  // namespace memshard::bench
