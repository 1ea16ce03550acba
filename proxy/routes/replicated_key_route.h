// Single-key requests in a replicated pool (replicas > 1), by what they do:
//   reads (mg without a touch or vivify, me): the first live copy, then
//     the next on a SERVER_ERROR (and on a miss with read_failover_on_miss);
//   writes a copy may refuse (add, cas, ms in add mode or with C):
//     PrimaryFirstRoute, so no copy keeps a refused value;
//   every other write (set, replace, append, prepend, delete, incr, decr,
//     touch, ms, md, ma, mg with T or N): every live copy at once, the
//     client's reply chosen by write_policy.
// A too-large set's invalidation deletes the key on every live copy.
// incr and decr go to every copy: copies that held the same number hold
// the same result; one that restarted empty stays empty (NOT_FOUND there).
#pragma once

#include <memory>
#include <vector>

#include "proxy/routes/failover_route.h"
#include "proxy/routes/fanout_route.h"
#include "proxy/routes/key_route.h"
#include "proxy/routes/primary_first_route.h"

namespace memshard::proxy {

class ReplicatedKeyRoute final : public SingleKeyRoute {
 public:
  // `copies[i]` sends to the key's i-th live copy; they must outlive this.
  // `replicas` tells which server each copy is on, for per-server counts
  // (may be null).
  ReplicatedKeyRoute(std::vector<SingleKeyRoute*> copies, ReplyPolicy policy, bool read_on_miss,
                     RouteLife* life, const ReplicaPlacement* replicas = nullptr);
  void send(RouteRequest& req, ReplySlot& slot) override;
  void invalidate(RouteRequest& req, ReplySlot& slot) override;

 private:
  void record_ejected(const RouteRequest& req) const;
  std::vector<SingleKeyRoute*> copies_;
  const ReplicaPlacement* replicas_;
  FailoverRoute read_;
  FanoutRoute write_;
  PrimaryFirstRoute decided_write_;
};

}  // namespace memshard::proxy
