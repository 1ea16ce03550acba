// The way into another pool from a route that is not its own: a routing
// pool's route to the pool of a prefix, a pool's gutter, a shadow. The
// request goes on through that pool's own routes (its replicas, warm-up,
// hot keys), counted on that pool's counters rather than the listener's.
#pragma once

#include "proxy/routes/route.h"

namespace memshard::proxy {

// A pool's finished routes (PoolRoute::entry()): they must outlive
// whatever enters through them (built and freed with the worker's routes).
struct PoolRoutes {
  SingleKeyRoute* key = nullptr;
  Route* multi_get = nullptr;
  Route* all = nullptr;
  PoolStats* stats = nullptr;
};

// `req` with `stats` as the pool it counts on; everything else is req's.
inline RouteRequest entering(const RouteRequest& req, PoolStats& stats) {
  return RouteRequest{req.request,      req.in,      req.header_bytes, req.line,
                      req.affinity,     req.now_usec, req.scratch,      req.slots,
                      req.worker_stats, stats,        req.home};
}

// One of a pool's routes, entered from outside: counts the request as the
// pool's and sends it on.
class PoolEntry final : public SingleKeyRoute {
 public:
  enum class Part : uint8_t { key, multi_get, all };
  PoolEntry(const PoolRoutes& pool, Part part) : pool_(pool), part_(part) {}

  void send(RouteRequest& req, ReplySlot& slot) override {
    pool_.stats->requests.add();
    RouteRequest in = entering(req, *pool_.stats);
    switch (part_) {
      case Part::key:
        return pool_.key->send(in, slot);
      case Part::multi_get:
        return pool_.multi_get->send(in, slot);
      case Part::all:
        return pool_.all->send(in, slot);
    }
  }
  // Deletes the key in the pool (key part only: the others have no key).
  void invalidate(RouteRequest& req, ReplySlot& slot) override {
    RouteRequest in = entering(req, *pool_.stats);
    pool_.key->invalidate(in, slot);
  }

 private:
  PoolRoutes pool_;
  Part part_;
};

}  // namespace memshard::proxy
