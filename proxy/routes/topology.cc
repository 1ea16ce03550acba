#include "proxy/routes/topology.h"

#include <utility>

namespace memshard::proxy {

const Pool* Topology::find_pool(const std::string& name) const {
  for (const Pool& p : pools) {
    if (p.config.name == name) return &p;
  }
  return nullptr;
}

std::shared_ptr<const Topology> build_topology(const conf::Config& config, uint64_t generation) {
  auto topo = std::make_shared<Topology>();
  topo->generation = generation;
  for (const conf::PoolConfig& pc : config.pools) {
    std::vector<ketama::ServerEntry> entries;
    for (const conf::ServerConfig& sc : pc.servers) entries.push_back(sc.entry);
    ketama::Ring ring = ketama::Ring::build(std::move(entries), pc.ring);
    std::vector<ServerInfo> servers;
    for (size_t i = 0; i < pc.servers.size(); ++i) {
      const ketama::ServerEntry& e = pc.servers[i].entry;
      std::string stats_name = pc.ring.mode == ketama::Mode::twemproxy ? ring.ring_name(i)
                               : e.name.empty()                        ? e.address()
                                                                       : e.name;
      servers.push_back(ServerInfo{e.address(), std::move(stats_name),
                                   resolve_addresses(e.host, e.port, e.is_unix),
                                   !e.is_unix && !is_ip_literal(e.host), e.host, e.port});
    }
    const conf::ListenAddress& l = pc.listen;
    SocketAddress listen = resolve_address(l.is_unix ? l.path : l.host, l.port, l.is_unix);
    topo->pools.push_back(Pool{pc, std::move(ring), std::move(servers), listen, {}, {}, {}});
    load_pool_tls(config.file, topo->pools.back());
  }
  return topo;
}

}  // namespace memshard::proxy
