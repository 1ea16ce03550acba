#include "proxy/routes/fanout_route.h"

#include "proxy/support/stats.h"

namespace memshard::proxy {

ReplyPolicy reply_policy_of(conf::WritePolicy p) {
  switch (p) {
    case conf::WritePolicy::majority:
      return ReplyPolicy::majority;
    case conf::WritePolicy::all:
      return ReplyPolicy::all;
    case conf::WritePolicy::first:
      break;
  }
  return ReplyPolicy::first;
}

Work FanoutRoute::copies(RouteRequest& req, ReplySlot& client) const {
  HeldRequest held(req);  // req is not touched past this point
  Calls calls;
  for (Route* target : targets_) calls.add(held, *target);
  co_await calls.all();
  // The copies after the first, which a replicated pool counts.
  for (size_t i = 1; i < calls.size(); ++i) {
    if (!calls.reply(i).failed()) continue;
    held.pool_stats().replica_write_failures.add();
    if (replicas_ != nullptr && !held.request().keys.empty()) {
      if (ServerStats* c = replicas_->counters(held.request().keys[0], i)) {
        c->replica_write_failures.add();
      }
    }
  }
  choose(calls).pass_to(client);
}

Reply& FanoutRoute::choose(Calls& replies) const {
  Reply* first_ok = nullptr;
  Reply* first_error = nullptr;
  size_t ok = 0;
  for (size_t i = 0; i < replies.size(); ++i) {
    Reply& r = replies.reply(i);
    if (r.failed()) {
      if (first_error == nullptr) first_error = &r;
    } else {
      if (first_ok == nullptr) first_ok = &r;
      ++ok;
    }
  }
  switch (policy_) {
    case ReplyPolicy::first:
      return first_ok != nullptr ? *first_ok : *first_error;
    case ReplyPolicy::majority:
      return 2 * ok > replies.size() ? *first_ok : *first_error;
    case ReplyPolicy::all:
      return first_error != nullptr ? *first_error : *first_ok;
  }
  return replies.reply(0);
}

void FanoutRoute::send(RouteRequest& req, ReplySlot& slot) {
  slot.add_fragment();
  copies(req, slot).start(slot, life_);
}

}  // namespace memshard::proxy
