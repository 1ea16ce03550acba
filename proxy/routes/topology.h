// The routing view of one loaded config: per pool its ring, its settings and
// its servers' socket addresses. Immutable once built; each worker holds it
// through a shared_ptr, so a reload builds a new one off the request path
// and workers switch between two requests.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "conf/config.h"
#include "ketama/ring.h"
#include "proxy/transport/socket_address.h"
#include "proxy/transport/tls_context.h"

namespace memshard::proxy {

struct ServerInfo {
  // Backend identity: "host:port" or the socket path. Two configs naming
  // the same identity share backend connections across a reload.
  std::string identity;
  // How stats name the server: twemproxy's server name (its ring name in
  // twemproxy mode), else the explicit name or the address.
  std::string stats_name;
  AddressList addresses;  // never empty
  // The host is a DNS name (not an IP literal or a socket path), so its
  // addresses can change while memshard runs and are looked up again.
  bool named = false;
  std::string host;
  uint16_t port = 0;
};

struct Pool {
  conf::PoolConfig config;
  ketama::Ring ring;
  std::vector<ServerInfo> servers;  // same order as config.servers and ring.servers()
  SocketAddress listen;
  // Replicated pools (replicas > 1): per server, false while ejected
  // (empty: all live). Their ring keeps every server (ReplicaPlacement);
  // an unreplicated pool's ring is rebuilt without the ejected ones instead.
  std::vector<bool> live;
  // TLS for the pool's clients (tls_cert_file) and for its servers
  // (server_tls); null when off. Loaded anew by every build, so a reload
  // rotates certificates (pool_tls.cc).
  std::shared_ptr<const TlsContext> client_tls, server_tls;
};

struct Topology {
  uint64_t generation = 0;
  std::vector<Pool> pools;

  const Pool* find_pool(const std::string& name) const;
};

// Resolves every address (getaddrinfo: blocking, so never call it on a
// worker). Throws std::runtime_error naming the address that failed.
// Loads the pool's TLS contexts; throws std::runtime_error naming the file,
// line and directive of what does not load.
void load_pool_tls(const std::string& file, Pool& pool);

std::shared_ptr<const Topology> build_topology(const conf::Config& config, uint64_t generation);

}  // namespace memshard::proxy
