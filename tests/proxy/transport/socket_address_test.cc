// connected_to_itself() on real loopback sockets: a socket made to connect
// to its own address (as the kernel may when it picks a down server's port
// as the source), a connection between two sockets, and a Unix pair.
#include "proxy/transport/socket_address.h"

#include <gtest/gtest.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

#include "tests/proxy/transport/test_sockets.h"

namespace memshard::proxy {
namespace {

using test_sockets::Fd;
using test_sockets::tcp_socket;

TEST(ConnectedToItself, ASocketConnectedToItsOwnPort) {
  SocketAddress own;
  Fd fd = tcp_socket(own, false, true);
  // Nothing listens on its port: the connect meets itself (simultaneous open).
  ASSERT_EQ(connect(fd.get(), own.get(), own.length), 0) << strerror(errno);
  EXPECT_TRUE(connected_to_itself(fd.get()));
}

TEST(ConnectedToItself, NotTwoEndsOfAConnection) {
  SocketAddress listening;
  Fd listener = tcp_socket(listening, true);
  SocketAddress own;
  Fd client = tcp_socket(own, false, true);
  ASSERT_EQ(connect(client.get(), listening.get(), listening.length), 0) << strerror(errno);
  Fd server(accept4(listener.get(), nullptr, nullptr, SOCK_CLOEXEC));
  ASSERT_GE(server.get(), 0) << strerror(errno);
  EXPECT_FALSE(connected_to_itself(client.get()));
  EXPECT_FALSE(connected_to_itself(server.get()));
}

TEST(ConnectedToItself, NotAnUnconnectedOrUnixSocket) {
  SocketAddress own;
  Fd unconnected = tcp_socket(own, false, true);
  EXPECT_FALSE(connected_to_itself(unconnected.get()));
  int pair[2] = {-1, -1};
  ASSERT_EQ(socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, pair), 0);
  Fd a(pair[0]), b(pair[1]);
  EXPECT_FALSE(connected_to_itself(a.get()));
  EXPECT_FALSE(connected_to_itself(-1));
}

}  // namespace
}  // namespace memshard::proxy
