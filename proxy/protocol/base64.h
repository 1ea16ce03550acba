// Base64 for the meta `b` flag.
#pragma once

#include <cstddef>
#include <string>
#include <string_view>

namespace memshard::proto {

// The decoder memcached 1.6 applies to a `b` key (base64.c), which is more
// lenient than RFC 4648. Verified against memcached 1.6.18:
//   - bytes outside the alphabet are skipped ("QU!FB" is the key "AAA");
//   - '=' counts as a zero sextet anywhere, and decoding stops after the
//     first 4-character group that holds one ("QQ==QUFB" is "A",
//     "Q=Q=" is "@");
//   - the pad bits need not be zero ("QR==" is "A").
// It fails when the alphabet characters (with '=') are none or not a
// multiple of four, or when a group holds three or four '='.
// Routing must hash the bytes the server stores, so the proxy decodes
// keys with these rules, not with the strict base64_decode().
bool memcached_base64_decode(std::string_view in, std::string& out);

// Decodes RFC 4648 base64, strictly: padding required, no stray bytes,
// zero pad bits. False on malformed input. memcached's own decoder accepts
// more, so the request parser routes `b` keys with the lenient
// memcached_base64_decode() above instead.
bool base64_decode(std::string_view in, std::string& out);

// Appends the RFC 4648 encoding of `in` (with '=' padding), which both
// decoders accept, to `out`.
void base64_encode(std::string_view in, std::string& out);

// Length of base64_encode()'s output for `n` input bytes.
constexpr size_t base64_encoded_length(size_t n) {
  return (n + 2) / 3 * 4;
}

}  // namespace memshard::proto
