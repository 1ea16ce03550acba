// A pool as one worker routes it: its config and ring (from the topology
// in force) and, per server index, the worker's backend for that server.
// Rebuilt by the worker at every topology change; clients keep a pointer
// for as long as the worker's routes epoch stays the same.
#pragma once

#include <memory>
#include <vector>

#include "proxy/backends/backend.h"
#include "proxy/routes/topology.h"
#include "proxy/support/stats.h"

namespace memshard::proxy {

struct PoolRoute {
  const Pool* pool = nullptr;
  std::vector<BackendServer*> backends;
  std::shared_ptr<PoolStats> stats;
};

}  // namespace memshard::proxy
