// Bounded waits for the control-plane tests of proxy/runtime: a condition
// polled from the test's thread, or an event loop run on the test's thread
// until a condition holds. Every wait has a deadline and an iteration
// budget; a wait that runs out returns false and the test says what it
// waited for. Nothing here measures how long something took.
#pragma once

#include <event2/event.h>

#include <chrono>
#include <functional>
#include <thread>

#include "proxy/support/timer.h"

namespace memshard::proxy::test {

using Clock = std::chrono::steady_clock;
// Generous: a loaded 2-core machine running other builds must not fail a
// test that is merely slow.
inline constexpr std::chrono::milliseconds kDeadline{10'000};
inline constexpr std::chrono::milliseconds kTick{5};
// Ticks of kTick: the deadline comes first, unless ticks run late.
inline constexpr int kTickBudget = 4000;

// Polls `done` until it holds, the deadline passes or the budget runs out.
inline bool eventually(const std::function<bool()>& done,
                       std::chrono::milliseconds limit = kDeadline) {
  const auto until = Clock::now() + limit;
  for (int i = 0; i < kTickBudget && Clock::now() < until; ++i) {
    if (done()) return true;
    std::this_thread::sleep_for(kTick);
  }
  return done();
}

// Runs an event loop on this thread until `done` holds: `run_loop` runs
// `base` until event_base_loopexit (event_base_dispatch, MainLoop::run), and
// a timer every kTick checks `done` and the budget and ends the loop. The
// condition is read on the loop's thread, between callbacks. While it is
// read, the tick itself is one pending timer of `base`.
inline bool run_until(event_base* base, const std::function<void()>& run_loop,
                      const std::function<bool()>& done,
                      std::chrono::milliseconds limit = kDeadline) {
  const auto until = Clock::now() + limit;
  int ticks = 0;
  bool met = false;
  Timer tick(
      base,
      [&] {
        met = done();
        if (met || ++ticks >= kTickBudget || Clock::now() >= until)
          event_base_loopexit(base, nullptr);
      },
      true);
  tick.arm_usec(static_cast<uint64_t>(std::chrono::microseconds(kTick).count()));
  run_loop();
  return met;
}

// The same for a bare event_base.
inline bool run_base_until(event_base* base, const std::function<bool()>& done,
                           std::chrono::milliseconds limit = kDeadline) {
  return run_until(
      base, [base] { event_base_dispatch(base); }, done, limit);
}

}  // namespace memshard::proxy::test
