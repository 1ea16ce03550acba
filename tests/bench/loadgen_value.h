// memshard-load: verifiable values. The value stored under a key is a pure
// function of (seed, key, size): whoever wrote it (the pre-population, or any
// connection's set during the run) wrote the same bytes, so every VALUE read
// back can be checked byte for byte even while sets race with gets.
//
// Layout of a value of `size` bytes for key K: "K|" (cut to size), then
// bytes of a seed-dependent pseudo-random printable buffer, starting at an
// offset derived from (seed, K, size). Checking is a memcmp.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string_view>
#include <vector>

namespace memshard::bench {

class ValuePattern {
 public:
  ValuePattern(uint64_t seed, size_t max_size);

  // Writes the value of `key` (size bytes) to out.
  void fill(std::string_view key, size_t size, char* out) const;
  // True when data[0..size) is exactly the value of `key` at this size.
  bool check(std::string_view key, const char* data, size_t size) const;
  // Client flags stored with the key (16 bits, from the key alone; checked on read).
  uint32_t flags(std::string_view key) const;
  // Index of the first byte that differs from the expected value (size when none).
  size_t first_difference(std::string_view key, const char* data, size_t size) const;

  uint64_t seed() const { return seed_; }

 private:
  size_t offset(std::string_view key, size_t size) const;

  uint64_t seed_;
  size_t max_size_;
  std::vector<char> base_;
};

uint64_t fnv1a64(std::string_view s);
uint64_t mix64(uint64_t x);

}  // namespace memshard::bench
