// A replicated write that the server may refuse (add, cas, ms in add mode
// or with a cas), made so that no copy keeps a value the client was told
// was refused, and a successful cas leaves one value on every copy.
//
// Sent to every copy at once, an add could be refused by a copy that holds
// the key and stored by one that does not: the client hears NOT_STORED
// and a copy holds its value. A cas carries the cas unique of the copy the
// client read (the first), which no other copy shares. So the first live
// copy decides alone: the request goes to it (to the next on a
// SERVER_ERROR), and only when it stored the value is the same value
// written to the other copies as a plain set (same flags and exptime).
// The client gets the deciding copy's reply, once the others are written;
// under the `majority` and `all` policies a success whose copies could not
// be written often enough is answered with a copy's SERVER_ERROR instead.
//
// The request travels as a meta command made from its model
// (meta_codec.h), never quiet, so the proxy reads the decision even when
// the client asked not to (noreply, q): the client's reply is then made
// from it as the client asked. A request without a meta form (unmodeled
// flags) goes to every copy as a plain fan-out.
#pragma once

#include <string>
#include <vector>

#include "proxy/routes/fanout_route.h"
#include "proxy/routes/route.h"
#include "proxy/routes/work.h"

namespace memshard::proxy {

class PrimaryFirstRoute final : public Route {
 public:
  // `copies`: one route per copy of the key, first copy first. They and
  // `fallback` must outlive this route.
  PrimaryFirstRoute(std::vector<Route*> copies, ReplyPolicy policy, Route& fallback,
                    RouteLife* life = nullptr, const ReplicaPlacement* replicas = nullptr)
      : copies_(std::move(copies)),
        policy_(policy),
        fallback_(fallback),
        life_(life),
        replicas_(replicas) {}
  void send(RouteRequest& req, ReplySlot& slot) override;

 private:
  Work write(RouteRequest& req, ReplySlot& client, std::string bytes, size_t header) const;
  // The other copies get the value the deciding copy stored, as a set;
  // false (nothing sent) when it has no meta form.
  bool copy_to_others(HeldRequest& held, size_t decider, Calls& calls) const;
  // Whether the copies written are enough for the policy; counts them.
  bool enough(const HeldRequest& held, const std::vector<size_t>& copy_index, Calls& written,
              Reply*& failed) const;
  std::vector<Route*> copies_;
  ReplyPolicy policy_;
  Route& fallback_;
  RouteLife* life_;
  const ReplicaPlacement* replicas_;  // for per-server counts; may be null
};

}  // namespace memshard::proxy
