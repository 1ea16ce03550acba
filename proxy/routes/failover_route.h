// Tries its routes in order for a single-key request: the next one when a
// reply is a SERVER_ERROR (server unavailable, timed out, closed, garbled),
// or a noreply request failed the same way (the client hears nothing of
// it, but the write must still reach a server), and, with `on_miss`, when
// it is a miss (a copy that restarted empty).
// The client sees the reply of the last try made, unless that is a
// SERVER_ERROR after an earlier try answered (a miss, then a copy that is
// down: the miss is the answer). Each try has a `timeout` of its own,
// counted from when it is sent (HeldRequest): a copy that stalls costs one
// timeout, then the next is asked.
#pragma once

#include <vector>

#include "proxy/routes/route.h"
#include "proxy/routes/work.h"

namespace memshard::proxy {

class FailoverRoute final : public Route {
 public:
  // The routes must outlive this one (they are built with it).
  // `life`: what a held request keeps alive (may be null in tests).
  FailoverRoute(std::vector<Route*> tries, bool on_miss, RouteLife* life = nullptr)
      : tries_(std::move(tries)), on_miss_(on_miss), life_(life) {}
  void send(RouteRequest& req, ReplySlot& slot) override;

 private:
  Work attempt(RouteRequest& req, ReplySlot& client) const;
  std::vector<Route*> tries_;
  bool on_miss_;
  RouteLife* life_;
};

}  // namespace memshard::proxy
