// The proxy's counters in the formats operators read them in: twemproxy's
// JSON stats document (so its exporters and scripts work unchanged), the
// Prometheus text format, and memcached-style STAT lines.
#pragma once

#include <string>

namespace memshard::proxy {

class Proxy;

void render_twemproxy_json(const Proxy& proxy, std::string& out);
void render_prometheus(const Proxy& proxy, std::string& out);
// `stats servers`: one group of STAT lines per backend, with its state.
void render_stat_servers(const Proxy& proxy, std::string& out);
// Per-pool counters as "STAT <pool>:<counter> <value>" lines (plain `stats`).
void render_stat_pools(const Proxy& proxy, std::string& out);

}  // namespace memshard::proxy
