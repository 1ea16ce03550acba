#include "proxy/runtime/thread_busy.h"

#include <fcntl.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>

namespace memshard::proxy {

namespace {
// utime + stime of /proc/self/task/TID/stat, in microseconds.
uint64_t cpu_usec(pid_t tid) {
  char path[64];
  std::snprintf(path, sizeof path, "/proc/self/task/%d/stat", static_cast<int>(tid));
  FILE* f = std::fopen(path, "r");
  if (f == nullptr) return 0;
  char buf[1024];
  const size_t n = std::fread(buf, 1, sizeof buf - 1, f);
  std::fclose(f);
  buf[n] = '\0';
  // Fields after the command name, which may hold spaces: ") S ppid ...".
  const char* p = nullptr;
  for (const char* c = buf; *c != '\0'; ++c) {
    if (*c == ')') p = c;
  }
  if (p == nullptr) return 0;
  unsigned long long utime = 0, stime = 0;
  // state(3) ... utime is field 14, stime 15: 11 fields after the state.
  if (std::sscanf(p + 1, " %*c %*d %*d %*d %*d %*d %*u %*u %*u %*u %*u %llu %llu", &utime,
                  &stime) != 2)
    return 0;
  const long ticks = sysconf(_SC_CLK_TCK);
  return ticks > 0 ? (utime + stime) * 1'000'000 / static_cast<unsigned long long>(ticks) : 0;
}
}  // namespace

uint64_t thread_busy_usec(pid_t tid) {
  if (tid <= 0) return 0;
  char path[64];
  std::snprintf(path, sizeof path, "/proc/self/task/%d/schedstat", static_cast<int>(tid));
  const int fd = open(path, O_RDONLY | O_CLOEXEC);
  if (fd < 0) return cpu_usec(tid);
  char buf[128];
  const ssize_t n = read(fd, buf, sizeof buf - 1);
  close(fd);
  if (n <= 0) return cpu_usec(tid);
  buf[n] = '\0';
  // "run_ns wait_ns timeslices"
  char* end = nullptr;
  const unsigned long long run = std::strtoull(buf, &end, 10);
  const unsigned long long wait = std::strtoull(end, nullptr, 10);
  return (run + wait) / 1000;
}

}  // namespace memshard::proxy
