// Sockets for the unit tests of proxy/: a descriptor closed at scope exit,
// and a loopback TCP socket on a port the kernel picks.
#pragma once

#include <gtest/gtest.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <utility>

#include "proxy/transport/socket_address.h"

namespace memshard::proxy::test_sockets {

// A file descriptor closed when it goes out of scope.
class Fd {
 public:
  explicit Fd(int fd = -1) : fd_(fd) {}
  ~Fd() { reset(); }
  Fd(Fd&& other) noexcept : fd_(std::exchange(other.fd_, -1)) {}
  Fd& operator=(Fd&& other) noexcept {
    reset(std::exchange(other.fd_, -1));
    return *this;
  }
  int get() const { return fd_; }
  void reset(int fd = -1) {
    if (fd_ >= 0) ::close(fd_);
    fd_ = fd;
  }

 private:
  int fd_;
};

// A TCP socket bound to 127.0.0.1 on a port the kernel picks, listening or
// not (a bound socket that does not listen refuses connections, and keeps
// its port from being reused by anyone else meanwhile); non-blocking
// unless asked.
inline Fd tcp_socket(SocketAddress& address, bool listening, bool blocking = false) {
  Fd fd(socket(AF_INET, SOCK_STREAM | (blocking ? 0 : SOCK_NONBLOCK) | SOCK_CLOEXEC, 0));
  EXPECT_GE(fd.get(), 0) << strerror(errno);
  sockaddr_in sin{};
  sin.sin_family = AF_INET;
  sin.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  EXPECT_EQ(bind(fd.get(), reinterpret_cast<sockaddr*>(&sin), sizeof(sin)), 0) << strerror(errno);
  if (listening) {
    EXPECT_EQ(listen(fd.get(), 16), 0) << strerror(errno);
  }
  address.length = sizeof(address.storage);
  EXPECT_EQ(getsockname(fd.get(), reinterpret_cast<sockaddr*>(&address.storage), &address.length),
            0);
  return fd;
}

}  // namespace memshard::proxy::test_sockets
