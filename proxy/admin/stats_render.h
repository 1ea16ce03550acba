// The proxy's counters in the formats operators read them in: twemproxy's
// JSON stats document (so its exporters and scripts work unchanged), the
// Prometheus text format, and memcached-style STAT lines.
#pragma once

#include <string>

#include "proxy/admin/stats_view.h"

namespace memshard::proxy {

void render_twemproxy_json(const StatsView& proxy, std::string& out);
void render_prometheus(const StatsView& proxy, std::string& out);
// `stats servers`: one group of STAT lines per backend, with its state.
void render_stat_servers(const StatsView& proxy, std::string& out);
// `stats routes`: a routing pool's routes, "STAT <pool>:<route>:<counter>
// <value>" (the route is its prefix, or "(default)").
void render_stat_routes(const StatsView& proxy, std::string& out);
// Per-pool counters as "STAT <pool>:<counter> <value>" lines (plain `stats`).
void render_stat_pools(const StatsView& proxy, std::string& out);

}  // namespace memshard::proxy
