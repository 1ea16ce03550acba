// How long a thread has been busy: on a CPU, or runnable and waiting for
// one. Together that is the time it spent outside epoll_wait, which is
// what saturation means for an event loop on a shared host: a worker that
// waits for a CPU half the time is as saturated as one that runs all the
// time, though its CPU time says 50%.
#pragma once

#include <sys/types.h>

#include <cstdint>

namespace memshard::proxy {

// Microseconds since the thread started, from /proc/self/task/TID/schedstat
// (run time plus run-queue wait); where the kernel has no schedstat, the
// thread's CPU time alone. 0 when the thread is gone or unknown.
uint64_t thread_busy_usec(pid_t tid);

}  // namespace memshard::proxy
