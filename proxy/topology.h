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
  bool operator==(const SocketAddress& o) const;
  // "127.0.0.1:11211", "[::1]:11211" or the socket path, for logs.
  std::string text() const;
};

// Every address a server's name resolves to, in getaddrinfo's order. A
// name may have several, and the first need not answer: Debian's own
// /etc/hosts gives localhost as ::1 before 127.0.0.1, while memcached
// listens on 127.0.0.1 by default. Connections try them in turn.
using AddressList = std::vector<SocketAddress>;

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
};

struct Topology {
  uint64_t generation = 0;
  std::vector<Pool> pools;

  const Pool* find_pool(const std::string& name) const;
};

// Resolves every address (getaddrinfo: blocking, so never call it on a
// worker). Throws std::runtime_error naming the address that failed.
std::shared_ptr<const Topology> build_topology(const conf::Config& config, uint64_t generation);

// Resolves "host:port" / unix path into its first socket address (where to
// listen). Throws std::runtime_error naming the address.
SocketAddress resolve_address(const std::string& host, uint16_t port, bool is_unix);
// Every address of "host:port" / unix path, duplicates dropped. Blocking.
// Throws std::runtime_error naming the address.
AddressList resolve_addresses(const std::string& host, uint16_t port, bool is_unix);
// Whether `host` is an IPv4 or IPv6 literal rather than a name.
bool is_ip_literal(const std::string& host);
// "a, b, c" of AddressList::text(), for logs.
std::string describe(const AddressList& addresses);

}  // namespace memshard::proxy
