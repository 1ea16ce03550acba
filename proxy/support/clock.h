// The monotonic clock, as the proxy reads it everywhere (clock_gettime is
// a vDSO call: no system call).
#pragma once

#include <cstdint>
#include <ctime>

namespace memshard::proxy {

inline uint64_t monotonic_usec() {
  timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return static_cast<uint64_t>(ts.tv_sec) * 1'000'000 + static_cast<uint64_t>(ts.tv_nsec) / 1000;
}

inline uint64_t monotonic_ms() {
  return monotonic_usec() / 1000;
}

}  // namespace memshard::proxy
