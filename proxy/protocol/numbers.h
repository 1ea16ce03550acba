// Number parsing exactly as memcached's text protocol does it.
//
// memcached reads numeric arguments with strtol/strtoul/strtoull (base 10)
// wrapped in its safe_strto* helpers (util.c). Those accept more than plain
// digits and silently narrow to 32 bits, and clients can observe it:
//   "set k 0 0 4294967297" stores a 1-byte value (1.6.18 answers STORED),
//   "set k 0 0 \t2" and "set k 0 0 2\tzz" are accepted, "+2" too,
//   "set k -1 0 2" is rejected (negative flags), "set k -0 0 2" is not.
// To answer like the server, the proxy reproduces these rules.
#pragma once

#include <charconv>
#include <cstdint>
#include <string>
#include <string_view>
#include <type_traits>

namespace memshard::proto {

// isspace() in the C locale, which memcached runs in.
constexpr bool is_c_space(char c) {
  return c == ' ' || c == '\t' || c == '\n' || c == '\v' || c == '\f' || c == '\r';
}

// safe_strtol: strtol over a 64-bit long, then truncated to 32 bits.
bool parse_mc_int32(std::string_view token, int32_t& out);
// safe_strtoul: strtoul over a 64-bit long, negatives refused, truncated to 32 bits.
bool parse_mc_uint32(std::string_view token, uint32_t& out);
// safe_strtoull: strtoull, negatives refused.
bool parse_mc_uint64(std::string_view token, uint64_t& out);

// Appends `value` in decimal, as request lines write numbers.
template <typename Int>
void append_decimal(std::string& out, Int value) {
  static_assert(std::is_integral_v<Int>);
  char buffer[24];
  const auto [end, ec] = std::to_chars(buffer, buffer + sizeof buffer, value);
  (void)ec;  // 24 bytes hold every 64-bit number
  out.append(buffer, end);
}

// Appends " <letter><value>", a meta flag with its argument.
template <typename Int>
void append_meta_flag(std::string& out, char letter, Int value) {
  out.push_back(' ');
  out.push_back(letter);
  append_decimal(out, value);
}

}  // namespace memshard::proto
