#include "proxy/support/timer.h"

#include <utility>

namespace memshard::proxy {

Timer::Timer(event_base* base, std::function<void()> on_fire, bool repeating)
    : event_(event_new(base, -1, repeating ? EV_PERSIST : 0, &Timer::on_event, this)),
      on_fire_(std::move(on_fire)) {}

Timer::~Timer() {
  event_free(event_);
}

void Timer::arm_usec(uint64_t usec) {
  const timeval tv{static_cast<time_t>(usec / 1'000'000),
                   static_cast<suseconds_t>(usec % 1'000'000)};
  event_add(event_, &tv);
}

void Timer::fire_soon() {
  event_active(event_, EV_TIMEOUT, 0);
}

void Timer::cancel() {
  event_del(event_);
}

bool Timer::armed() const {
  return event_pending(event_, EV_TIMEOUT, nullptr) != 0;
}

void Timer::on_event(evutil_socket_t, short, void* self) {
  static_cast<Timer*>(self)->on_fire_();
}

}  // namespace memshard::proxy
