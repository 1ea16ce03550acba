// A retrieval (get, gets, gat, gats) whose keys go to different routes:
// the pools of a routing pool's prefixes, or a pool's live servers and its
// gutter. Each route gets one retrieval of its own keys, and their answers
// are merged in the client's key order with one END, as a split
// multi-get's are: a route that fails makes its keys misses (a miss is
// always safe), unless every route failed, when the client gets the error.
#pragma once

#include <cstdint>
#include <span>

#include "proxy/routes/route.h"
#include "proxy/support/stats.h"

namespace memshard::proxy {

// `group_of[i]`: the index in `routes` of the route of req's key i.
// `counters` (empty, or one per route, each may be null): the route's
// hits, misses and errors, counted as its answer is merged. When every key
// has one route, that route takes the request as it is (no copy), and the
// caller counts its reply.
// `life`: what the requests held meanwhile keep alive (may be null).
void send_grouped(RouteRequest& req, ReplySlot& slot, std::span<Route* const> routes,
                  std::span<const uint32_t> group_of, std::span<RouteStats* const> counters,
                  RouteLife* life);

}  // namespace memshard::proxy
