// Rewriting what a request sets an item's expiry to: capped for a gutter
// pool (docs/failures.md, "Gutter": the keys of a server that is down are
// kept there for gutter_ttl seconds at most, so that a value written
// meanwhile does not outlive the server's return by long) and for a pool
// with ttl_max, or replaced for a pool with ttl_set (mcrouter's
// ModifyExptimeRoute, actions min and set). One mechanism for all three.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

#include "proxy/protocol/request.h"

namespace memshard::proto {

// The expiry memcached would give an item for `exptime` (negative: already
// expired; 0: never; up to 30 days: seconds from now; beyond: a unix
// time), at most `cap` seconds from `now_unix`, as a relative exptime.
int64_t capped_exptime(int64_t exptime, uint32_t cap, int64_t now_unix);

// What a pool does to the expiries requests set on it.
struct ExpiryRule {
  enum class Kind : uint8_t {
    none,
    cap,  // at most `seconds` (capped_exptime): gutter_ttl, ttl_max
    set,  // exactly `seconds`, whatever was asked (0: never): ttl_set
  };
  Kind kind = Kind::none;
  uint32_t seconds = 0;

  static ExpiryRule cap_at(uint32_t s) { return {Kind::cap, s}; }
  static ExpiryRule set_to(uint32_t s) { return {Kind::set, s}; }
  bool changes() const { return kind != Kind::none; }
  bool operator==(const ExpiryRule&) const = default;
};

// The exptime a request under `rule` sets instead of `exptime`.
int64_t rewritten_exptime(int64_t exptime, ExpiryRule rule, int64_t now_unix);

// `line` (a request line without its terminator, parsed into `r`) with
// every expiry it sets rewritten by `rule` (rewritten_exptime): a classic
// storage command's or touch's exptime, gat's, meta T and N. A storage
// request that sets none (ms without T) gets T<seconds>. nullopt when the
// line sets no expiry at all (a get, a delete, an incr, append and prepend,
// whose exptime memcached ignores), and goes as it is; under `set`, an md
// also goes as it is (mcrouter's ModifyExptimeRoute leaves deletes alone).
std::optional<std::string> rewrite_expiry(const Request& r, std::string_view line, ExpiryRule rule,
                                          int64_t now_unix);

// rewrite_expiry with ExpiryRule::cap_at(cap).
inline std::optional<std::string> cap_expiry(const Request& r, std::string_view line, uint32_t cap,
                                             int64_t now_unix) {
  return rewrite_expiry(r, line, ExpiryRule::cap_at(cap), now_unix);
}

}  // namespace memshard::proto
