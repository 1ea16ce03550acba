// What a ring, or a change from one ring to another, means for the keyspace.
// Exact: computed from the point lists (merge of two sorted continua), never
// by sampling keys.
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
  double share_cv;                   // coefficient of variation of the shares
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
  double moved;                     // fraction of the 2^32 keyspace whose owner changes
  std::vector<ServerMove> servers;  // union of both, old config order then new ones
};
RingDiff diff(const Ring& before, const Ring& after);

}  // namespace memshard::ketama
