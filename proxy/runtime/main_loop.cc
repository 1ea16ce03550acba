#include "proxy/runtime/main_loop.h"

#include "proxy/support/clock.h"

namespace memshard::proxy {

void MainLoop::run() {
  while (true) {
    if (event_base_loop(base_, EVLOOP_ONCE) < 0) return;
    streams_.flush();
    now_usec_ = 0;
    if (event_base_got_exit(base_) || event_base_got_break(base_)) return;
  }
}

uint64_t MainLoop::now_usec() {
  if (now_usec_ == 0) now_usec_ = monotonic_usec();
  return now_usec_;
}

}  // namespace memshard::proxy
