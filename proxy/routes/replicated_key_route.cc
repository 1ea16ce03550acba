#include "proxy/routes/replicated_key_route.h"

#include <array>

#include "proxy/backends/repair_log.h"
#include "proxy/protocol/request_kind.h"
#include "proxy/support/stats.h"

namespace memshard::proxy {

namespace {

std::vector<Route*> as_routes(const std::vector<SingleKeyRoute*>& copies) {
  return std::vector<Route*>(copies.begin(), copies.end());
}

}  // namespace

ReplicatedKeyRoute::ReplicatedKeyRoute(std::vector<SingleKeyRoute*> copies, ReplyPolicy policy,
                                       bool read_on_miss, RouteLife* life,
                                       const ReplicaPlacement* replicas)
    : copies_(std::move(copies)),
      replicas_(replicas),
      read_(as_routes(copies_), read_on_miss, life),
      write_(as_routes(copies_), policy, life, replicas),
      decided_write_(as_routes(copies_), policy, write_, life, replicas) {}

// A copy that is ejected misses the write: recorded for its repair.
void ReplicatedKeyRoute::record_ejected(const RouteRequest& req) const {
  if (replicas_ == nullptr) return;
  std::array<size_t, kMaxReplicas> out;
  const size_t n = replicas_->ejected_copies(req.request.keys[0], out);
  for (size_t i = 0; i < n; ++i) {
    if (RepairLog* log = replicas_->server(out[i]).repairs()) log->record(req.request.keys[0]);
  }
}

void ReplicatedKeyRoute::send(RouteRequest& req, ReplySlot& slot) {
  if (proto::is_read(req.request)) return read_.send(req, slot);
  record_ejected(req);
  if (proto::may_be_refused(req.request)) return decided_write_.send(req, slot);
  req.pool_stats.replica_writes.add(copies_.size() - 1);
  if (replicas_ != nullptr) {
    for (size_t copy = 1; copy < copies_.size(); ++copy) {
      if (ServerStats* c = replicas_->counters(req.request.keys[0], copy)) c->replica_writes.add();
    }
  }
  write_.send(req, slot);
}

void ReplicatedKeyRoute::invalidate(RouteRequest& req, ReplySlot& slot) {
  record_ejected(req);
  for (SingleKeyRoute* copy : copies_) copy->invalidate(req, slot);
}

}  // namespace memshard::proxy
