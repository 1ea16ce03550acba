#include "proxy/routes/failover_route.h"

#include "proxy/routes/held_request.h"

namespace memshard::proxy {

// One request going down the list. It owns the slot of the try in
// progress, and deletes itself once the client's slot has its reply.
class FailoverRoute::Attempt final : public SlotOwner {
 public:
  Attempt(const FailoverRoute& route, RouteRequest& req, ReplySlot& client)
      : count_(route.life_), route_(route), held_(req), client_(client) {}

  // Makes tries until one waits for a server; true when the client's slot
  // got its reply meanwhile (this is then gone).
  bool run() {
    while (true) {
      slot_ = held_.slots().acquire_slot(this);
      sending_ = true;
      held_.send_copy(*route_.tries_[next_++], *slot_);
      sending_ = false;
      if (!slot_->complete) return false;
      if (!again()) {
        finish();
        return true;
      }
      keep_answer();
    }
  }

  void on_slot_complete() override {
    if (sending_) return;  // completed inside send(): run() sees it
    if (again()) {
      keep_answer();
      run();
      return;
    }
    finish();
  }

  // Set while the client's dispatch is still in FailoverRoute::send.
  bool synchronous = true;

 private:
  bool again() const {
    if (next_ == route_.tries_.size()) return false;
    return is_server_error(*slot_) || failed_silently(*slot_) ||
           (route_.on_miss_ && is_miss(*slot_));
  }

  // The try that just ended goes on to the next: a real answer (a miss) is
  // kept, in case the tries after it can only fail.
  void keep_answer() {
    if (is_server_error(*slot_) || failed_silently(*slot_)) {
      held_.slots().release_slot(slot_);
      return;
    }
    if (answered_ != nullptr) held_.slots().release_slot(answered_);
    answered_ = slot_;
  }

  void finish() {
    ReplySlot* reply = slot_;
    if (answered_ != nullptr && (is_server_error(*slot_) || failed_silently(*slot_))) {
      reply = answered_;
    }
    take_reply(client_, *reply);
    held_.slots().release_slot(slot_);
    if (answered_ != nullptr) held_.slots().release_slot(answered_);
    finish_work(this, client_, synchronous);
  }

  HeldCount count_;
  const FailoverRoute& route_;
  HeldRequest held_;
  ReplySlot& client_;
  ReplySlot* slot_ = nullptr;
  ReplySlot* answered_ = nullptr;  // the last try that answered, if a later one runs
  size_t next_ = 0;
  bool sending_ = false;
};

void FailoverRoute::send(RouteRequest& req, ReplySlot& slot) {
  ++slot.outstanding;
  slot.add_fragment();
  auto* attempt = new Attempt(*this, req, slot);
  if (!attempt->run()) attempt->synchronous = false;
}

}  // namespace memshard::proxy
