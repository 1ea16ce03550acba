// Capping what a request sets an item's expiry to, for a gutter pool
// (docs/failures.md, "Gutter"): the keys of a server that is down are
// kept there for gutter_ttl seconds at most, so that a value written
// meanwhile does not outlive the server's return by long.
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

// `line` (a request line without its terminator, parsed into `r`) with
// every expiry it sets capped (capped_exptime): a classic storage
// command's or touch's exptime, gat's, meta T and N. A storage request
// that sets none (ms without T) gets T<cap>. nullopt when the line sets no
// expiry at all (a get, a delete, an incr), and goes as it is.
std::optional<std::string> cap_expiry(const Request& r, std::string_view line, uint32_t cap,
                                      int64_t now_unix);

}  // namespace memshard::proto
