// memshard-load: a log-bucketed latency histogram (HDR-like: 32 linear
// sub-buckets per power of two, so a reported percentile is within ~3% of
// the true value). Values are nanoseconds.
#pragma once

#include <array>
#include <bit>
#include <cstdint>

namespace memshard::bench {

class Histogram {
 public:
  static constexpr int kSubBits = 5;
  static constexpr uint64_t kSub = 1ULL << kSubBits;  // 32
  static constexpr size_t kBuckets = 2 * kSub + (64 - kSubBits - 1) * kSub;

  void record(uint64_t v) {
    ++counts_[index(v)];
    ++total_;
    sum_ += v;
    if (v > max_) max_ = v;
  }
  void merge(const Histogram& o) {
    for (size_t i = 0; i < kBuckets; ++i) counts_[i] += o.counts_[i];
    total_ += o.total_;
    sum_ += o.sum_;
    if (o.max_ > max_) max_ = o.max_;
  }
  uint64_t total() const { return total_; }
  uint64_t max() const { return max_; }
  double mean() const {
    return total_ ? static_cast<double>(sum_) / static_cast<double>(total_) : 0.0;
  }

  // The value at quantile q (0..1): the midpoint of the bucket holding the
  // ceil(q * total)-th smallest sample; 0 when empty.
  uint64_t quantile(double q) const {
    if (total_ == 0) return 0;
    auto rank = static_cast<uint64_t>(q * static_cast<double>(total_));
    if (rank < 1) rank = 1;
    if (rank > total_) rank = total_;
    uint64_t seen = 0;
    for (size_t i = 0; i < kBuckets; ++i) {
      seen += counts_[i];
      if (seen >= rank) {
        uint64_t lo = low(i), hi = high(i);
        uint64_t mid = lo + (hi - lo) / 2;
        return mid > max_ ? max_ : mid;
      }
    }
    return max_;
  }

  static size_t index(uint64_t v) {
    if (v < 2 * kSub) return static_cast<size_t>(v);
    int e = 63 - std::countl_zero(v);             // >= kSubBits + 1
    uint64_t sub = (v >> (e - kSubBits)) - kSub;  // 0..kSub-1
    return static_cast<size_t>(2 * kSub + static_cast<uint64_t>(e - kSubBits - 1) * kSub + sub);
  }
  static uint64_t low(size_t i) {
    if (i < 2 * kSub) return i;
    uint64_t j = i - 2 * kSub;
    int e = static_cast<int>(j / kSub) + kSubBits + 1;
    uint64_t sub = j % kSub + kSub;
    return sub << (e - kSubBits);
  }
  static uint64_t high(size_t i) {
    if (i < 2 * kSub) return i;
    uint64_t j = i - 2 * kSub;
    int e = static_cast<int>(j / kSub) + kSubBits + 1;
    uint64_t sub = j % kSub + kSub;
    return ((sub + 1) << (e - kSubBits)) - 1;
  }

 private:
  std::array<uint64_t, kBuckets> counts_{};
  uint64_t total_ = 0;
  uint64_t sum_ = 0;
  uint64_t max_ = 0;
};

}  // namespace memshard::bench
