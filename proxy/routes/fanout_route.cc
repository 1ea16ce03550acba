#include "proxy/routes/fanout_route.h"

#include "proxy/routes/held_request.h"
#include "proxy/support/stats.h"

namespace memshard::proxy {

// The copies of one request in flight; deletes itself once the client's
// slot has its reply.
class FanoutRoute::Copies final : public SlotOwner {
 public:
  Copies(const FanoutRoute& route, RouteRequest& req, ReplySlot& client)
      : count_(route.life_), route_(route), held_(req), client_(client) {}

  // Sends every copy; true when all were answered meanwhile (this is then
  // gone, the client's slot complete).
  bool run() {
    slots_.reserve(route_.targets_.size());
    for (Route* target : route_.targets_) {
      ReplySlot* slot = held_.slots().acquire_slot(this);
      slots_.push_back(slot);
      sending_ = true;
      held_.send_copy(*target, *slot);
      sending_ = false;
    }
    return maybe_finish();
  }

  void on_slot_complete() override {
    if (!sending_) maybe_finish();
  }

  bool synchronous = true;

 private:
  bool maybe_finish() {
    if (slots_.size() < route_.targets_.size()) return false;
    for (ReplySlot* s : slots_) {
      if (!s->complete) return false;
    }
    // The copies after the first, which a replicated pool counts.
    for (size_t i = 1; i < slots_.size(); ++i) {
      if (!is_server_error(*slots_[i])) continue;
      held_.pool_stats().replica_write_failures.add();
      if (route_.replicas_ != nullptr && !held_.request().keys.empty()) {
        if (ServerStats* c = route_.replicas_->counters(held_.request().keys[0], i)) {
          c->replica_write_failures.add();
        }
      }
    }
    ReplySlot* chosen = choose();
    take_reply(client_, *chosen);
    for (ReplySlot* s : slots_) held_.slots().release_slot(s);
    finish_work(this, client_, synchronous);
    return true;
  }

  ReplySlot* choose() const {
    ReplySlot* first_ok = nullptr;
    ReplySlot* first_error = nullptr;
    size_t ok = 0;
    for (ReplySlot* s : slots_) {
      if (is_server_error(*s)) {
        if (first_error == nullptr) first_error = s;
      } else {
        if (first_ok == nullptr) first_ok = s;
        ++ok;
      }
    }
    switch (route_.policy_) {
      case ReplyPolicy::first:
        return first_ok != nullptr ? first_ok : first_error;
      case ReplyPolicy::majority:
        return 2 * ok > slots_.size() ? first_ok : first_error;
      case ReplyPolicy::all:
        return first_error != nullptr ? first_error : first_ok;
    }
    return slots_.front();
  }

  HeldCount count_;
  const FanoutRoute& route_;
  HeldRequest held_;
  ReplySlot& client_;
  std::vector<ReplySlot*> slots_;
  bool sending_ = false;
};

void FanoutRoute::send(RouteRequest& req, ReplySlot& slot) {
  ++slot.outstanding;
  slot.add_fragment();
  auto* copies = new Copies(*this, req, slot);
  if (!copies->run()) copies->synchronous = false;
}

}  // namespace memshard::proxy
