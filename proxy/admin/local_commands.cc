#include "proxy/admin/local_commands.h"

#include <unistd.h>

#include <ctime>

#include "proxy/admin/hot_keys_render.h"
#include "proxy/admin/stats_render.h"
#include "proxy/admin/stats_view.h"
#include "proxy/protocol/replies.h"

namespace memshard::proxy {

namespace {
void stat(std::string& out, std::string_view name, uint64_t value) {
  out.append("STAT ").append(name).append(" ").append(std::to_string(value)).append("\r\n");
}
}  // namespace

void append_stats_reply(const StatsView& p, const std::vector<std::string_view>& args,
                        std::string& out) {
  if (args.size() == 1 && args[0] == "servers") {
    render_stat_servers(p, out);
    return;
  }
  if (args.size() == 1 && args[0] == "routes") return render_stat_routes(p, out);
  if (args.size() == 1 && args[0] == "hotkeys") return render_stat_hot_keys(p.snapshot(), out);
  if (!args.empty()) {
    // memcached answers a subcommand it does not know with ERROR.
    out.append(proto::reply::kError);
    return;
  }
  stat(out, "pid", static_cast<uint64_t>(getpid()));
  stat(out, "uptime", p.uptime_seconds());
  stat(out, "time", static_cast<uint64_t>(time(nullptr)));
  out.append("STAT version " MEMSHARD_VERSION "\r\n");
  stat(out, "threads", static_cast<uint64_t>(p.thread_count()));
  stat(out, "active_threads", static_cast<uint64_t>(p.active_threads()));
  stat(out, "config_generation", p.generation());
  stat(out, "config_reloads", p.reloads());
  stat(out, "config_reload_failures", p.reload_failures());
  for (const auto& [name, value] : p.counter_totals()) stat(out, name, value);
  stat(out, "max_connections", p.max_connections());
  stat(out, "rejected_connections", p.rejected_connections());
  stat(out, "server_ejects", p.ejections());
  stat(out, "server_readmissions", p.readmissions());
  stat(out, "dns_address_changes", p.dns_address_changes());
  stat(out, "dns_failures", p.dns_failures());
  render_stat_pools(p, out);
  out.append(proto::reply::kEnd);
}

}  // namespace memshard::proxy
