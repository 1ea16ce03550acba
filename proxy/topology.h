// The routing view of one loaded config: per pool its ring, its settings and
// its servers' socket addresses. Immutable once built; each worker holds it
// through a shared_ptr, so a reload builds a new one off the request path
// and workers switch between two requests.
#pragma once

#include <sys/socket.h>

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "conf/config.h"
#include "ketama/ring.h"

namespace memshard::proxy {

struct SocketAddress {
  sockaddr_storage storage{};
  socklen_t length = 0;

  const sockaddr* get() const { return reinterpret_cast<const sockaddr*>(&storage); }
  int family() const { return storage.ss_family; }
};

struct ServerInfo {
  // Backend identity: "host:port" or the socket path. Two configs naming
  // the same identity share backend connections across a reload.
  std::string identity;
  // How stats name the server: twemproxy's server name (its ring name in
  // twemproxy mode), else the explicit name or the address.
  std::string stats_name;
  SocketAddress address;
};

struct Pool {
  conf::PoolConfig config;
  ketama::Ring ring;
  std::vector<ServerInfo> servers;  // same order as config.servers and ring.servers()
  SocketAddress listen;
};

struct Topology {
  uint64_t generation = 0;
  std::vector<Pool> pools;

  const Pool* find_pool(const std::string& name) const;
};

// Resolves every address (getaddrinfo: blocking, so never call it on a
// worker). Throws std::runtime_error naming the address that failed.
std::shared_ptr<const Topology> build_topology(const conf::Config& config, uint64_t generation);

// Resolves "host:port" / unix path into a socket address.
SocketAddress resolve_address(const std::string& host, uint16_t port, bool is_unix);

}  // namespace memshard::proxy
