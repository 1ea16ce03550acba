#include "proxy/routes/failover_route.h"

namespace memshard::proxy {

Work FailoverRoute::attempt(RouteRequest& req, ReplySlot& client) const {
  HeldRequest held(req);  // req is not touched past this point
  Reply answered;         // the last try that gave an answer (a miss), if a later one runs
  for (size_t i = 0; i < tries_.size(); ++i) {
    Reply reply = co_await Call(held, *tries_[i]);
    const bool last = i + 1 == tries_.size();
    if (!reply.failed() && !(on_miss_ && reply.missed() && !last)) {
      reply.pass_to(client);
      co_return;
    }
    if (last) {
      // A miss is an answer: a copy that fails after it does not turn it
      // into an error.
      (reply.failed() && !answered.empty() ? answered : reply).pass_to(client);
      co_return;
    }
    if (!reply.failed()) answered = std::move(reply);
  }
}

void FailoverRoute::send(RouteRequest& req, ReplySlot& slot) {
  slot.add_fragment();
  attempt(req, slot).start(slot, life_);
}

}  // namespace memshard::proxy
