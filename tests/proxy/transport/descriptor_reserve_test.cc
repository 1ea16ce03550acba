// refuse_client and DescriptorReserve (proxy/transport/accept_guard.h):
// a refused client reads the text it was given, then the end; the reserve
// refuses one waiting client at a time while the process has no descriptor
// left, takes its own back each time, and says when it cannot help. Real
// TCP sockets on loopback, no event loop.
#include <fcntl.h>
#include <gtest/gtest.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cerrno>
#include <string>
#include <vector>

#include "proxy/transport/accept_guard.h"
#include "tests/proxy/transport/descriptors_exhausted.h"
#include "tests/proxy/transport/loopback_client.h"
#include "tests/proxy/transport/test_sockets.h"

namespace memshard::proxy {
namespace {

using test_fds::DescriptorsExhausted;
using test_sockets::connect_client;
using test_sockets::Fd;
using test_sockets::read_until_closed;
using test_sockets::still_waiting;

using test_fds::kTooMany;

bool is_open(int fd) {
  return fcntl(fd, F_GETFD) != -1;
}

// Whether the process could open a descriptor now (closed again at once).
bool descriptor_free() {
  int fd = open("/dev/null", O_RDONLY | O_CLOEXEC);
  if (fd < 0) return false;
  close(fd);
  return true;
}

class DescriptorReserveTest : public ::testing::Test {
 protected:
  void SetUp() override { listener_ = test_sockets::tcp_socket(address_, /*listening=*/true); }
  SocketAddress address_;
  Fd listener_;
};

TEST_F(DescriptorReserveTest, ARefusedClientReadsTheReplyThenTheEnd) {
  Fd client = connect_client(address_);
  int fd = accept4(listener_.get(), nullptr, nullptr, SOCK_NONBLOCK | SOCK_CLOEXEC);
  ASSERT_GE(fd, 0) << strerror(errno);
  refuse_client(fd, kTooMany);
  EXPECT_FALSE(is_open(fd));
  bool closed = false;
  EXPECT_EQ(read_until_closed(client.get(), &closed), kTooMany);
  EXPECT_TRUE(closed);
}

TEST_F(DescriptorReserveTest, AClientWhoseCommandWasNeverReadStillReadsTheReply) {
  // The close with the command unread makes the kernel reset the
  // connection: the reply must reach the client before the reset does.
  Fd client = connect_client(address_, "get some:key\r\n");
  int fd = accept4(listener_.get(), nullptr, nullptr, SOCK_NONBLOCK | SOCK_CLOEXEC);
  ASSERT_GE(fd, 0) << strerror(errno);
  refuse_client(fd, kTooMany);
  bool closed = false;
  EXPECT_EQ(read_until_closed(client.get(), &closed), kTooMany);
  EXPECT_TRUE(closed);
}

TEST_F(DescriptorReserveTest, RefusesOneWaitingClientPerCallWithTheTextItWasGiven) {
  DescriptorReserve reserve("SERVER_ERROR no room here\r\n");
  EXPECT_EQ(reserve.refusal(), "SERVER_ERROR no room here\r\n");
  EXPECT_EQ(reserve.refuse_one(listener_.get()), 0);  // nobody waits yet
  Fd first = connect_client(address_);
  Fd second = connect_client(address_);
  EXPECT_EQ(reserve.refuse_one(listener_.get()), 1);
  EXPECT_EQ(reserve.refuse_one(listener_.get()), 1);
  EXPECT_EQ(reserve.refuse_one(listener_.get()), 0);
  EXPECT_EQ(read_until_closed(first.get()), "SERVER_ERROR no room here\r\n");
  EXPECT_EQ(read_until_closed(second.get()), "SERVER_ERROR no room here\r\n");
}

// A refused client may ask the stats at once on another connection: the
// refusal is counted before the client can read it.
TEST_F(DescriptorReserveTest, CountsARefusalBeforeTheClientCanReadIt) {
  DescriptorReserve reserve{std::string(kTooMany)};
  Fd client = connect_client(address_);
  int counted = 0;
  bool readable_when_counted = true;
  EXPECT_EQ(reserve.refuse_one(listener_.get(),
                               [&] {
                                 ++counted;
                                 readable_when_counted = !still_waiting(client.get());
                               }),
            1);
  EXPECT_EQ(counted, 1);
  EXPECT_FALSE(readable_when_counted) << "the client could read its refusal before it was counted";
  EXPECT_EQ(read_until_closed(client.get()), kTooMany);
  EXPECT_EQ(reserve.refuse_one(listener_.get(), [&] { ++counted; }), 0);
  EXPECT_EQ(counted, 1) << "counted with nobody refused";
}

TEST_F(DescriptorReserveTest, RefusesClientsAgainAndAgainWhenNoDescriptorIsLeft) {
  DescriptorReserve reserve{std::string(kTooMany)};
  std::vector<Fd> clients;
  for (int i = 0; i < 3; ++i) clients.push_back(connect_client(address_, "version\r\n"));
  {
    DescriptorsExhausted exhausted;
    // Accepting needs a descriptor, and only the reserve's is there. It
    // is taken back at once: none is left free after each call, for a
    // worker thread to take in the reserve's place.
    for (int i = 0; i < 3; ++i) {
      EXPECT_EQ(reserve.refuse_one(listener_.get()), 1) << "client " << i;
      EXPECT_FALSE(descriptor_free()) << "client " << i;
    }
    EXPECT_EQ(reserve.refuse_one(listener_.get()), 0);
    EXPECT_FALSE(descriptor_free());
  }
  for (Fd& c : clients) EXPECT_EQ(read_until_closed(c.get()), kTooMany);
}

TEST_F(DescriptorReserveTest, WithoutItsDescriptorItCannotHelpUntilOneIsFree) {
  Fd client = connect_client(address_);
  {
    DescriptorsExhausted exhausted;
    // Made with no descriptor free: it holds none.
    DescriptorReserve reserve{std::string(kTooMany)};
    EXPECT_EQ(reserve.refuse_one(listener_.get()), -1);
    EXPECT_TRUE(still_waiting(client.get()));  // neither refused nor dropped
    exhausted.end();
    // A descriptor is free now: it takes one and refuses with it.
    EXPECT_EQ(reserve.refuse_one(listener_.get()), 1);
  }
  EXPECT_EQ(read_until_closed(client.get()), kTooMany);
}

TEST_F(DescriptorReserveTest, AnAcceptThatFailsOtherwiseCannotHelpButKeepsTheReserve) {
  DescriptorReserve reserve{std::string(kTooMany)};
  Fd not_listening(socket(AF_INET, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0));
  ASSERT_GE(not_listening.get(), 0);
  EXPECT_EQ(reserve.refuse_one(not_listening.get()), -1);  // EINVAL: not a listener
  // The reserve was taken back: it still refuses while no descriptor is free.
  Fd client = connect_client(address_);
  {
    DescriptorsExhausted exhausted;
    EXPECT_EQ(reserve.refuse_one(listener_.get()), 1);
  }
  EXPECT_EQ(read_until_closed(client.get()), kTooMany);
}

}  // namespace
}  // namespace memshard::proxy
