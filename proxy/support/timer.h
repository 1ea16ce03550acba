// A timer on a libevent loop, owned like any member: made with its
// callback, armed and cancelled by its owner, freed with it. Every timeout
// of the proxy is one (backend timeouts, health probes, name refreshes,
// the config watch's settling, warm-up windows, drains, accept pauses,
// throttled warnings, the stats port's wait for a request), so no class
// keeps a raw event and a C trampoline of its own.
#pragma once

#include <event2/event.h>

#include <cstdint>
#include <functional>

namespace memshard::proxy {

class Timer {
 public:
  // `repeating`: fires every period until cancelled (a tick); otherwise
  // once per arming.
  Timer(event_base* base, std::function<void()> on_fire, bool repeating = false);
  ~Timer();
  Timer(const Timer&) = delete;
  Timer& operator=(const Timer&) = delete;

  // Fires after `usec` (0: on the loop's next turn), replacing any time it
  // was armed for.
  void arm_usec(uint64_t usec);
  void arm_ms(uint64_t ms) { arm_usec(ms * 1000); }
  // Fires as soon as the loop gets to it (a callback deferred out of the
  // current one), whether or not it is armed.
  void fire_soon();
  void cancel();
  bool armed() const;

 private:
  static void on_event(evutil_socket_t, short, void* self);

  event* event_;
  std::function<void()> on_fire_;
};

}  // namespace memshard::proxy
