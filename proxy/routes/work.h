// Work a route does across server round trips, written as a coroutine: a
// composite route (failover, fan-out, warm-up, a replica write...) sends
// requests of its own, waits for their replies, decides, and answers the
// client's slot, in the order a reader follows:
//
//   Work FailoverRoute::attempt(RouteRequest& req) const {
//     HeldRequest held(req);      // req lives only until the first co_await
//     for (Route* r : tries_) {
//       Reply reply = co_await Call(held, *r);
//       if (!reply.failed()) { reply.pass_to(client_slot); co_return; }
//     }
//   }
//   ... send(): attempt(req).start(slot, life_);
//
// This is the one mechanism for it, so that no route keeps flags about
// whether it is still inside its own send() or frees itself:
//   - Call sends one request into a slot of its own and is awaited for its
//     Reply; a reply that comes before the send returns (an unavailable
//     server) does not suspend at all.
//   - Calls sends several at once and is awaited for all their replies.
//   - Work::start() runs the coroutine until it first waits. The client's
//     slot expects one more fragment, done when the work ends: reported to
//     the slot's owner unless the work ended inside start(), since the
//     client writes the slots completed by its own dispatch when that
//     returns. The coroutine's frame is freed when it ends, before the
//     client hears of it.
//   - A work started without a client (start_unanswered) is a request sent
//     on its own whose answer nobody waits for: a copy, a repair, a delete.
// While a work lives it keeps its pool's routes alive (RouteLife).
//
// Chosen over a base class with callbacks (the way each route was written
// before) by measurement, tests/proxy/routes/work_bench.cc: a fan-out to
// three copies costs 2.74 us against 2.67 us (+3%, the fake servers' own
// work included; a real request costs several times that in system
// calls), and each route reads as the sequence it is. A per-thread cache
// of coroutine frames bought nothing over malloc's own.
#pragma once

#include <array>
#include <coroutine>
#include <cstddef>
#include <deque>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "proxy/backends/reply_slot.h"
#include "proxy/protocol/reply_status.h"
#include "proxy/routes/held_request.h"
#include "proxy/routes/route.h"

namespace memshard::proxy {

// The answer to a request a route sent on its own: its slot, given back to
// the pool when the Reply goes.
class Reply {
 public:
  Reply() = default;
  Reply(SlotSource& slots, ReplySlot* slot) : slots_(&slots), slot_(slot) {}
  Reply(Reply&& o) noexcept;
  Reply& operator=(Reply&& o) noexcept;
  ~Reply();
  Reply(const Reply&) = delete;
  Reply& operator=(const Reply&) = delete;

  bool empty() const { return slot_ == nullptr; }
  proto::ReplyStatus status() const { return slot_->status(); }
  // The server could not answer (down, timed out, garbled; a quiet request
  // that failed says so here though its client hears nothing).
  bool failed() const { return proto::failed(status()); }
  bool missed() const { return proto::missed(status()); }
  bool succeeded() const { return proto::succeeded(status()); }
  // A copy of its bytes, for routes that take a reply apart.
  std::string text() const;
  // Its bytes and status become `client`'s reply (the slot's fragments do
  // not: a retrieval reply is already assembled).
  void pass_to(ReplySlot& client);
  ReplySlot& slot() const { return *slot_; }

 private:
  SlotSource* slots_ = nullptr;
  ReplySlot* slot_ = nullptr;
};

class Calls;

// One request sent now, awaited for its Reply.
class Call final : public SlotOwner {
 public:
  // A copy of what `held` holds, to `route`.
  Call(HeldRequest& held, Route& route);
  // `req` itself: its bytes leave the client's input (a route that only
  // needs to see the reply before the client does).
  Call(RouteRequest& req, Route& route);
  // Whatever `send(slot)` puts into a slot of `slots` (another method of a
  // route than send(): a SingleKeyRoute's invalidate()).
  template <typename Send>
  Call(SlotSource& slots, Send&& send) : slots_(&slots), slot_(slots.acquire_slot(this)) {
    send(*slot_);
    slot_->complete_unsent();  // nothing went out (an invalidate with no server)
    sending_ = false;
  }
  ~Call();
  Call(const Call&) = delete;
  Call& operator=(const Call&) = delete;

