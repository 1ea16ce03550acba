// The client side of the accept tests: a TCP connection to a listener on
// loopback, and what it reads until the server closes.
#pragma once

#include <gtest/gtest.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <string>
#include <string_view>

#include "proxy/transport/socket_address.h"
#include "tests/proxy/transport/test_sockets.h"

namespace memshard::proxy::test_sockets {

// Connected when it returns: the connection waits in the listener's
// backlog until accepted. `first` is sent at once (a client's first
// command), before anyone accepts.
inline Fd connect_client(const SocketAddress& to, std::string_view first = {}) {
  Fd fd(socket(to.storage.ss_family, SOCK_STREAM | SOCK_CLOEXEC, 0));
  EXPECT_GE(fd.get(), 0) << strerror(errno);
  EXPECT_EQ(connect(fd.get(), to.get(), to.length), 0) << strerror(errno);
  if (!first.empty()) {
    EXPECT_EQ(send(fd.get(), first.data(), first.size(), MSG_NOSIGNAL),
              static_cast<ssize_t>(first.size()));
  }
  return fd;
}

// Everything the server sends until it closes (an end of file, or the reset
// a close with unread input makes), within a deadline of 100 polls of
// 100 ms. `closed` says whether the end came.
inline std::string read_until_closed(int fd, bool* closed = nullptr) {
  std::string got;
  if (closed != nullptr) *closed = false;
  for (int polls = 0; polls < 100; ++polls) {
    pollfd p{fd, POLLIN, 0};
    if (poll(&p, 1, 100) <= 0) continue;
    char buf[256];
    ssize_t n = recv(fd, buf, sizeof(buf), MSG_DONTWAIT);
    if (n > 0) {
      got.append(buf, static_cast<size_t>(n));
      continue;
    }
    if (n < 0 && (errno == EAGAIN || errno == EINTR)) continue;
    EXPECT_TRUE(n == 0 || errno == ECONNRESET) << strerror(errno);
    if (closed != nullptr) *closed = true;
    return got;
  }
  return got;
}

// Nothing to read and not closed: the connection still waits.
inline bool still_waiting(int fd) {
  char c;
  ssize_t n = recv(fd, &c, 1, MSG_DONTWAIT | MSG_PEEK);
  return n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK);
}

}  // namespace memshard::proxy::test_sockets
