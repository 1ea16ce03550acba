#include "ketama/sampled_load.h"

#include <algorithm>
#include <cmath>

namespace memshard::ketama {

SampledLoad sampled_load(const Ring& ring, const std::vector<std::string>& keys) {
  SampledLoad load;
  load.keys.assign(ring.servers().size(), 0);
  for (const std::string& k : keys) {
    size_t s = ring.lookup(k);
    if (s != Ring::npos) ++load.keys[s];
  }
  double sum = 0, highest = 0;
  size_t live = 0;
  for (size_t i = 0; i < load.keys.size(); ++i) {
    if (!ring.is_live(i)) continue;
    sum += static_cast<double>(load.keys[i]);
    highest = std::max(highest, static_cast<double>(load.keys[i]));
    ++live;
  }
  if (live == 0 || sum == 0) return load;
  double mean = sum / static_cast<double>(live);
  double squares = 0;
  for (size_t i = 0; i < load.keys.size(); ++i) {
    if (!ring.is_live(i)) continue;
    double d = static_cast<double>(load.keys[i]) - mean;
    squares += d * d;
  }
  load.cv = std::sqrt(squares / static_cast<double>(live)) / mean;
  load.max_over_mean = highest / mean;
  return load;
}

}  // namespace memshard::ketama
