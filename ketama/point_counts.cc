#include "ketama/point_counts.h"

#include <cmath>

namespace memshard::ketama::detail {
namespace {

// (float)weight / (float)total, with C's integer-to-float conversions.
float weight_fraction(uint64_t weight, uint64_t total_weight) {
  return static_cast<float>(weight) / static_cast<float>(total_weight);
}

}  // namespace

uint32_t twemproxy_points(uint32_t weight, uint64_t total_weight, uint32_t servers) {
  if (total_weight == 0) {
    return 0;
  }
  float pct = weight_fraction(weight, total_weight);
  // Evaluated left to right like the C expression: ((pct * 160) / 4) * N.
  float scaled = pct * 160.0f / 4.0f * static_cast<float>(servers);
  float nudged = static_cast<float>(static_cast<double>(scaled) + 0.0000000001);
  return static_cast<uint32_t>(std::floor(nudged)) * 4;
}

uint32_t libmemcached_weighted_points(uint32_t weight, uint64_t total_weight, uint32_t servers) {
  if (total_weight == 0) {
    return 0;
  }
  float pct = weight_fraction(weight, total_weight);
  float nudged = pct * 160.0f / 4.0f * static_cast<float>(servers) + 0.0000000001f;
  return static_cast<uint32_t>(std::floor(nudged)) * 4;
}

uint32_t libketama_digests(uint64_t weight, uint64_t total_weight, uint32_t servers) {
  if (total_weight == 0) {
    return 0;
  }
  float pct = weight_fraction(weight, total_weight);
  double product =
      static_cast<double>(pct) * 40.0 * static_cast<double>(static_cast<float>(servers));
  return static_cast<uint32_t>(std::floor(static_cast<float>(product)));
}

}  // namespace memshard::ketama::detail
