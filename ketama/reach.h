// Which servers keys can reach at all when the key hash covers only part
// of the 2^32 values a ring is laid out over (hash_max(), hash.h): a ketama
// key then goes only to the owners of the points below that range, a
// modula key only to the slots below it. Pure arithmetic on the ring.
#pragma once

#include <cstdint>
#include <vector>

#include "ketama/ring.h"

namespace memshard::ketama {

struct Reach {
  // How many of the hash values 0..hash_max each server owns (index =
  // server): where keys go, if the hash spreads them evenly over its range.
  std::vector<uint64_t> owned;
  size_t servers = 0;  // live servers that own at least one of those values
};

// For `random`, which ignores the key, every live server is reachable and
// `owned` is the expected split. So for ch3, wch3 and crc32, which hash
// keys with their own function whatever `hash_max` says: owned_hashes().
Reach reach(const Ring& ring, uint32_t hash_max);

// reach() for the range of the function the ring hashes keys with.
Reach key_reach(const Ring& ring);

}  // namespace memshard::ketama
