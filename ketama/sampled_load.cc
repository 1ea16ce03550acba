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

  const std::vector<uint64_t> owned = ring.owned_hashes();
  const double n = static_cast<double>(keys.size());
  double off = 0, noise = 0;
  size_t owners = 0;
  for (size_t i = 0; i < owned.size(); ++i) {
    if (!ring.is_live(i) || owned[i] == 0) continue;
    const double p = static_cast<double>(owned[i]) / 4294967296.0;
    const double d = static_cast<double>(load.keys[i]) / n / p - 1;
    off += d * d;
    noise += (1 - p) / (n * p);
    ++owners;
  }
  if (owners > 0) {
    load.off_keyspace = std::sqrt(off / static_cast<double>(owners));
    load.sampling_noise = std::sqrt(noise / static_cast<double>(owners));
  }
  return load;
}

}  // namespace memshard::ketama
