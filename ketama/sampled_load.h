// How a sample of real keys spreads over a ring's servers. Unlike the
// exact keyspace shares of describe() (analysis.h), this shows what the
// key hash does with keys that are alike, e.g. `user:1`, `user:2`, ...:
// a hash that moves little between such keys clusters them.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "ketama/ring.h"

namespace memshard::ketama {

struct SampledLoad {
  std::vector<uint64_t> keys;  // keys per server (index = server)
  // Over the live servers: population standard deviation / mean of their
  // key counts, and the largest count / mean; 0 when nothing was sampled.
  double cv = 0;
  double max_over_mean = 0;
  // How far the sample strays from the ring's exact keyspace shares (root
  // mean square of sampled share / keyspace share - 1 over the servers
  // that own any): what the key hash adds to the ring's own imbalance.
  // A hash that spreads the keys like random values gives about
  // `sampling_noise`, the same figure expected from chance alone
  // (sqrt((1 - p) / (n p)) per server, n keys, p its share); clustering
  // keys, or a range too short for the ring (crc32), give far more.
  double off_keyspace = 0;
  double sampling_noise = 0;
};

SampledLoad sampled_load(const Ring& ring, const std::vector<std::string>& keys);

}  // namespace memshard::ketama
