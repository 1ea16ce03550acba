#include "ketama/reach.h"

#include <algorithm>

namespace memshard::ketama {

Reach reach(const Ring& ring, uint32_t hash_max) {
  Reach r;
  r.owned.assign(ring.servers().size(), 0);
  const uint64_t values = uint64_t{hash_max} + 1;
  if (is_mcrouter_distribution(ring.options().distribution)) {
    // Their hash is not the pool's key hash: every index is in reach.
    r.owned = ring.owned_hashes();
  } else if (ring.options().distribution == Distribution::ketama) {
    uint64_t start = 0;
    for (const Arc& arc : ring.arcs()) {
      if (start >= values) break;
      uint64_t end = std::min(uint64_t{arc.last} + 1, values);
      r.owned[arc.server] += end - start;
      start = uint64_t{arc.last} + 1;
    }
  } else {
    // Values v with v % L == p: one per full turn of the L slots, and one
    // more for the slots below the remainder. For random this is the
    // expectation (an even split over the slots).
    const std::vector<uint32_t>& slots = ring.slots();
    const uint64_t length = slots.size();
    for (uint64_t p = 0; p < length; ++p) {
      r.owned[slots[p]] += values / length + (p < values % length ? 1 : 0);
    }
  }
  r.servers = static_cast<size_t>(
      std::count_if(r.owned.begin(), r.owned.end(), [](uint64_t n) { return n > 0; }));
  if (ring.options().distribution == Distribution::random) {
    // The key is ignored: a pick can land on any slot, even past hash_max.
    r.servers = ring.slots().size();
  }
  return r;
}

Reach key_reach(const Ring& ring) {
  return reach(ring, hash_max(ring.key_hash_function()));
}

}  // namespace memshard::ketama
