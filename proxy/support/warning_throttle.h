// A warning that may come thousands of times a second (one per client
// refused, say) reaches the log at most once a second: the first at once,
// and those of the next second summed into one line when it is over, so
// that none goes unreported.
#pragma once

#include <event2/event.h>

#include <functional>

#include "proxy/support/timer.h"

namespace memshard::proxy {

class WarningThrottle {
 public:
  // `report` logs what its owner counted since the last report, and resets
  // those counts.
  WarningThrottle(event_base* base, std::function<void()> report);
  WarningThrottle(const WarningThrottle&) = delete;
  WarningThrottle& operator=(const WarningThrottle&) = delete;

  // Something to report happened (its owner has counted it).
  void note();

 private:
  void report();

  std::function<void()> report_;
  Timer timer_;
  bool unreported_ = false;
};

}  // namespace memshard::proxy
