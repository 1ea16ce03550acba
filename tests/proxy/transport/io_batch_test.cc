// IoBatch (proxy/transport/io_batch.h) on real Unix socket pairs: a
// submission's sends arrive whole, each on its socket, its receives fill
// their iovecs, and each result is its own operation's, in the order added;
// a full or empty socket answers -EAGAIN instead of waiting, a send takes
// what fits, errors stay with their operation; kMaxOps per submission,
// submission after submission; and, where the kernel refuses io_uring, a
// batch that says so instead of failing later.
#include "proxy/transport/io_batch.h"

#include <gtest/gtest.h>
#include <sys/socket.h>
#include <sys/uio.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdint>
#include <cstring>
#include <span>
#include <stdexcept>
#include <string>
#include <vector>

#include "tests/proxy/transport/descriptors_exhausted.h"
#include "tests/proxy/transport/test_sockets.h"

namespace memshard::proxy {
namespace {

using test_sockets::Fd;

struct Pair {
  Fd ours, peer;
};

Pair socket_pair() {
  int fds[2] = {-1, -1};
  EXPECT_EQ(socketpair(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0, fds), 0)
      << strerror(errno);
  return {Fd(fds[0]), Fd(fds[1])};
}

std::vector<Pair> socket_pairs(size_t n) {
  std::vector<Pair> pairs;
  for (size_t i = 0; i < n; ++i) pairs.push_back(socket_pair());
  return pairs;
}

// Each byte a hash of its offset and a seed: a lost, repeated or
// misplaced piece shows.
std::string pattern(size_t n, uint32_t seed) {
  std::string s(n, '\0');
  for (size_t i = 0; i < n; ++i) {
    uint32_t x = (static_cast<uint32_t>(i) + seed * 7919u) * 2654435761u;
    s[i] = static_cast<char>((x ^ (x >> 15)) & 0xff);
  }
  return s;
}

// Everything the socket holds now.
std::string drain(int fd) {
  std::string out;
  char buf[64 * 1024];
  for (int i = 0; i < 10'000; ++i) {
    ssize_t n = recv(fd, buf, sizeof(buf), MSG_DONTWAIT);
    if (n <= 0) break;
    out.append(buf, static_cast<size_t>(n));
  }
  return out;
}

// `data` cut into `pieces` iovecs of uneven sizes.
std::vector<iovec> cut(std::string& data, size_t pieces) {
  std::vector<iovec> iov;
  size_t at = 0;
  for (size_t k = 0; k < pieces; ++k) {
    size_t len = k + 1 == pieces ? data.size() - at : (data.size() - at) / (pieces - k + 1);
    iov.push_back({data.data() + at, len});
    at += len;
  }
  return iov;
}

class IoBatchTest : public ::testing::Test {
 protected:
  void SetUp() override {
    if (!batch_.available())
      GTEST_SKIP() << "io_uring refused here: " << strerror(batch_.setup_error());
    EXPECT_EQ(batch_.setup_error(), 0);
  }
  IoBatch batch_;
};

TEST_F(IoBatchTest, ASubmissionOfSendsArrivesWholeEachOnItsSocket) {
  constexpr size_t kSockets = IoBatch::kMaxOps;  // a full submission
  auto pairs = socket_pairs(kSockets);
  std::vector<std::string> data;
  std::vector<std::vector<iovec>> iovs;
  for (size_t i = 0; i < kSockets; ++i)
    data.push_back(pattern(100 + 37 * i, static_cast<uint32_t>(i)));
  for (size_t i = 0; i < kSockets; ++i) iovs.push_back(cut(data[i], 1 + i % 4));
  for (size_t i = 0; i < kSockets; ++i)
    batch_.add_send(pairs[i].ours.get(), iovs[i].data(), iovs[i].size());
  std::span<const int> results = batch_.submit();
  ASSERT_EQ(results.size(), kSockets);
  for (size_t i = 0; i < kSockets; ++i) {
    EXPECT_EQ(results[i], static_cast<int>(data[i].size())) << "send " << i;
    EXPECT_TRUE(drain(pairs[i].peer.get()) == data[i]) << "socket " << i;
  }
  EXPECT_TRUE(batch_.available());
}

TEST_F(IoBatchTest, ReceivesFillTheirIovecsAndReportEmptyAndClosedSockets) {
  auto pairs = socket_pairs(4);
  const std::string a = pattern(3000, 1), b = pattern(10, 2);
  ASSERT_EQ(send(pairs[0].peer.get(), a.data(), a.size(), 0), static_cast<ssize_t>(a.size()));
  ASSERT_EQ(send(pairs[2].peer.get(), b.data(), b.size(), 0), static_cast<ssize_t>(b.size()));
  pairs[3].peer.reset();  // closed: a receive reads the end
  // pairs[1]: nothing sent, nothing to read.
  std::vector<std::string> space(4, std::string(4096, '\0'));
  std::vector<std::vector<iovec>> iovs;
  for (std::string& s : space) iovs.push_back(cut(s, 3));  // scattered over three pieces
  for (size_t i = 0; i < 4; ++i)
    batch_.add_recv(pairs[i].ours.get(), iovs[i].data(), iovs[i].size());
  std::span<const int> results = batch_.submit();
  ASSERT_EQ(results.size(), 4u);
  EXPECT_EQ(results[0], static_cast<int>(a.size()));
  EXPECT_EQ(results[1], -EAGAIN);  // did not wait for data
  EXPECT_EQ(results[2], static_cast<int>(b.size()));
  EXPECT_EQ(results[3], 0);
  EXPECT_TRUE(space[0].substr(0, a.size()) == a);
  EXPECT_EQ(space[2].substr(0, b.size()), b);
}

TEST_F(IoBatchTest, ASendTakesWhatFitsAndTheNextFindsTheSocketFull) {
  Pair full = socket_pair();
  Pair other = socket_pair();
  std::string big = pattern(8 << 20, 3);  // more than any socket buffer
  std::string more = pattern(100, 4);
  std::string small = pattern(500, 5);
  iovec big_iov{big.data(), big.size()};
  iovec more_iov{more.data(), more.size()};
  iovec small_iov{small.data(), small.size()};
  batch_.add_send(full.ours.get(), &big_iov, 1);
  batch_.add_send(full.ours.get(), &more_iov, 1);
  batch_.add_send(other.ours.get(), &small_iov, 1);
  std::span<const int> results = batch_.submit();
  ASSERT_EQ(results.size(), 3u);
  ASSERT_GT(results[0], 0);
  EXPECT_LT(results[0], static_cast<int>(big.size()));
  EXPECT_EQ(results[1], -EAGAIN);                         // did not wait for room
  EXPECT_EQ(results[2], static_cast<int>(small.size()));  // a full socket holds up no other
  // The bytes that went are the front of the data, and the rest goes as
  // the peer reads, batch after batch (each submission a fresh set of
  // results).
  std::string got = drain(full.peer.get());
  EXPECT_EQ(got.size(), static_cast<size_t>(results[0]));
  size_t sent = static_cast<size_t>(results[0]);
  for (int rounds = 0; sent < big.size() && rounds < 100'000; ++rounds) {
    iovec rest{big.data() + sent, big.size() - sent};
    batch_.add_send(full.ours.get(), &rest, 1);
    std::span<const int> r = batch_.submit();
    ASSERT_EQ(r.size(), 1u);
    ASSERT_TRUE(r[0] > 0 || r[0] == -EAGAIN) << strerror(-r[0]);
    if (r[0] > 0) sent += static_cast<size_t>(r[0]);
    got += drain(full.peer.get());
  }
  got += drain(full.peer.get());
  EXPECT_TRUE(got == big) << "got " << got.size() << " of " << big.size() << " bytes";
  EXPECT_EQ(drain(other.peer.get()), small);
}

TEST_F(IoBatchTest, AnErrorStaysWithItsOwnOperation) {
  Pair first = socket_pair();
  Pair gone = socket_pair();
  Pair last = socket_pair();
  gone.peer.reset();  // a send to it fails with EPIPE, and raises no SIGPIPE
  int bad_fd = dup(first.ours.get());
  ASSERT_GE(bad_fd, 0);
  close(bad_fd);  // a descriptor that is open no more
  std::string x = pattern(64, 6), y = pattern(65, 7), z = pattern(66, 8);
  std::string space(100, '\0');
  iovec xi{x.data(), x.size()}, yi{y.data(), y.size()}, zi{z.data(), z.size()};
  iovec si{space.data(), space.size()};
  batch_.add_send(first.ours.get(), &xi, 1);
  batch_.add_send(gone.ours.get(), &yi, 1);
  batch_.add_recv(bad_fd, &si, 1);
  batch_.add_send(last.ours.get(), &zi, 1);
  std::span<const int> results = batch_.submit();
  ASSERT_EQ(results.size(), 4u);
  EXPECT_EQ(results[0], static_cast<int>(x.size()));
  EXPECT_EQ(results[1], -EPIPE);
  EXPECT_EQ(results[2], -EBADF);
  EXPECT_EQ(results[3], static_cast<int>(z.size()));
  EXPECT_EQ(drain(first.peer.get()), x);
  EXPECT_EQ(drain(last.peer.get()), z);
  EXPECT_TRUE(batch_.available());  // failed operations do not cost the ring
}

TEST_F(IoBatchTest, TakesAtMostKMaxOpsBetweenSubmits) {
  Pair pair = socket_pair();
  char byte = 'x';
  iovec one{&byte, 1};
  for (size_t i = 0; i < IoBatch::kMaxOps; ++i) batch_.add_send(pair.ours.get(), &one, 1);
  EXPECT_THROW(batch_.add_send(pair.ours.get(), &one, 1), std::logic_error);
  std::span<const int> results = batch_.submit();
  ASSERT_EQ(results.size(), IoBatch::kMaxOps);  // the refused one was not queued
  for (int r : results) EXPECT_EQ(r, 1);
  EXPECT_EQ(drain(pair.peer.get()), std::string(IoBatch::kMaxOps, 'x'));
  // Room again after the submit.
  batch_.add_send(pair.ours.get(), &one, 1);
  EXPECT_EQ(batch_.submit().size(), 1u);
}

TEST_F(IoBatchTest, SubmittingNothingMakesNothing) {
  EXPECT_TRUE(batch_.submit().empty());
  EXPECT_TRUE(batch_.available());
}

TEST_F(IoBatchTest, FullSubmissionAfterFullSubmissionLosesNoCompletion) {
  // Many rounds of kMaxOps sends and receives: a completion left behind in
  // one round would be taken for another operation's in a later one, or
  // overflow the completion queue.
  constexpr size_t kPairs = IoBatch::kMaxOps / 2;
  auto pairs = socket_pairs(kPairs);
  for (uint32_t round = 0; round < 50; ++round) {
    std::vector<std::string> out, in(kPairs, std::string(512, '\0'));
    out.reserve(kPairs);  // the iovecs point into the strings: none may move
    std::vector<iovec> out_iov(kPairs), in_iov(kPairs);
    for (size_t i = 0; i < kPairs; ++i) {
      out.push_back(pattern(1 + (i * 13 + round) % 300, round * 1000 + static_cast<uint32_t>(i)));
      // What the receive half reads: sent by the peer beforehand.
      std::string peer_data =
          pattern(1 + (i + round) % 400, round * 2000 + static_cast<uint32_t>(i));
      ASSERT_EQ(send(pairs[i].peer.get(), peer_data.data(), peer_data.size(), 0),
                static_cast<ssize_t>(peer_data.size()));
      out_iov[i] = {out[i].data(), out[i].size()};
      in_iov[i] = {in[i].data(), in[i].size()};
    }
    for (size_t i = 0; i < kPairs; ++i) {
      batch_.add_send(pairs[i].ours.get(), &out_iov[i], 1);
      batch_.add_recv(pairs[i].ours.get(), &in_iov[i], 1);
    }
    std::span<const int> results = batch_.submit();
    ASSERT_EQ(results.size(), 2 * kPairs);
    for (size_t i = 0; i < kPairs; ++i) {
      std::string peer_data =
          pattern(1 + (i + round) % 400, round * 2000 + static_cast<uint32_t>(i));
      ASSERT_EQ(results[2 * i], static_cast<int>(out[i].size())) << "round " << round;
      ASSERT_EQ(results[2 * i + 1], static_cast<int>(peer_data.size())) << "round " << round;
      ASSERT_EQ(in[i].substr(0, peer_data.size()), peer_data) << "round " << round;
      ASSERT_EQ(drain(pairs[i].peer.get()), out[i]) << "round " << round;
    }
  }
  EXPECT_TRUE(batch_.available());
}

// Not a fixture test: it must make its batch while the process has no
// descriptor for the ring (as under a seccomp profile that forbids
// io_uring, the kernel refuses its setup).
TEST(IoBatchUnavailable, ABatchTheKernelRefusedSaysSoAndWhyAndTakesNothing) {
  if (!IoBatch().available()) GTEST_SKIP() << "io_uring refused here anyway";
  {
    test_fds::DescriptorsExhausted exhausted;
    IoBatch batch;
    EXPECT_FALSE(batch.available());
    EXPECT_EQ(batch.setup_error(), EMFILE);
    char byte = 'x';
    iovec one{&byte, 1};
    // The caller must write each socket itself: nothing is queued.
    EXPECT_THROW(batch.add_send(0, &one, 1), std::logic_error);
    EXPECT_THROW(batch.add_recv(0, &one, 1), std::logic_error);
    EXPECT_TRUE(batch.submit().empty());
  }
  // The refusal was this batch's alone.
  IoBatch later;
  EXPECT_TRUE(later.available());
  EXPECT_EQ(later.setup_error(), 0);
}

}  // namespace
}  // namespace memshard::proxy
