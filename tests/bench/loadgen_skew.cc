#include "loadgen_skew.h"

#include <algorithm>
#include <cmath>

namespace memshard::bench {

namespace {

double unit(uint64_t r) {
  return static_cast<double>(r >> 11) / static_cast<double>(uint64_t{1} << 53);
}

}  // namespace

KeySkew::KeySkew(uint32_t keys, double zipf, double hot_share)
    : keys_(keys), hot_share_(hot_share) {
  if (zipf <= 0) return;
  cdf_.resize(keys);
  double sum = 0;
  for (uint32_t i = 0; i < keys; ++i) {
    sum += 1.0 / std::pow(static_cast<double>(i) + 1, zipf);
    cdf_[i] = sum;
  }
  for (double& c : cdf_) c /= sum;
}

uint32_t KeySkew::pick(uint64_t r1, uint64_t r2) const {
  if (hot_share_ > 0 && unit(r2) < hot_share_) return 0;
  if (cdf_.empty()) return static_cast<uint32_t>((r1 >> 24) % keys_);
  auto it = std::lower_bound(cdf_.begin(), cdf_.end(), unit(r1));
  return static_cast<uint32_t>(std::min<size_t>(it - cdf_.begin(), keys_ - 1));
}

}  // namespace memshard::bench
