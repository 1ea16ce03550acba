// A route's warm-up from another pool (conf: a route's warm_from and
// warm_ttl; docs/routing.md, "Warm-up from another pool"), as mcrouter's
// WarmUpRoute: the route's own target is the cold side, the pool named by
// warm_from the warm one.
//   - Reads go to the cold side. A key that misses there is looked up on
//     the warm side (a plain lookup: value and flags, nothing touched
//     there), and a hit is copied to the cold side with an add, so that a
//     value written there meanwhile is not overwritten.
//       get (and an mg that only reads): the copy's expiry is warm_ttl;
//         get answers the warm value at once and copies behind it, mg
//         waits for the copy and asks the cold side again, so that its
//         flags (a cas, a TTL) are the cold side's, as gets' are.
//       gets: the copy waits, then the cold side is asked again for the
//         cas.
//       gat, gats, an mg with T: the copy's expiry is the request's, then
//         the cold side is asked again (and touches it).
//     A multi-get looks up each key the cold side missed, all at once,
//     and answers in the client's key order with one END.
//   - Every other request (writes, deletes, touches, arithmetic) goes to
//     the route's target only: what the warm side holds is the client's
//     business, as in mcrouter. With zone copies, the cold side is the
//     first pool, and reads and copies go there alone while writes go to
//     every copy (mcrouter's two-level caching: a WarmUpRoute for reads
//     beside an AllSyncRoute for writes).
// Counted per route: warm_lookups, warm_hits, warm_copies.
#pragma once

#include <cstdint>

#include "proxy/routes/route.h"
#include "proxy/routes/work.h"
#include "proxy/support/stats.h"

namespace memshard::proxy {

// How the two routes of a warm-up from a pool are set up; everything
// pointed at outlives them (built with the routing pool's routes).
struct WarmFrom {
  SingleKeyRoute& cold_key;  // the cold side: reads and the copies
  SingleKeyRoute& writes;    // everything else: the cold side, or every zone copy
  SingleKeyRoute& warm_key;  // the warm pool's single-key route: the lookups
  int64_t ttl_s;             // warm_ttl: the copies' expiry, 0 for none
  RouteStats& counters;
  RouteLife* life;
};

class WarmFromKeyRoute final : public SingleKeyRoute {
 public:
  explicit WarmFromKeyRoute(const WarmFrom& from) : from_(from) {}
  void send(RouteRequest& req, ReplySlot& slot) override;
  void invalidate(RouteRequest& req, ReplySlot& slot) override {
    from_.writes.invalidate(req, slot);
  }

 private:
  Work read(RouteRequest& req, ReplySlot& client) const;
  WarmFrom from_;
};

// Classic retrievals (get, gets, gat, gats), any number of keys.
class WarmFromGetRoute final : public Route {
 public:
  // `cold_get`: the route's target for retrievals.
  WarmFromGetRoute(Route& cold_get, const WarmFrom& from) : cold_get_(cold_get), from_(from) {}
  void send(RouteRequest& req, ReplySlot& slot) override;

 private:
  Work read(RouteRequest& req, ReplySlot& client) const;
  Route& cold_get_;
  WarmFrom from_;
};

}  // namespace memshard::proxy
