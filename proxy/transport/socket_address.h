// Where a socket connects or listens: one address, or every address a
// server's name resolves to. Resolution blocks (getaddrinfo), so it is
// never called on an event loop.
#pragma once

#include <sys/socket.h>

#include <cstdint>
#include <string>
#include <vector>

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
// Whether a connected TCP socket is connected to itself: its local and
// peer addresses are one. A connect to a port on this host where nothing
// listens can complete so when the kernel picks that very port as the
// source (TCP's simultaneous open): a server port in the ephemeral range,
// down, would then look up, and read every request back as its reply.
bool connected_to_itself(int fd);
// The CPU the kernel last received this socket's packets on
// (SO_INCOMING_CPU: the sender's CPU on loopback), or -1 when unknown.
int incoming_cpu(int fd);

}  // namespace memshard::proxy
