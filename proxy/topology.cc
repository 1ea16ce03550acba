#include "proxy/topology.h"

#include <netdb.h>
#include <sys/un.h>

#include <cstring>
#include <stdexcept>

namespace memshard::proxy {

const Pool* Topology::find_pool(const std::string& name) const {
  for (const Pool& p : pools) {
    if (p.config.name == name) return &p;
  }
  return nullptr;
}

SocketAddress resolve_address(const std::string& host, uint16_t port, bool is_unix) {
  SocketAddress out;
  if (is_unix) {
    sockaddr_un un{};
    un.sun_family = AF_UNIX;
    if (host.size() >= sizeof(un.sun_path)) {
      throw std::runtime_error("unix socket path too long: " + host);
    }
    std::memcpy(un.sun_path, host.data(), host.size());
    std::memcpy(&out.storage, &un, sizeof(un));
    out.length = static_cast<socklen_t>(offsetof(sockaddr_un, sun_path) + host.size() + 1);
    return out;
  }
  addrinfo hints{};
  hints.ai_family = AF_UNSPEC;
  hints.ai_socktype = SOCK_STREAM;
  hints.ai_flags = AI_NUMERICSERV;
  addrinfo* res = nullptr;
  std::string service = std::to_string(port);
  int rc = getaddrinfo(host.empty() ? nullptr : host.c_str(), service.c_str(), &hints, &res);
  if (rc != 0 || res == nullptr) {
    throw std::runtime_error("cannot resolve '" + host + ":" + service + "': " + gai_strerror(rc));
  }
  std::memcpy(&out.storage, res->ai_addr, res->ai_addrlen);
  out.length = res->ai_addrlen;
  freeaddrinfo(res);
  return out;
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
                                   resolve_address(e.host, e.port, e.is_unix)});
    }
    const conf::ListenAddress& l = pc.listen;
    SocketAddress listen = resolve_address(l.is_unix ? l.path : l.host, l.port, l.is_unix);
    topo->pools.push_back(Pool{pc, std::move(ring), std::move(servers), listen});
  }
  return topo;
}

}  // namespace memshard::proxy
