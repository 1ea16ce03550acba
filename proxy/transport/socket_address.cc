#include "proxy/transport/socket_address.h"

#include <arpa/inet.h>
#include <netdb.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <sys/un.h>

#include <algorithm>
#include <cstring>
#include <stdexcept>

namespace memshard::proxy {

bool SocketAddress::operator==(const SocketAddress& o) const {
  return length == o.length && std::memcmp(&storage, &o.storage, length) == 0;
}

bool connected_to_itself(int fd) {
  SocketAddress local, peer;
  local.length = peer.length = sizeof(sockaddr_storage);
  if (getsockname(fd, reinterpret_cast<sockaddr*>(&local.storage), &local.length) != 0 ||
      getpeername(fd, reinterpret_cast<sockaddr*>(&peer.storage), &peer.length) != 0)
    return false;
  if (local.family() != AF_INET && local.family() != AF_INET6) return false;
  return local == peer;
}

std::string SocketAddress::text() const {
  char host[INET6_ADDRSTRLEN] = "?";
  switch (family()) {
    case AF_UNIX:
      return reinterpret_cast<const sockaddr_un*>(&storage)->sun_path;
    case AF_INET: {
      const auto* in = reinterpret_cast<const sockaddr_in*>(&storage);
      inet_ntop(AF_INET, &in->sin_addr, host, sizeof(host));
      return std::string(host) + ":" + std::to_string(ntohs(in->sin_port));
    }
    case AF_INET6: {
      const auto* in6 = reinterpret_cast<const sockaddr_in6*>(&storage);
      inet_ntop(AF_INET6, &in6->sin6_addr, host, sizeof(host));
      return "[" + std::string(host) + "]:" + std::to_string(ntohs(in6->sin6_port));
    }
    default:
      return "?";
  }
}

std::string describe(const AddressList& addresses) {
  std::string out;
  for (const SocketAddress& a : addresses) {
    if (!out.empty()) out += ", ";
    out += a.text();
  }
  return out;
}

bool is_ip_literal(const std::string& host) {
  in6_addr six;
  in_addr four;
  return inet_pton(AF_INET, host.c_str(), &four) == 1 ||
         inet_pton(AF_INET6, host.c_str(), &six) == 1;
}

AddressList resolve_addresses(const std::string& host, uint16_t port, bool is_unix) {
  AddressList out;
  if (is_unix) {
    SocketAddress a;
    sockaddr_un un{};
    un.sun_family = AF_UNIX;
    if (host.size() >= sizeof(un.sun_path)) {
      throw std::runtime_error("unix socket path too long: " + host);
    }
    std::memcpy(un.sun_path, host.data(), host.size());
    std::memcpy(&a.storage, &un, sizeof(un));
    a.length = static_cast<socklen_t>(offsetof(sockaddr_un, sun_path) + host.size() + 1);
    out.push_back(a);
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
  for (addrinfo* ai = res; ai != nullptr; ai = ai->ai_next) {
    if (ai->ai_addrlen > sizeof(sockaddr_storage)) continue;
    SocketAddress a;
    std::memcpy(&a.storage, ai->ai_addr, ai->ai_addrlen);
    a.length = ai->ai_addrlen;
    if (std::find(out.begin(), out.end(), a) == out.end()) out.push_back(a);
  }
  freeaddrinfo(res);
  if (out.empty()) throw std::runtime_error("cannot resolve '" + host + ":" + service + "'");
  return out;
}

SocketAddress resolve_address(const std::string& host, uint16_t port, bool is_unix) {
  return resolve_addresses(host, port, is_unix).front();
}

int incoming_cpu(int fd) {
  int cpu = -1;
  socklen_t len = sizeof(cpu);
  if (getsockopt(fd, SOL_SOCKET, SO_INCOMING_CPU, &cpu, &len) != 0) return -1;
  return cpu;
}

}  // namespace memshard::proxy
