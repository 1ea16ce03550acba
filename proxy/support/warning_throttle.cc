#include "proxy/support/warning_throttle.h"

#include <utility>

namespace memshard::proxy {

WarningThrottle::WarningThrottle(event_base* base, std::function<void()> report)
    : timer_(evtimer_new(base, &WarningThrottle::on_timer, this)), report_(std::move(report)) {}

WarningThrottle::~WarningThrottle() {
  event_free(timer_);
}

void WarningThrottle::note() {
  unreported_ = true;
  if (!evtimer_pending(timer_, nullptr)) report();
}

void WarningThrottle::on_timer(evutil_socket_t, short, void* self) {
  static_cast<WarningThrottle*>(self)->report();
}

// The timer runs for a second after each report: what is noted meanwhile
// waits for it.
void WarningThrottle::report() {
  if (!unreported_) return;
  unreported_ = false;
  report_();
  timeval second{1, 0};
  evtimer_add(timer_, &second);
}

}  // namespace memshard::proxy
