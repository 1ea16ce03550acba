// A real libevent loop for unit tests, run one turn at a time.
//
// A repeating tick wakes the loop every kTickUsec, so a turn never waits
// long for an event that does not come, and every wait has both a turn
// budget and a deadline: a broken part fails its test instead of hanging
// it. Nothing here measures how long something took.
#pragma once

#include <event2/event.h>
#include <gtest/gtest.h>

#include <chrono>
#include <functional>
#include <utility>

namespace memshard::proxy::test_loop {

constexpr long kTickUsec = 5'000;
constexpr auto kDeadline = std::chrono::seconds(10);
// More turns than the ticks of the deadline: the deadline comes first
// unless something makes the loop spin, which the budget then stops.
constexpr int kTurnBudget = 100'000;

class TestLoop {
 public:
  TestLoop() : base_(event_base_new()) {
    tick_ = event_new(
        base_, -1, EV_PERSIST, [](evutil_socket_t, short, void*) {}, nullptr);
    const timeval tv{0, kTickUsec};
    event_add(tick_, &tv);
  }
  ~TestLoop() {
    event_free(tick_);
    event_base_free(base_);
  }
  TestLoop(const TestLoop&) = delete;
  TestLoop& operator=(const TestLoop&) = delete;

  event_base* base() const { return base_; }

  // One turn: waits for at least one event (the tick at the latest) and
  // runs every callback that is due.
  void turn() { event_base_loop(base_, EVLOOP_ONCE); }

  // A timer of the test's own, armed for `usec` when made. Whatever timer
  // of the loop was armed earlier for a deadline before the mark's has
  // fired by the time the mark fires, and none due after it has: libevent
  // runs timers in the order of their deadlines. A turn may run several,
  // so what must be seen at the mark's moment is looked at in `at_mark`,
  // which runs when it fires.
  class Mark {
   public:
    Mark(TestLoop& loop, long usec, std::function<void()> at_mark = nullptr)
        : at_mark_(std::move(at_mark)), event_(evtimer_new(loop.base(), &Mark::on_fire, this)) {
      const timeval tv{usec / 1'000'000, usec % 1'000'000};
      evtimer_add(event_, &tv);
    }
    ~Mark() { event_free(event_); }
    Mark(const Mark&) = delete;
    Mark& operator=(const Mark&) = delete;
    bool fired() const { return fired_; }

   private:
    static void on_fire(evutil_socket_t, short, void* arg) {
      auto* self = static_cast<Mark*>(arg);
      self->fired_ = true;
      if (self->at_mark_) self->at_mark_();
    }
    std::function<void()> at_mark_;
    event* event_;
    bool fired_ = false;
  };

  // Turns until `mark` has fired; false if it never did.
  bool run_until(const Mark& mark) {
    return run_until([&] { return mark.fired(); });
  }
  // Turns until a mark armed now for `usec` has fired: every timer due
  // before it has fired too.
  bool pass_usec(long usec) {
    Mark mark(*this, usec);
    return run_until(mark);
  }

  // Turns until `done` holds; false when the deadline or the budget ran
  // out first.
  bool run_until(const std::function<bool()>& done) {
    const auto until = std::chrono::steady_clock::now() + kDeadline;
    for (int i = 0; i < kTurnBudget && std::chrono::steady_clock::now() < until; ++i) {
      if (done()) return true;
      turn();
    }
    return done();
  }

 private:
  event_base* base_;
  event* tick_ = nullptr;
};

}  // namespace memshard::proxy::test_loop