  bool await_ready() const noexcept { return slot_->complete(); }
  void await_suspend(std::coroutine_handle<> waiting) noexcept { waiting_ = waiting; }
  Reply await_resume() noexcept { return take(); }

  bool answered() const { return slot_ != nullptr && slot_->complete(); }
  Reply take() { return Reply(*slots_, std::exchange(slot_, nullptr)); }

 private:
  friend class Calls;
  void on_slot_complete() override;

  SlotSource* slots_;
  ReplySlot* slot_;
  std::coroutine_handle<> waiting_;
  Calls* group_ = nullptr;
  bool sending_ = true;
};

// Several requests sent now, awaited together: once `co_await calls.all()`
// resumes, every one has its reply, reply(i) in the order they were added.
// The first few live inside the Calls (a fan-out to a key's copies
// allocates nothing more); more go to a deque.
class Calls {
 public:
  static constexpr size_t kInline = 4;

  Calls() = default;
  Calls(const Calls&) = delete;
  Calls& operator=(const Calls&) = delete;

  void add(HeldRequest& held, Route& route);
  size_t size() const { return size_; }
  Reply& reply(size_t i) { return i < kInline ? first_replies_[i] : more_replies_[i - kInline]; }

  class All {
   public:
    explicit All(Calls& calls) : calls_(calls) {}
    bool await_ready() const noexcept { return calls_.pending_ == 0; }
    void await_suspend(std::coroutine_handle<> waiting) noexcept { calls_.waiting_ = waiting; }
    void await_resume() { calls_.take_replies(); }

   private:
    Calls& calls_;
  };
  All all() { return All(*this); }

 private:
  friend class Call;
  Call& call(size_t i) { return i < kInline ? *first_[i] : more_[i - kInline]; }
  void one_answered();
  void take_replies();

  std::array<std::optional<Call>, kInline> first_;
  std::deque<Call> more_;  // stable addresses: each is its slot's owner
  std::array<Reply, kInline> first_replies_;
  std::vector<Reply> more_replies_;
  size_t size_ = 0;
  size_t pending_ = 0;
  std::coroutine_handle<> waiting_;
};

// The coroutine type of a route's work. Created suspended; start() runs it.
class Work {
 public:
  struct promise_type;
  using Handle = std::coroutine_handle<promise_type>;

  struct FinalStep {
    bool await_ready() const noexcept { return false; }
    void await_suspend(Handle done) const noexcept;
    void await_resume() const noexcept {}
  };

  struct promise_type {
    ReplySlot* client = nullptr;
    bool* ended_in_start = nullptr;  // set while start() runs the work
    std::optional<HeldCount> alive;

    Work get_return_object() { return Work(Handle::from_promise(*this)); }
    std::suspend_always initial_suspend() const noexcept { return {}; }
    FinalStep final_suspend() const noexcept { return {}; }
    void return_void() const noexcept {}
    [[noreturn]] void unhandled_exception() const noexcept;
  };

  explicit Work(Handle h) : handle_(h) {}
  Work(Work&& o) noexcept : handle_(std::exchange(o.handle_, {})) {}
  Work& operator=(Work&&) = delete;
  ~Work();

  // Runs the work for `client`, whose slot expects one fragment more until
  // it ends; `life` (may be null) keeps the routes alive meanwhile.
  void start(ReplySlot& client, RouteLife* life);
  // Runs a work no client waits for.
  void start_unanswered(RouteLife* life);

 private:
  void run(ReplySlot* client, RouteLife* life);
  Handle handle_;
};

}  // namespace memshard::proxy
