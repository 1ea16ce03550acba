#include "proxy/routes/topology.h"

#include <utility>

namespace memshard::proxy {

const Pool* Topology::find_pool(const std::string& name) const {
  for (const Pool& p : pools) {
    if (p.config.name == name) return &p;
  }
  return nullptr;
}

namespace {
// Whether every key would find its server where it was: the same points
// over the same servers (a server replaced under the same ring name, as
// twemproxy's names allow, moves every key it held).
bool same_placement(const Pool& a, const Pool& b) {
  const ketama::RingOptions& ra = a.config.ring;
  const ketama::RingOptions& rb = b.config.ring;
  if (ra.mode != rb.mode || ra.distribution != rb.distribution || ra.hash != rb.hash ||
      ra.hash_tag != rb.hash_tag) {
    return false;
  }
  if (a.config.replicas != b.config.replicas || a.servers.size() != b.servers.size()) return false;
  for (size_t i = 0; i < a.servers.size(); ++i) {
    if (a.servers[i].identity != b.servers[i].identity) return false;
  }
  const auto& pa = a.ring.points();
  const auto& pb = b.ring.points();
  if (pa.size() != pb.size()) return false;
  for (size_t i = 0; i < pa.size(); ++i) {
    if (pa[i].value != pb[i].value || pa[i].server != pb[i].server) return false;
  }
  return true;
}
}  // namespace

void carry_past(const Pool& old, uint64_t old_generation, Pool& next, uint64_t now_usec) {
  const int window_ms = next.config.reload_warmup_ms;
  if (window_ms <= 0) return;
  std::vector<PastRing> past;
  if (!same_placement(old, next)) {
    past.push_back(PastRing{old.ring,
                            old.servers,
                            {},
                            now_usec + static_cast<uint64_t>(window_ms) * 1000,
                            old_generation,
                            old.config.replicas});
  }
  for (const PastRing& p : old.past) {
    if (p.until_usec > now_usec && past.size() < kMaxPastRings) past.push_back(p);
  }
  next.past = std::move(past);
  if (next.past.empty()) return;
  next.guard = old.guard ? old.guard : std::make_shared<WarmGuard>();
}

bool drop_expired(Pool& pool, uint64_t now_usec) {
  const size_t before = pool.past.size();
  std::erase_if(pool.past, [&](const PastRing& p) { return p.until_usec <= now_usec; });
  if (pool.past.empty()) pool.guard.reset();
  return pool.past.size() != before;
}

uint64_t next_window_end(const Topology& t) {
  uint64_t end = 0;
  for (const Pool& pool : t.pools) {
    for (const PastRing& p : pool.past) {
      if (end == 0 || p.until_usec < end) end = p.until_usec;
    }
  }
  return end;
}

std::shared_ptr<const Topology> build_topology(const conf::Config& config, uint64_t generation,
                                               const Topology* previous, uint64_t now_usec) {
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
      servers.push_back(ServerInfo{e.address(), std::move(stats_name),
                                   resolve_addresses(e.host, e.port, e.is_unix),
                                   !e.is_unix && !is_ip_literal(e.host), e.host, e.port});
    }
    const conf::ListenAddress& l = pc.listen;
    SocketAddress listen;  // none for a pool only routes reach
    if (pc.has_listen()) listen = resolve_address(l.is_unix ? l.path : l.host, l.port, l.is_unix);
    topo->pools.push_back(
        Pool{pc, std::move(ring), std::move(servers), listen, {}, {}, {}, {}, {}});
    load_pool_tls(config.file, topo->pools.back());
    const Pool* old = previous != nullptr ? previous->find_pool(pc.name) : nullptr;
    if (old != nullptr) carry_past(*old, previous->generation, topo->pools.back(), now_usec);
  }
  return topo;
}

}  // namespace memshard::proxy
