// memshard-load: which key a get names. Uniform by default; --zipf S draws
// key i with probability proportional to 1/(i+1)^S; --hot-share X sends a
// fraction X of gets to key 0 (the rest as otherwise), the shape of one
// celebrity key. Sets stay uniform, so a hot key is mostly read.
#pragma once

#include <cstdint>
#include <vector>

namespace memshard::bench {

class KeySkew {
 public:
  KeySkew(uint32_t keys, double zipf, double hot_share);
  // The key of a get, from two independent random words.
  uint32_t pick(uint64_t r1, uint64_t r2) const;

 private:
  uint32_t keys_;
  double hot_share_;
  std::vector<double> cdf_;  // zipf: cumulative probability per key
};

}  // namespace memshard::bench
