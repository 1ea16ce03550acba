#include "proxy/support/warning_throttle.h"

#include <utility>

namespace memshard::proxy {

WarningThrottle::WarningThrottle(event_base* base, std::function<void()> report)
    : report_(std::move(report)), timer_(base, [this] { this->report(); }) {}

void WarningThrottle::note() {
  unreported_ = true;
  if (!timer_.armed()) report();
}

// The timer runs for a second after each report: what is noted meanwhile
// waits for it.
void WarningThrottle::report() {
  if (!unreported_) return;
  unreported_ = false;
  report_();
  timer_.arm_ms(1000);
}

}  // namespace memshard::proxy
