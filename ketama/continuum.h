// Building the sorted point list (the continuum) the way each original does.
#pragma once

#include <string>
#include <vector>

#include "ketama/ring_types.h"

namespace memshard::ketama::detail {

struct Continuum {
  // Ascending by value. Among equal values the one the original would find
  // first comes first, so a lower-bound search picks the right owner.
  std::vector<Point> points;
  std::vector<size_t> point_counts;  // per server, in build() order
};

// `names[i]` is ring_name_for(mode, servers[i]); `live[i]` tells whether
// server i takes part.
Continuum build_continuum(const std::vector<ServerEntry>& servers,
                          const std::vector<std::string>& names, const std::vector<bool>& live,
                          const RingOptions& options);

// The twemproxy point string "<name>-<k>" as ketama_update() hashes it: it is
// printed into a 273-byte buffer (KETAMA_MAX_HOSTLEN) and cut to 272
// characters when longer, see continuum.cc.
std::string twemproxy_point_string(const std::string& name, uint32_t k);

// Servers in twemproxy's order: sorted by name, shorter names first, then
// byte order (twemproxy's string_compare); equal names by build() order.
std::vector<uint32_t> twemproxy_order(const std::vector<std::string>& names);

}  // namespace memshard::ketama::detail
