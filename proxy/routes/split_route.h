// A multi-key retrieval (get, gets, gat, gats) cut per server and merged
// back in the client's key order with one END: `get a b c` with a and c on
// one server and b on another becomes one slot with two fragments. A
// fragment whose server fails makes its keys misses (a miss is always
// safe) unless every fragment failed, when the client gets the error.
#pragma once

#include "proxy/routes/placement.h"
#include "proxy/routes/route.h"

namespace memshard::proxy {

class SplitRoute final : public Route {
 public:
  explicit SplitRoute(const Placement& placement) : placement_(placement) {}
  void send(RouteRequest& req, ReplySlot& slot) override;

 private:
  const Placement& placement_;
};

}  // namespace memshard::proxy
