// The monotonic clock, as the proxy reads it everywhere (clock_gettime is
// a vDSO call: no system call), and the wall clock, for the few things
// written in it (reload_switch_at).
#pragma once

#include <cstdint>
#include <ctime>

namespace memshard::proxy {

inline uint64_t monotonic_usec() {
  timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return static_cast<uint64_t>(ts.tv_sec) * 1'000'000 + static_cast<uint64_t>(ts.tv_nsec) / 1000;
}

// Microseconds since the epoch.
inline int64_t wall_clock_usec() {
  timespec ts;
  clock_gettime(CLOCK_REALTIME, &ts);
  return static_cast<int64_t>(ts.tv_sec) * 1'000'000 + ts.tv_nsec / 1000;
}

inline uint64_t monotonic_ms() {
  return monotonic_usec() / 1000;
}

}  // namespace memshard::proxy
