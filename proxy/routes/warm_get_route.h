// Classic retrievals (get, gets, gat, gats) during a reload's warm-up
// window (reload_warmup). The request goes to the pool's own route first;
// each key that missed there and moved in a reload still inside its
// window is then looked up on the servers that held it before, newest
// config first, one `mg` per key and old server (a round of lookups is
// sent together: one round trip per config). A hit is answered in its place in the client's
// key order and copied to the key's current servers (warm_copy.h).
//
// A retrieval none of whose keys moved goes straight to the pool's route,
// as after the window: nothing is held, nothing is looked up again.
#pragma once

#include "proxy/routes/past_placement.h"
#include "proxy/routes/route.h"
#include "proxy/routes/warm_guard.h"
#include "proxy/routes/work.h"

namespace memshard::proxy {

class WarmGetRoute final : public Route {
 public:
  // Everything must outlive this (built with it, kept by RouteLife).
  WarmGetRoute(Route& inner, const PastPlacement& past, WarmGuard& guard, RouteLife* life)
      : inner_(inner), past_(past), guard_(guard), life_(life) {}
  void send(RouteRequest& req, ReplySlot& slot) override;

 private:
  Work read(RouteRequest& req, ReplySlot& client) const;
  Route& inner_;
  const PastPlacement& past_;
  WarmGuard& guard_;
  RouteLife* life_;
};

}  // namespace memshard::proxy
