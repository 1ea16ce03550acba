// Paul Hsieh's SuperFastHash as twemproxy 0.5 computes it. Debian builds
// libhashkit without hsieh (libhashkit_has_algorithm says no and
// libhashkit_digest returns 1), so memshard has its own.
//
// twemproxy quirks kept on purpose: an empty key hashes to 0, and in the
// three-trailing-bytes case the last byte is read through a plain (signed on
// x86) char, so a byte >= 0x80 is sign-extended before the shift. Every other
// byte is read unsigned.
#include "ketama/hash_internal.h"

namespace memshard::ketama::detail {
namespace {

uint32_t little_endian_16(const unsigned char* p) {
  return static_cast<uint32_t>(p[0]) | (static_cast<uint32_t>(p[1]) << 8);
}

uint32_t sign_extended(unsigned char byte) {
  return static_cast<uint32_t>(static_cast<int32_t>(static_cast<signed char>(byte)));
}

}  // namespace

uint32_t hsieh(std::string_view key) {
  if (key.empty()) {
    return 0;
  }
  const auto* p = reinterpret_cast<const unsigned char*>(key.data());
  size_t blocks = key.size() / 4;
  size_t tail = key.size() % 4;

  uint32_t hash = 0;
  for (; blocks > 0; --blocks, p += 4) {
    hash += little_endian_16(p);
    uint32_t tmp = (little_endian_16(p + 2) << 11) ^ hash;
    hash = (hash << 16) ^ tmp;
    hash += hash >> 11;
  }

  switch (tail) {
    case 3:
      hash += little_endian_16(p);
      hash ^= hash << 16;
      hash ^= sign_extended(p[2]) << 18;
      hash += hash >> 11;
      break;
    case 2:
      hash += little_endian_16(p);
      hash ^= hash << 11;
      hash += hash >> 17;
      break;
    case 1:
      hash += p[0];
      hash ^= hash << 10;
      hash += hash >> 1;
      break;
    default:
      break;
  }

  // Final avalanche.
  hash ^= hash << 3;
  hash += hash >> 5;
  hash ^= hash << 4;
  hash += hash >> 17;
  hash ^= hash << 25;
  hash += hash >> 6;
  return hash;
}

}  // namespace memshard::ketama::detail
