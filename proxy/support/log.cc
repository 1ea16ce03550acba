#include "proxy/support/log.h"

#include <event2/event.h>
#include <fcntl.h>
#include <sys/time.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cstdarg>
#include <cstdio>
#include <ctime>
#include <filesystem>
#include <mutex>

namespace memshard::proxy {

namespace {
std::atomic<int> g_level{static_cast<int>(LogLevel::notice)};
std::mutex g_mu;
int g_fd = STDERR_FILENO;
std::string g_path;

}  // namespace

const char* log_level_name(LogLevel l) {
  static const char* names[] = {"ERROR", "WARN", "NOTICE", "INFO", "DEBUG"};
  return names[static_cast<int>(l)];
}

void log_set_level(LogLevel level) {
  g_level = static_cast<int>(level);
}
LogLevel log_level() {
  return static_cast<LogLevel>(g_level.load());
}

bool log_open(const std::string& path) {
  int fd = open(path.c_str(), O_WRONLY | O_APPEND | O_CREAT | O_CLOEXEC, 0644);
  if (fd < 0) return false;
  std::lock_guard<std::mutex> lock(g_mu);
  if (g_fd != STDERR_FILENO) close(g_fd);
  g_fd = fd;
  // Absolute, so a reopen finds it after the daemon's chdir("/").
  g_path = std::filesystem::absolute(path).string();
  return true;
}

void log_reopen() {
  std::string path;
  {
    std::lock_guard<std::mutex> lock(g_mu);
    path = g_path;
  }
  if (!path.empty()) log_open(path);
}

namespace {
void write_line(LogLevel level, const char* fmt, va_list ap) {
  char buf[4096];
  timeval tv;
  gettimeofday(&tv, nullptr);
  tm t;
  localtime_r(&tv.tv_sec, &t);
  size_t n = strftime(buf, sizeof(buf), "[%Y-%m-%d %H:%M:%S", &t);
  n += static_cast<size_t>(snprintf(buf + n, sizeof(buf) - n, ".%03d] %-6s ",
                                    static_cast<int>(tv.tv_usec / 1000), log_level_name(level)));
  int w = vsnprintf(buf + n, sizeof(buf) - n - 1, fmt, ap);
  if (w > 0) n = std::min(sizeof(buf) - 2, n + static_cast<size_t>(w));
  buf[n++] = '\n';
  std::lock_guard<std::mutex> lock(g_mu);
  (void)!write(g_fd, buf, n);
}
}  // namespace

void log_write(LogLevel level, const char* fmt, ...) {
  if (static_cast<int>(level) > g_level.load(std::memory_order_relaxed)) return;
  va_list ap;
  va_start(ap, fmt);
  write_line(level, fmt, ap);
  va_end(ap);
}

void log_always(const char* fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  write_line(LogLevel::notice, fmt, ap);
  va_end(ap);
}

void log_capture_libevent() {
  event_set_log_callback([](int severity, const char* msg) {
    LogLevel level = severity >= EVENT_LOG_ERR    ? LogLevel::error
                     : severity == EVENT_LOG_WARN ? LogLevel::warn
                     : severity == EVENT_LOG_MSG  ? LogLevel::info
                                                  : LogLevel::debug;
    log_write(level, "libevent: %s", msg);
  });
}

}  // namespace memshard::proxy
