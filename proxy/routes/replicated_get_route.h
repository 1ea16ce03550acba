// Classic retrievals (get, gets, gat, gats) in a replicated pool: each key
// is read on its own from its first live copy, and tries the next copy on
// a SERVER_ERROR (down, timed out, ejected) and, with on_miss, on a miss
// (a copy that restarted empty). The replies are merged in the client's
// key order with one END, as a split multi-get's are.
//
// The first try is a classic `get`/`gets` of the one key, which the outbox
// joins with the other gets queued for that server into one multi-get
// line: a multi-get that all lands on first copies costs what it costs
// unreplicated. Later tries are `mg <key> v f t [c]`, whose remaining TTL
// read repair needs: with `repair`, a value found after a miss is written
// back to each copy that missed (`ms ... F<flags> T<ttl> ME`: add, so a
// value written there meanwhile wins), without waiting for it.
//
// gat and gats also touch: the read's copy is touched by the read, and
// every other live copy gets a `touch` of its own, unanswered.
#pragma once

#include <memory>
#include <vector>

#include "proxy/protocol/retrieval_reply.h"
#include "proxy/routes/key_route.h"
#include "proxy/routes/replica_placement.h"
#include "proxy/routes/route.h"
#include "proxy/routes/split_route.h"
#include "proxy/routes/work.h"

namespace memshard::proxy {

class ReplicatedGetRoute final : public Route {
 public:
  // `reads[i]` and `keys[i]` send to the key's i-th live copy (a split
  // route and a key route over CopyPlacement(i)); they must outlive this.
  // `replicas` tells which server each copy is on, for per-server counts
  // (may be null).
  ReplicatedGetRoute(std::vector<Route*> reads, std::vector<Route*> keys, bool on_miss, bool repair,
                     RouteLife* life = nullptr, const ReplicaPlacement* replicas = nullptr)
      : reads_(std::move(reads)),
        keys_(std::move(keys)),
        on_miss_(on_miss),
        repair_(repair),
        life_(life),
        replicas_(replicas) {}
  void send(RouteRequest& req, ReplySlot& slot) override;

 private:
  // One key of the client's retrieval, going down its copies; it fills the
  // key's fragment of the client's slot.
  Work read_key(const RouteRequest& req, ReplySlot& client, uint32_t position) const;
  // gat, gats: every other live copy is touched as the read's copy is.
  void touch_others(const HeldRequest& held, std::string_view key, int64_t exptime) const;
  // Writes what a later copy had back to the copies that missed it.
  void repair(const HeldRequest& held, std::string_view key, const proto::MetaValue& v,
              const std::vector<size_t>& missed) const;
  ServerStats* counters(std::string_view key, size_t copy) const;
  std::vector<Route*> reads_;
  std::vector<Route*> keys_;
  bool on_miss_;
  bool repair_;
  RouteLife* life_;
  const ReplicaPlacement* replicas_;
};

}  // namespace memshard::proxy
