// Sends a single-key request to every one of its routes (the copies of a
// replicated key) and gives the client one reply, chosen by policy once
// every copy has answered:
//   first     the first route's reply that is not a SERVER_ERROR (else
//             the first route's error): a write succeeds while any copy
//             takes it;
//   majority  a reply that is not an error if more than half are not,
//             else the first error;
//   all       the first error if any copy failed, else the first reply.
#pragma once

#include <vector>

#include "conf/model.h"
#include "proxy/routes/replica_placement.h"
#include "proxy/routes/route.h"
#include "proxy/routes/work.h"

namespace memshard::proxy {

enum class ReplyPolicy : uint8_t { first, majority, all };

// The policy a pool's write_policy names.
ReplyPolicy reply_policy_of(conf::WritePolicy p);

class FanoutRoute final : public Route {
 public:
  // The routes must outlive this one (they are built with it).
  // `life`: what a held request keeps alive (may be null in tests).
  // `replicas`: when target i is a key's copy i, the placement that tells
  // which server that is, to count each copy's failures on its server.
  FanoutRoute(std::vector<Route*> targets, ReplyPolicy policy, RouteLife* life = nullptr,
              const ReplicaPlacement* replicas = nullptr)
      : targets_(std::move(targets)), policy_(policy), life_(life), replicas_(replicas) {}
  void send(RouteRequest& req, ReplySlot& slot) override;

 private:
  Work copies(RouteRequest& req, ReplySlot& client) const;
  // The reply the policy gives the client.
  Reply& choose(Calls& replies) const;
  std::vector<Route*> targets_;
  ReplyPolicy policy_;
  RouteLife* life_;
  const ReplicaPlacement* replicas_;
};

}  // namespace memshard::proxy
