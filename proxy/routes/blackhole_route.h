// A route that answers every request itself and sends nothing anywhere
// (conf: a route's `blackhole: true`; docs/routing.md, "Blackhole
// routes"): mcrouter's NullRoute (and DevNullRoute, the same to a client).
// Its reply is NullRoute's default reply per operation: a write that stores
// (set, add, replace, append, prepend, cas, ms) is not stored; everything
// else is not found: a retrieval misses (END, EN), a delete, an
// arithmetic or a touch finds nothing (NOT_FOUND, NF). Meta replies return
// the O, k and b flags the request asked for, as memcached's do; noreply
// and meta q are silent where memcached would be. Counted per route
// (`blackholed`).
#pragma once

#include "proxy/routes/route.h"
#include "proxy/support/stats.h"

namespace memshard::proxy {

class BlackholeRoute final : public SingleKeyRoute {
 public:
  explicit BlackholeRoute(RouteStats& counters) : counters_(counters) {}
  void send(RouteRequest& req, ReplySlot& slot) override;
  // Nothing is stored anywhere: nothing to delete.
  void invalidate(RouteRequest&, ReplySlot& slot) override { slot.answer({}); }

 private:
  RouteStats& counters_;
};

}  // namespace memshard::proxy
