// Logging: one line per event, with a timestamp and a level, to stderr or
// the file given with -o. Nothing is logged per request at the default
// level.
#pragma once

#include <string>

namespace memshard::proxy {

enum class LogLevel { error = 0, warn = 1, notice = 2, info = 3, debug = 4 };

void log_set_level(LogLevel level);
LogLevel log_level();
const char* log_level_name(LogLevel level);
// Returns false (and leaves stderr in use) when the file cannot be opened.
bool log_open(const std::string& path);
void log_reopen();

void log_write(LogLevel level, const char* fmt, ...) __attribute__((format(printf, 2, 3)));
// Written whatever the level (tagged NOTICE): what the operator just asked for.
void log_always(const char* fmt, ...) __attribute__((format(printf, 1, 2)));
// Sends libevent's own messages here too, with a timestamp and to the -o
// file, instead of bare to stderr.
void log_capture_libevent();

#define log_error(...) ::memshard::proxy::log_write(::memshard::proxy::LogLevel::error, __VA_ARGS__)
#define log_warn(...) ::memshard::proxy::log_write(::memshard::proxy::LogLevel::warn, __VA_ARGS__)
#define log_notice(...) \
  ::memshard::proxy::log_write(::memshard::proxy::LogLevel::notice, __VA_ARGS__)
#define log_info(...) ::memshard::proxy::log_write(::memshard::proxy::LogLevel::info, __VA_ARGS__)
#define log_debug(...) ::memshard::proxy::log_write(::memshard::proxy::LogLevel::debug, __VA_ARGS__)

}  // namespace memshard::proxy
