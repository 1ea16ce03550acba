#include "loadgen_value.h"

#include <algorithm>
#include <cstring>

namespace memshard::bench {

namespace {
constexpr size_t kSpan = 65536;  // distinct start offsets in the base buffer
}

uint64_t fnv1a64(std::string_view s) {
  uint64_t h = 0xcbf29ce484222325ULL;
  for (char c : s) {
    h ^= static_cast<unsigned char>(c);
    h *= 0x100000001b3ULL;
  }
  return h;
}

uint64_t mix64(uint64_t x) {  // splitmix64's finalizer
  x += 0x9e3779b97f4a7c15ULL;
  x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ULL;
  x = (x ^ (x >> 27)) * 0x94d049bb133111ebULL;
  return x ^ (x >> 31);
}

ValuePattern::ValuePattern(uint64_t seed, size_t max_size)
    : seed_(seed), max_size_(max_size), base_(kSpan + max_size) {
  static constexpr char kAlphabet[] =
      "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
  uint64_t state = mix64(seed ^ 0x5eedULL);
  for (size_t i = 0; i < base_.size(); i += 8) {
    state = mix64(state);
    uint64_t r = state;
    for (size_t j = 0; j < 8 && i + j < base_.size(); ++j) {
      base_[i + j] = kAlphabet[r & 63];
      r >>= 8;
    }
  }
}

size_t ValuePattern::offset(std::string_view key, size_t size) const {
  return mix64(fnv1a64(key) ^ mix64(seed_) ^ (static_cast<uint64_t>(size) << 40)) % kSpan;
}

uint32_t ValuePattern::flags(std::string_view key) const {
  return static_cast<uint32_t>(mix64(fnv1a64(key)) &
                               0xffff);  // the key's only: a wrong seed shows in the bytes
}

void ValuePattern::fill(std::string_view key, size_t size, char* out) const {
  size_t head = std::min(size, key.size());
  std::memcpy(out, key.data(), head);
  size_t pos = head;
  if (pos < size) out[pos++] = '|';
  if (pos < size) std::memcpy(out + pos, base_.data() + offset(key, size) + pos, size - pos);
}

bool ValuePattern::check(std::string_view key, const char* data, size_t size) const {
  if (size > max_size_) return false;
  size_t head = std::min(size, key.size());
  if (std::memcmp(data, key.data(), head) != 0) return false;
  size_t pos = head;
  if (pos < size && data[pos++] != '|') return false;
  return pos >= size ||
         std::memcmp(data + pos, base_.data() + offset(key, size) + pos, size - pos) == 0;
}

size_t ValuePattern::first_difference(std::string_view key, const char* data, size_t size) const {
  if (size > max_size_) return 0;
  std::vector<char> want(size);
  fill(key, size, want.data());
  for (size_t i = 0; i < size; ++i)
    if (want[i] != data[i]) return i;
  return size;
}

}  // namespace memshard::bench
