#include "proxy/protocol/numbers.h"

#include <limits>

namespace memshard::proto {
namespace {

// What strtol-family functions see in a token: leading C spaces, an
// optional sign, then decimal digits. `valid` is false when no digit was
// read (memcached: str == endptr) or when the character after the digits is
// neither the end of the token nor a space (memcached's endptr check).
struct Scanned {
  bool valid = false;
  bool negative = false;
  bool overflow = false;  // magnitude does not fit in 64 bits
  uint64_t magnitude = 0;
};

Scanned scan_decimal(std::string_view token) {
  Scanned s;
  size_t i = 0;
  while (i < token.size() && is_c_space(token[i])) ++i;
  if (i < token.size() && (token[i] == '+' || token[i] == '-')) {
    s.negative = token[i] == '-';
    ++i;
  }
  const size_t digits_start = i;
  constexpr uint64_t kMax = std::numeric_limits<uint64_t>::max();
  for (; i < token.size() && token[i] >= '0' && token[i] <= '9'; ++i) {
    const auto digit = static_cast<uint64_t>(token[i] - '0');
    if (s.magnitude > (kMax - digit) / 10) s.overflow = true;
    if (!s.overflow) s.magnitude = s.magnitude * 10 + digit;
  }
  if (i == digits_start) return s;
  s.valid = i == token.size() || is_c_space(token[i]);
  return s;
}

// strtoul/strtoull: a "negative" number wraps around; safe_strtoul(l) then
// refuses results that look negative as signed when the token has a '-'
// anywhere (so "-0" and "-18446744073709551615" == 1 pass).
bool unsigned_result(std::string_view token, uint64_t& out) {
  const Scanned s = scan_decimal(token);
  if (!s.valid || s.overflow) return false;
  const uint64_t value = s.negative ? 0 - s.magnitude : s.magnitude;
  if (static_cast<int64_t>(value) < 0 && token.find('-') != std::string_view::npos) return false;
  out = value;
  return true;
}

}  // namespace

bool parse_mc_int32(std::string_view token, int32_t& out) {
  const Scanned s = scan_decimal(token);
  if (!s.valid || s.overflow) return false;
  // strtol's range is that of a 64-bit long; outside it, ERANGE.
  constexpr uint64_t kLongMax = std::numeric_limits<int64_t>::max();
  if (s.magnitude > kLongMax + (s.negative ? 1 : 0)) return false;
  const uint64_t as_unsigned = s.negative ? 0 - s.magnitude : s.magnitude;
  // memcached stores the long into an int32_t: keep the low 32 bits.
  out = static_cast<int32_t>(static_cast<uint32_t>(as_unsigned));
  return true;
}

bool parse_mc_uint32(std::string_view token, uint32_t& out) {
  uint64_t value = 0;
  if (!unsigned_result(token, value)) return false;
  out = static_cast<uint32_t>(value);
  return true;
}

bool parse_mc_uint64(std::string_view token, uint64_t& out) {
  return unsigned_result(token, out);
}

}  // namespace memshard::proto
