// A request every server of the pool must see (flush_all): the slot says
// OK when every server said OK, else the first failure.
#pragma once

#include "proxy/routes/placement.h"
#include "proxy/routes/route.h"

namespace memshard::proxy {

class BroadcastRoute final : public Route {
 public:
  explicit BroadcastRoute(const Placement& placement) : placement_(placement) {}
  void send(RouteRequest& req, ReplySlot& slot) override;

 private:
  const Placement& placement_;
};

}  // namespace memshard::proxy
