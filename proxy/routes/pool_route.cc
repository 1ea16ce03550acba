#include "proxy/routes/pool_route.h"

namespace memshard::proxy {

void PoolRoute::build_routes() {
  std::vector<Server*> servers(backends.begin(), backends.end());
  placement = std::make_unique<RingPlacement>(pool->ring, std::move(servers));
  key = std::make_unique<KeyRoute>(*placement);
  multi_get = std::make_unique<SplitRoute>(*placement);
  all = std::make_unique<BroadcastRoute>(*placement);
}

}  // namespace memshard::proxy
