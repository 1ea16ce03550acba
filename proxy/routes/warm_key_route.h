// Single-key requests during a reload's warm-up window (reload_warmup),
// for keys that moved in a reload still inside its window:
//   reads (mg without a touch or vivify, me) go to the pool's own route
//     and, on a miss, to the servers that held the key before, newest
//     config first, as the client wrote them; the first hit is the answer,
//     copied to the key's current servers when it holds the value, its
//     flags and its TTL (a binary client's get asks for them; an mg
//     without them is answered, not copied); a key the guard holds
//     poisoned gets no fallback;
//   every other request (a write, a delete, a touch, an arithmetic) goes
//     to the pool's route and deletes the key on those old servers at
//     once; the client's reply, the pool route's, waits for the deletes,
//     so that once it is answered no fallback read can find the value the
//     write replaced. A delete an old server could not take (down, timed
//     out) leaves the key without fallback until the window ends
//     (warm_guard.h: poisoned).
// Keys that did not move, and every key once the window ended, go straight
// to the pool's route. While a scheduled switch waits, the servers a key
// will move to are asked and deleted on as old ones are, first, but what
// they hold is never copied (past_placement.h).
#pragma once

#include <array>

#include "proxy/routes/past_placement.h"
#include "proxy/routes/route.h"
#include "proxy/routes/warm_guard.h"
#include "proxy/routes/work.h"

namespace memshard::proxy {

class WarmKeyRoute final : public SingleKeyRoute {
 public:
  WarmKeyRoute(SingleKeyRoute& inner, const PastPlacement& past, WarmGuard& guard, RouteLife* life)
      : inner_(inner), past_(past), guard_(guard), life_(life) {}
  void send(RouteRequest& req, ReplySlot& slot) override;
  void invalidate(RouteRequest& req, ReplySlot& slot) override;

 private:
  using Owners = std::array<Server*, kMaxPastOwners>;
  using Kinds = PastPlacement::Kinds;
  Work read(RouteRequest& req, ReplySlot& client, Owners owners, size_t count, Kinds kinds) const;
  Work write(RouteRequest& req, ReplySlot& client, Owners owners, size_t count, Kinds kinds) const;
  SingleKeyRoute& inner_;
  const PastPlacement& past_;
  WarmGuard& guard_;
  RouteLife* life_;
};

}  // namespace memshard::proxy
