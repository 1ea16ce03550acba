// mcrouter's hash functions, which pick a server by its index in a pool's
// list from the key itself (no ring of points): Ch3 (furc_hash),
// WeightedCh3 (furc_hash, retried with salts until a SpookyHash of the key
// falls under the server's weight) and Crc32. Written from the algorithms
// of mcrouter/lib/fbi/hash.c, mcrouter/lib/WeightedCh3HashFunc.cpp and
// mcrouter/lib/Crc32HashFunc.h (MIT) and Bob Jenkins' SpookyHash V2 (public
// domain); tests/ketama/mcrouter_hash_test.cc checks them against
// mcrouter's own test vectors and placements made by mcrouter's code.
#pragma once

#include <cstddef>
#include <cstdint>
#include <span>
#include <string_view>

namespace memshard::ketama {

// furc_hash reaches every index below 2^23 (mcrouter's Ch3HashFunc and
// WeightedCh3HashFunc refuse larger pools).
inline constexpr uint32_t kFurcMaxPoolSize = uint32_t{1} << 23;

// MurmurHash64A (Austin Appleby), reading 8-byte words little-endian.
uint64_t murmur_hash_64a(std::string_view key, uint64_t seed);

// furc_hash(key, m): an index in [0, m), 0 when m <= 1. Consistent in m:
// growing m from m1 to m2 moves a key only to an index >= m1.
uint32_t furc_hash(std::string_view key, uint32_t m);

// SpookyHash V2's 32-bit hash (folly::hash::SpookyHashV2::Hash32): both
// 64-bit seeds set to `seed`, the low 32 bits of the first result.
uint32_t spooky_hash_v2_32(std::string_view data, uint32_t seed);

// mcrouter's WeightedCh3HashFunc: index = furc_hash(key, n); kept when
// SpookyHashV2_32(key, 0xface2014) < weights[index] * (2^32 - 1), else the
// key is tried again with a salt appended ("0", "1", ... "9", "01", "11":
// the attempt's number in decimal, lowest digit first), up to 32 attempts;
// after the last, its index stands. Weights lie in [0, 1]; n =
// weights.size() from 1 to kFurcMaxPoolSize.
size_t weighted_ch3(std::string_view key, std::span<const double> weights);

// mcrouter's Crc32HashFunc: the standard CRC-32 of the key (zlib's), its
// low 31 bits modulo n (n >= 1).
size_t mcrouter_crc32(std::string_view key, size_t n);

}  // namespace memshard::ketama
