#include "proxy/local_commands.h"

#include <unistd.h>

#include <ctime>

#include "proxy/proxy.h"

namespace memshard::proxy {

std::string_view version_reply() { return "VERSION " MEMSHARD_VERSION "\r\n"; }

namespace {
void stat(std::string& out, std::string_view name, uint64_t value) {
  out.append("STAT ").append(name).append(" ").append(std::to_string(value)).append("\r\n");
}
}  // namespace

void append_stats_reply(const Proxy& p, std::string& out) {
  stat(out, "pid", static_cast<uint64_t>(getpid()));
  stat(out, "uptime", p.uptime_seconds());
  stat(out, "time", static_cast<uint64_t>(time(nullptr)));
  out.append("STAT version " MEMSHARD_VERSION "\r\n");
  stat(out, "threads", static_cast<uint64_t>(p.thread_count()));
  stat(out, "config_generation", p.generation());
  stat(out, "config_reloads", p.reloads());
  stat(out, "config_reload_failures", p.reload_failures());
  for (const auto& [name, value] : p.counter_totals()) stat(out, name, value);
  stat(out, "rejected_connections", p.rejected_connections());
  stat(out, "server_ejects", p.health().ejections());
  stat(out, "server_readmissions", p.health().readmissions());
  out.append("END\r\n");
}

}  // namespace memshard::proxy
