#include "proxy/routes/topology.h"

#include <algorithm>
#include <utility>

#include "proxy/routes/pool_carry.h"

namespace memshard::proxy {

const Pool* Topology::find_pool(const std::string& name) const {
  for (const Pool& p : pools) {
    if (p.config.name == name) return &p;
  }
  return nullptr;
}

uint64_t next_window_end(const Topology& t) {
  uint64_t end = 0;
  const auto earliest = [&](uint64_t usec) {
    if (end == 0 || usec < end) end = usec;
  };
  for (const Pool& pool : t.pools) {
    for (const PastRing& p : pool.past) earliest(p.until_usec);
    if (pool.pending) earliest(std::max<uint64_t>(pool.pending->ends_usec(), 1));
  }
  return end;
}

std::shared_ptr<const Topology> build_topology(const conf::Config& config, uint64_t generation,
                                               const Topology* previous, uint64_t now_usec,
                                               std::optional<int64_t> unix_usec,
                                               std::vector<std::string>* notes,
                                               const std::map<std::string, AddressList>* known) {
  const WallClock clock{now_usec, unix_usec ? *unix_usec : wall_clock_at(now_usec)};
  auto topo = std::make_shared<Topology>();
  topo->generation = generation;
  for (const conf::PoolConfig& pc : config.pools) {
    std::vector<ketama::ServerEntry> entries;
    for (const conf::ServerConfig& sc : pc.servers) entries.push_back(sc.entry);
    ketama::Ring ring = entries.empty() ? ketama::Ring::none(pc.ring)  // a routing pool
                                        : ketama::Ring::build(std::move(entries), pc.ring);
    std::vector<ServerInfo> servers;
    for (size_t i = 0; i < pc.servers.size(); ++i) {
      const ketama::ServerEntry& e = pc.servers[i].entry;
      std::string stats_name = pc.ring.mode == ketama::Mode::twemproxy ? ring.ring_name(i)
                               : e.name.empty()                        ? e.address()
                                                                       : e.name;
      const AddressList* have = nullptr;
      if (known != nullptr) {
        const auto it = known->find(e.address());
        if (it != known->end()) have = &it->second;
      }
      servers.push_back(ServerInfo{e.address(), std::move(stats_name),
                                   have != nullptr ? *have
                                                   : resolve_addresses(e.host, e.port, e.is_unix),
                                   !e.is_unix && !is_ip_literal(e.host), e.host, e.port});
    }
    const conf::ListenAddress& l = pc.listen;
    SocketAddress listen;  // none for a pool only routes reach
    if (pc.has_listen()) listen = resolve_address(l.is_unix ? l.path : l.host, l.port, l.is_unix);
    topo->pools.push_back(
        Pool{pc, std::move(ring), std::move(servers), listen, {}, {}, {}, {}, {}});
    load_pool_tls(config.file, topo->pools.back());
    const Pool* old = previous != nullptr ? previous->find_pool(pc.name) : nullptr;
    if (old != nullptr) {
      carry_pool(*old, previous->generation, topo->pools.back(), generation, clock, notes);
    }
  }
  return topo;
}

}  // namespace memshard::proxy
