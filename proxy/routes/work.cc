#include "proxy/routes/work.h"

#include <exception>

#include "proxy/support/log.h"

namespace memshard::proxy {

// ---------------------------------------------------------------- Reply

Reply::Reply(Reply&& o) noexcept
    : slots_(std::exchange(o.slots_, nullptr)), slot_(std::exchange(o.slot_, nullptr)) {}

Reply& Reply::operator=(Reply&& o) noexcept {
  if (this != &o) {
    if (slot_ != nullptr) slots_->release_slot(slot_);
    slots_ = std::exchange(o.slots_, nullptr);
    slot_ = std::exchange(o.slot_, nullptr);
  }
  return *this;
}

Reply::~Reply() {
  if (slot_ != nullptr) slots_->release_slot(slot_);
}

std::string Reply::text() const {
  std::string s(evbuffer_get_length(slot_->reply()), '\0');
  evbuffer_copyout(slot_->reply(), s.data(), s.size());
  return s;
}

void Reply::pass_to(ReplySlot& client) {
  client.take_reply(*slot_);
}

// ---------------------------------------------------------------- Call

Call::Call(HeldRequest& held, Route& route)
    : slots_(&held.slots()), slot_(held.slots().acquire_slot(this)) {
  held.send_copy(route, *slot_);
  sending_ = false;
}

Call::Call(RouteRequest& req, Route& route)
    : slots_(&req.slots), slot_(req.slots.acquire_slot(this)) {
  route.send(req, *slot_);
  sending_ = false;
}

Call::~Call() {
  if (slot_ == nullptr) return;
  if (slot_->complete()) {
    slots_->release_slot(slot_);
    return;
  }
  // Still owed by a server: the slot goes back to its pool once answered
  // (ReplySlot::fragment_done), never to a Call that is gone.
  slot_->abandon_to(slots_);
}

void Call::on_slot_complete() {
  if (sending_) return;  // answered inside the send: await_ready sees it
  if (group_ != nullptr) return group_->one_answered();
  if (waiting_) std::exchange(waiting_, {}).resume();
}

// ---------------------------------------------------------------- Calls

void Calls::add(HeldRequest& held, Route& route) {
  Call& c = size_ < kInline ? first_[size_].emplace(held, route) : more_.emplace_back(held, route);
  ++size_;
  if (c.answered()) return;
  c.group_ = this;
  ++pending_;
}

void Calls::one_answered() {
  if (--pending_ == 0 && waiting_) std::exchange(waiting_, {}).resume();
}

void Calls::take_replies() {
  for (size_t i = 0; i < size_; ++i) {
    if (i < kInline) {
      first_replies_[i] = call(i).take();
    } else {
      more_replies_.push_back(call(i).take());
    }
  }
}

// ---------------------------------------------------------------- Work

void Work::promise_type::unhandled_exception() const noexcept {
  log_error("a route's work threw: %s", "aborting");
  std::terminate();
}

void Work::FinalStep::await_suspend(Handle done) const noexcept {
  promise_type& p = done.promise();
  ReplySlot* client = p.client;
  bool* ended_in_start = p.ended_in_start;
  // The frame goes first: what the client does once told (write replies,
  // read more requests, close) must find nothing of this work alive.
  done.destroy();
  if (ended_in_start != nullptr) *ended_in_start = true;
  if (client == nullptr) return;
  if (ended_in_start != nullptr) {
    client->fragment_done_unreported();
  } else {
    client->fragment_done();
  }
}

Work::~Work() {
  if (handle_) handle_.destroy();  // never started
}

void Work::start(ReplySlot& client, RouteLife* life) {
  client.expect();
  run(&client, life);
}

void Work::start_unanswered(RouteLife* life) {
  run(nullptr, life);
}

void Work::run(ReplySlot* client, RouteLife* life) {
  const Handle h = std::exchange(handle_, {});
  promise_type& p = h.promise();
  p.client = client;
  if (life != nullptr) p.alive.emplace(life);
  bool ended = false;
  p.ended_in_start = &ended;
  h.resume();
  if (!ended) p.ended_in_start = nullptr;
}

}  // namespace memshard::proxy
