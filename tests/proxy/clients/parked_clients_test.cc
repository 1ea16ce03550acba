// ParkedClients (proxy/parked_clients.h) on real sockets and a real libevent
// loop: a parked socket wakes on bytes and on EOF with its bytes unread,
// parks and wakes again however often, take_if sees idle times that are
// never overstated, and what is still parked is closed with the set. Loops
// are bounded by iteration budgets; nothing asserts how long something took.
#include "proxy/clients/parked_clients.h"

#include <event2/event.h>
#include <fcntl.h>
#include <gtest/gtest.h>
#include <sys/epoll.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <memory>
#include <string>
#include <vector>

namespace memshard::proxy {
namespace {

uint64_t monotonic_usec() {
  timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return static_cast<uint64_t>(ts.tv_sec) * 1'000'000 + static_cast<uint64_t>(ts.tv_nsec) / 1000;
}

// Whether any epoll set of this process watches `fd` for input, as the
// kernel lists it in /proc/self/fdinfo ("tfd: N events: MASK ...").
bool watched_for_input(int fd) {
  for (int set = 0; set < 1024; ++set) {
    char link[64], target[64];
    std::snprintf(link, sizeof link, "/proc/self/fd/%d", set);
    ssize_t n = readlink(link, target, sizeof target - 1);
    if (n <= 0 || std::string(target, static_cast<size_t>(n)) != "anon_inode:[eventpoll]") continue;
    std::snprintf(link, sizeof link, "/proc/self/fdinfo/%d", set);
    std::ifstream info(link);
    for (std::string line; std::getline(info, line);) {
      int tfd = -1;
      unsigned events = 0;
      if (std::sscanf(line.c_str(), "tfd: %d events: %x", &tfd, &events) == 2 && tfd == fd &&
          (events & EPOLLIN) != 0)
        return true;
    }
  }
  return false;
}

class ParkedClientsTest : public testing::Test {
 protected:
  ParkedClientsTest() {
    parked_ = std::make_unique<ParkedClients>(
        base_, [this](ParkedClients::Entry e) { woken_.push_back(std::move(e)); });
    // A tick ends each EVLOOP_ONCE even when nothing is ready.
    tick_ = event_new(
        base_, -1, EV_PERSIST, [](evutil_socket_t, short, void*) {}, nullptr);
    timeval tv{0, 10'000};
    event_add(tick_, &tv);
  }
  ~ParkedClientsTest() override {
    for (auto& e : woken_) close(e.fd);
    parked_.reset();
    for (int fd : peers_) close(fd);
    event_free(tick_);
    event_base_free(base_);
  }

  // A connected pair: returns the end to park; the test keeps the peer.
  int pair(int& peer) {
    int fds[2];
    EXPECT_EQ(socketpair(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0, fds), 0)
        << strerror(errno);
    peers_.push_back(fds[1]);
    peer = fds[1];
    return fds[0];
  }

  bool run_until_woken(size_t n) {
    for (int i = 0; i < 500 && woken_.size() < n; ++i) event_base_loop(base_, EVLOOP_ONCE);
    return woken_.size() >= n;
  }

  std::shared_ptr<const ClientOrigin> origin_ = std::make_shared<const ClientOrigin>(ClientOrigin{
      "main", std::make_shared<ClientCount>(std::make_shared<std::atomic<uint32_t>>(0)),
      std::make_shared<PoolStats>()});
  event_base* base_ = event_base_new();
  event* tick_ = nullptr;
  std::unique_ptr<ParkedClients> parked_;
  std::vector<ParkedClients::Entry> woken_;
  std::vector<int> peers_;
};

TEST_F(ParkedClientsTest, BytesWakeTheirSocketAloneAndStayUnread) {
  int peers[3];
  int fds[3];
  uint64_t now = monotonic_usec();
  for (int i = 0; i < 3; ++i) {
    fds[i] = pair(peers[i]);
    ASSERT_TRUE(parked_->park(fds[i], origin_, now));
  }
  EXPECT_EQ(parked_->size(), 3u);
  for (int i = 0; i < 5; ++i) event_base_loop(base_, EVLOOP_ONCE);
  EXPECT_TRUE(woken_.empty()) << "woken with nothing sent";

  ASSERT_EQ(send(peers[1], "get a\r\n", 7, 0), 7);
  ASSERT_TRUE(run_until_woken(1));
  ASSERT_EQ(woken_.size(), 1u);
  EXPECT_EQ(woken_[0].fd, fds[1]);
  EXPECT_EQ(woken_[0].origin, origin_);
  EXPECT_EQ(parked_->size(), 2u);
  char buf[16];
  ASSERT_EQ(recv(fds[1], buf, sizeof(buf), 0), 7) << "the request must be left for the connection";
  EXPECT_EQ(std::string(buf, 7), "get a\r\n");
  // No longer watched by the set: more bytes do not wake it again.
  ASSERT_EQ(send(peers[1], "x", 1, 0), 1);
  for (int i = 0; i < 5; ++i) event_base_loop(base_, EVLOOP_ONCE);
  EXPECT_EQ(woken_.size(), 1u);
}

// A woken socket's registration stays in the set, disarmed (one-shot), so
// that waking costs no system call to remove it: parking it again re-arms
// it, whether the set still knows it is there, has forgotten (shrink), or
// the socket was closed and its number reused.
TEST_F(ParkedClientsTest, AWokenSocketParksAndWakesAgain) {
  int peer;
  int fd = pair(peer);
  char buf[16];
  for (int round = 0; round < 3; ++round) {
    SCOPED_TRACE(round);
    ASSERT_TRUE(parked_->park(fd, origin_, monotonic_usec())) << strerror(errno);
    for (int i = 0; i < 5; ++i) event_base_loop(base_, EVLOOP_ONCE);
    EXPECT_TRUE(woken_.empty()) << "woken with nothing sent";
    EXPECT_TRUE(watched_for_input(fd));
    ASSERT_EQ(send(peer, "get a\r\n", 7, 0), 7);
    ASSERT_TRUE(run_until_woken(1));
    EXPECT_EQ(woken_[0].fd, fd);
    EXPECT_EQ(parked_->size(), 0u);
    woken_.clear();
    // Bytes that come while it is not parked wake nothing (nor keep the
    // set readable: it is no longer armed)...
    EXPECT_FALSE(watched_for_input(fd));
    ASSERT_EQ(send(peer, "x", 1, 0), 1);
    for (int i = 0; i < 5; ++i) event_base_loop(base_, EVLOOP_ONCE);
    EXPECT_TRUE(woken_.empty()) << "a woken socket must not wake again until parked";
    ASSERT_EQ(recv(fd, buf, sizeof buf, 0), 8);
    // ...and the second round parks it with the set's mark forgotten.
    if (round == 1) parked_->shrink();
  }
  // Bytes already there when it parks wake it at once.
  ASSERT_EQ(send(peer, "y", 1, 0), 1);
  ASSERT_TRUE(parked_->park(fd, origin_, monotonic_usec()));
  ASSERT_TRUE(run_until_woken(1));
  EXPECT_EQ(woken_[0].fd, fd);
  woken_.clear();
  ASSERT_EQ(recv(fd, buf, sizeof buf, 0), 1);

  // Closed while its registration was disarmed in the set, and its number
  // taken by another socket: that one parks and wakes as a new one.
  close(fd);
  int other_peer;
  int other = pair(other_peer);
  if (other != fd) {  // the lowest free number is usually fd's own
    ASSERT_EQ(dup3(other, fd, O_CLOEXEC), fd) << strerror(errno);
    close(other);
  }
  ASSERT_TRUE(parked_->park(fd, origin_, monotonic_usec())) << strerror(errno);
  for (int i = 0; i < 5; ++i) event_base_loop(base_, EVLOOP_ONCE);
  EXPECT_TRUE(woken_.empty());
  ASSERT_EQ(send(other_peer, "get b\r\n", 7, 0), 7);
  ASSERT_TRUE(run_until_woken(1));
  EXPECT_EQ(woken_[0].fd, fd);
  ASSERT_EQ(recv(fd, buf, sizeof buf, 0), 7);
}

TEST_F(ParkedClientsTest, EofWakesTheSocket) {
  int peer;
  int fd = pair(peer);
  ASSERT_TRUE(parked_->park(fd, origin_, monotonic_usec()));
  shutdown(peer, SHUT_WR);
  ASSERT_TRUE(run_until_woken(1));
  EXPECT_EQ(woken_[0].fd, fd);
  char c;
  EXPECT_EQ(recv(fd, &c, 1, 0), 0) << "EOF is for the connection to read";
}

TEST_F(ParkedClientsTest, TakeIfSeesIdleTimesNeverOverstated) {
  uint64_t now = monotonic_usec();
  int peer_a, peer_b;
  int a = pair(peer_a), b = pair(peer_b);
  // a: last input 5 s ago (and a fraction of a ms); b: 4 s ago.
  ASSERT_TRUE(parked_->park(a, origin_, now - 5'000'400));
  ASSERT_TRUE(parked_->park(b, origin_, now - 4'000'000));
  std::vector<uint64_t> seen;
  auto none = parked_->take_if(now, [&](const ParkedClients::View& v) {
    seen.push_back(v.idle_ms);
    EXPECT_EQ(&v.origin, origin_.get());
    return false;
  });
  EXPECT_TRUE(none.empty());
  ASSERT_EQ(seen.size(), 2u);
  // Whole milliseconds, rounded towards less idle: a timeout is never early.
  EXPECT_TRUE(seen[0] == 5000 || seen[0] == 4999) << seen[0] << " ms for 5000.4 ms idle";
  EXPECT_TRUE(seen[1] == 4000 || seen[1] == 3999) << seen[1] << " ms for 4000 ms idle";

  auto taken =
      parked_->take_if(now, [](const ParkedClients::View& v) { return v.idle_ms >= 4500; });
  ASSERT_EQ(taken.size(), 1u);
  EXPECT_EQ(taken[0].fd, a);
  EXPECT_EQ(taken[0].origin, origin_);
  EXPECT_EQ(parked_->size(), 1u);
  close(taken[0].fd);

  // A socket parked this very millisecond is idle 0 ms, not 2^32.
  int peer_c;
  int c = pair(peer_c);
  ASSERT_TRUE(parked_->park(c, origin_, now));
  auto fresh = parked_->take_if(
      now, [&](const ParkedClients::View& v) { return v.fd == c && v.idle_ms > 0; });
  EXPECT_TRUE(fresh.empty());
}

TEST_F(ParkedClientsTest, TheSetHoldsItsOriginsOnlyWhileSocketsAreParked) {
  long alone = origin_.use_count();
  int peer;
  int fd = pair(peer);
  ASSERT_TRUE(parked_->park(fd, origin_, monotonic_usec()));
  EXPECT_GT(origin_.use_count(), alone);
  auto all = parked_->take_if(monotonic_usec(), [](const ParkedClients::View&) { return true; });
  ASSERT_EQ(all.size(), 1u);
  all.clear();
  EXPECT_EQ(origin_.use_count(), alone);
  close(fd);
}

TEST_F(ParkedClientsTest, WhatIsStillParkedIsClosedWithTheSet) {
  int peer;
  int fd = pair(peer);
  ASSERT_TRUE(parked_->park(fd, origin_, monotonic_usec()));
  parked_.reset();
  char c;
  EXPECT_EQ(recv(peer, &c, 1, 0), 0) << "the parked socket was not closed";
}

TEST_F(ParkedClientsTest, ASocketTheKernelRefusesStaysTheCallers) {
  // An epoll set takes no regular file.
  int file = open("/proc/self/stat", O_RDONLY | O_CLOEXEC);
  ASSERT_GE(file, 0);
  EXPECT_FALSE(parked_->park(file, origin_, monotonic_usec()));
  EXPECT_EQ(errno, EPERM);
  EXPECT_EQ(parked_->size(), 0u);
  EXPECT_EQ(close(file), 0) << "the refused descriptor must still be open";
}

}  // namespace
}  // namespace memshard::proxy
