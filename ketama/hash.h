// Key hash functions, by the names twemproxy's `hash:` directive accepts.
//
// Every function returns exactly the 32-bit value twemproxy 0.5 computes for
// the same bytes (bytes >= 0x80 included: twemproxy reads keys as signed char
// on x86), because a different value would send keys to a different server
// than the fleet's previous proxy or clients did.
#pragma once

#include <cstdint>
#include <optional>
#include <string_view>

namespace memshard::ketama {

enum class HashFunction {
  one_at_a_time,
  md5,
  crc16,
  crc32,
  crc32a,
  fnv1_64,
  fnv1a_64,
  fnv1_32,
  fnv1a_32,
  hsieh,
  murmur,
  jenkins,
};

// The hash of `key` with function `f`.
uint32_t hash(HashFunction f, std::string_view key);

// The largest value `f` can return: 2^32-1 for every function but crc32,
// whose result is (crc >> 16) & 0x7fff in twemproxy and libmemcached, so
// 32767. A ring whose points reach above this is partly out of the keys'
// reach (see reach.h). Checked against the functions in hash_test.cc.
uint32_t hash_max(HashFunction f);

// twemproxy's spelling of the function ("fnv1a_64"), and back.
std::string_view hash_name(HashFunction f);
std::optional<HashFunction> parse_hash_name(std::string_view name);

// All functions, in twemproxy's documented order (for help texts and tests).
inline constexpr HashFunction kAllHashFunctions[] = {
    HashFunction::one_at_a_time, HashFunction::md5,     HashFunction::crc16,
    HashFunction::crc32,         HashFunction::crc32a,  HashFunction::fnv1_64,
    HashFunction::fnv1a_64,      HashFunction::fnv1_32, HashFunction::fnv1a_32,
    HashFunction::hsieh,         HashFunction::murmur,  HashFunction::jenkins,
};

// The 16-byte MD5 digest of `data` (OpenSSL's libcrypto does the work).
void md5_digest(std::string_view data, unsigned char out[16]);

}  // namespace memshard::ketama
