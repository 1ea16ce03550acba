// Counters kept per worker and summed when read. Each counter has a single
// writer (its worker thread), so an increment is a plain relaxed load and
// store: no locked instruction and no cache line shared between workers on
// the request path. Readers on other threads see a recent value.
#pragma once

#include <atomic>
#include <cstdint>

namespace memshard::proxy {

class Counter {
 public:
  void add(uint64_t n = 1) { v_.store(v_.load(std::memory_order_relaxed) + n, std::memory_order_relaxed); }
  void sub(uint64_t n = 1) { v_.store(v_.load(std::memory_order_relaxed) - n, std::memory_order_relaxed); }
  uint64_t get() const { return v_.load(std::memory_order_relaxed); }

 private:
  std::atomic<uint64_t> v_{0};
};

// Every per-worker counter, named as memcached's own `stats` names it where
// one exists. One list, so declaring, summing and printing cannot disagree.
#define MEMSHARD_WORKER_COUNTERS(X)                                                     \
  X(curr_connections)                                                                  \
  X(total_connections)                                                                 \
  X(cmd_get)         /* keys requested by get-family commands */                      \
  X(cmd_set)         /* storage commands */                                           \
  X(cmd_other)       /* every other forwarded request */                              \
  X(fragments)       /* backend operations sent */                                    \
  X(forward_error)   /* backend operations failed: unreachable, timeout, bad reply */ \
  X(server_timeouts) /* backend operations that ran out of time */                    \
  X(client_errors)   /* ERROR / CLIENT_ERROR / SERVER_ERROR given by the proxy */

struct WorkerStats {
#define MEMSHARD_DECLARE_COUNTER(name) Counter name;
  MEMSHARD_WORKER_COUNTERS(MEMSHARD_DECLARE_COUNTER)
#undef MEMSHARD_DECLARE_COUNTER

  // Calls f(name, counter) for every counter.
  template <typename F>
  void for_each(F&& f) const {
#define MEMSHARD_VISIT_COUNTER(name) f(#name, name);
    MEMSHARD_WORKER_COUNTERS(MEMSHARD_VISIT_COUNTER)
#undef MEMSHARD_VISIT_COUNTER
  }
};

}  // namespace memshard::proxy
