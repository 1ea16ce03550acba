// How many continuum points a server gets, computed with exactly the
// floating-point operations of each original. The float rounding is part of
// the compatibility contract: e.g. 25 equal servers get 156 points each, not
// 160, and a server with a tiny weight share gets none. Do not "fix" these.
#pragma once

#include <cstdint>

namespace memshard::ketama::detail {

// twemproxy 0.5 ketama_update():
//   pct = (float)w / (float)W
//   floorf((float)(pct * 160 / 4 * (float)N + 0.0000000001)) * 4
// All in float except the final addition, which C does in double because the
// constant is a double literal.
uint32_t twemproxy_points(uint32_t weight, uint64_t total_weight, uint32_t servers);

// libmemcached 1.1 update_continuum(), weighted ketama: the same expression,
// but the constant is 0.0000000001F, so everything stays in float.
uint32_t libmemcached_weighted_points(uint32_t weight, uint64_t total_weight, uint32_t servers);

// last.fm libketama ketama_create_continuum(): the number of MD5 digests (4
// points each) is floorf(pct * 40.0 * (float)N). 40.0 is a double, so the
// product is computed in double and converted to float by floorf's parameter.
uint32_t libketama_digests(uint64_t weight, uint64_t total_weight, uint32_t servers);

}  // namespace memshard::ketama::detail
