#include "proxy/runtime/main_loop.h"

#include <ctime>

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
  if (now_usec_ == 0) {
    timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    now_usec_ =
        static_cast<uint64_t>(ts.tv_sec) * 1'000'000 + static_cast<uint64_t>(ts.tv_nsec) / 1000;
  }
  return now_usec_;
}

}  // namespace memshard::proxy
