// What a ring, or a change from one ring to another, means for the keyspace.
// Exact: computed from the point lists (merge of two sorted continua), never
// by sampling keys. modula is exact too (residue arithmetic, see
// analysis.cc); `random` ignores the key, so for it the numbers are the
// expected fractions of requests. ch3, wch3 and crc32 (mcrouter's hashes)
// have no ring of values: their shares are expectations (owned_hashes())
// and a diff with one of them is sampled over keys.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "ketama/ring.h"

namespace memshard::ketama {

struct ServerShare {
  std::string address;  // ServerEntry::address()
  std::string ring_name;
  uint32_t weight;
  size_t points;
  double share;  // owned hashes / 2^32
};

struct RingReport {
  std::vector<ServerShare> servers;  // in config order
  // Coefficient of variation of the shares of the live servers (population
  // standard deviation / mean); 0 when none is live. About 1/sqrt(points)
  // for equal weights: 7.9% at 160 points per server.
  double share_cv;
};
RingReport describe(const Ring& ring);

struct ServerMove {
  std::string address;  // servers are matched across rings by address
  double gained;        // fraction of the keyspace that moves onto it
  double lost;          // fraction that moves away from it
  bool only_in_old = false;
  bool only_in_new = false;
};

struct RingDiff {
  // Fraction of the 2^32 keyspace whose owner changes: 1 from or to a ring
  // with no live server, 0 between two such rings (no key has an owner).
  double moved;
  // False when the two rings hash keys differently (hash function or
  // hash_tag): every key then lands at a new point, no point-by-point
  // comparison exists, and the figures are the expectation for keys whose
  // two hashes are independent (a key stays with probability
  // share_before(s) * share_after(s) summed over the servers s).
  bool exact = true;
  // Not 0 when either ring is ch3, wch3 or crc32, whose placement has no
  // ring to compare: the figures come from this many sample keys looked up
  // on both (exact is false).
  size_t sampled_keys = 0;
  std::vector<ServerMove> servers;  // union of both, old config order then new ones
};
RingDiff diff(const Ring& before, const Ring& after);

}  // namespace memshard::ketama
