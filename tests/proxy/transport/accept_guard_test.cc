// AcceptGuard (proxy/transport/accept_guard.h) on a real evconnlistener on
// 127.0.0.1 and a real libevent loop: clients go to the listener's own
// callback as long as descriptors last; when they run out, waiting clients
// are refused with the reserve's text and counted, or, without a reserve
// to refuse with, the listener pauses for AcceptGuard::kPauseMs and tries
// again; the warnings reach the log throttled, with their counts.
//
// The process runs out of descriptors for real (DescriptorsExhausted,
// with RLIMIT_NOFILE lowered). Every wait is bounded (TestLoop); the pause
// is checked against a mark of the same loop, never by measuring time.
#include "proxy/transport/accept_guard.h"

#include <event2/listener.h>
#include <fcntl.h>
#include <gtest/gtest.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cstdint>
#include <cstdlib>
#include <filesystem>
#include <memory>
#include <regex>
#include <string>
#include <vector>

#include "proxy/support/log.h"
#include "tests/proxy/support/test_loop.h"
#include "tests/proxy/transport/descriptors_exhausted.h"
#include "tests/proxy/transport/loopback_client.h"
#include "tests/proxy/transport/test_sockets.h"

namespace memshard::proxy {
namespace {

using test_fds::DescriptorsExhausted;
using test_loop::TestLoop;
using test_sockets::connect_client;
using test_sockets::Fd;
using test_sockets::read_until_closed;
using test_sockets::still_waiting;

using test_fds::kTooMany;

// One warning line of the guard: what it summed since the last one.
struct GuardReport {
  uint64_t refused = 0;
  uint64_t pauses = 0;
  std::string said;  // the refusal, up to its \r\n
  int pause_ms = 0;
};

uint64_t refused_in(const std::vector<GuardReport>& reports) {
  uint64_t n = 0;
  for (const GuardReport& r : reports) n += r.refused;
  return n;
}

// The log, sent to a file of the test's own and read through a descriptor
// opened beforehand (the test runs out of descriptors).
class LogFile {
 public:
  LogFile() {
    char tmpl[] = "/tmp/memshard-accept-guard-XXXXXX";
    EXPECT_NE(mkdtemp(tmpl), nullptr);
    dir_ = tmpl;
    std::string path = dir_ + "/memshard.log";
    EXPECT_TRUE(log_open(path));
    read_fd_ = Fd(open(path.c_str(), O_RDONLY | O_CLOEXEC));
  }
  ~LogFile() {
    log_open("/dev/stderr");
    std::filesystem::remove_all(dir_);
  }
  std::string text() const {
    std::string all;
    char buf[4096];
    for (off_t at = 0;;) {
      ssize_t n = pread(read_fd_.get(), buf, sizeof(buf), at);
      if (n <= 0) break;
      all.append(buf, static_cast<size_t>(n));
      at += n;
    }
    return all;
  }
  std::vector<GuardReport> reports() const {
    static const std::regex line(
        R"re(test listener: accept: [^:]+: (\d+) client\(s\) refused with "([^"]*)", (\d+) pause\(s\) of (\d+) ms)re");
    std::vector<GuardReport> out;
    const std::string all = text();
    for (std::sregex_iterator m(all.begin(), all.end(), line), end; m != end; ++m) {
      out.push_back({std::stoull((*m)[1].str()), std::stoull((*m)[3].str()), (*m)[2].str(),
                     std::stoi((*m)[4].str())});
    }
    return out;
  }

 private:
  std::string dir_;
  Fd read_fd_;
};

class AcceptGuardTest : public ::testing::Test {
 protected:
  void SetUp() override {
    sockaddr_in sin{};
    sin.sin_family = AF_INET;
    sin.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    listener_ =
        evconnlistener_new_bind(loop_.base(), &AcceptGuardTest::on_accept, this,
                                LEV_OPT_CLOSE_ON_FREE | LEV_OPT_REUSEABLE | LEV_OPT_CLOSE_ON_EXEC,
                                16, reinterpret_cast<sockaddr*>(&sin), sizeof(sin));
    ASSERT_NE(listener_, nullptr);
    address_.length = sizeof(address_.storage);
    ASSERT_EQ(getsockname(evconnlistener_get_fd(listener_),
                          reinterpret_cast<sockaddr*>(&address_.storage), &address_.length),
              0);
  }
  void TearDown() override {
    guard_.reset();
    evconnlistener_free(listener_);
    for (int fd : accepted_) close(fd);
  }

  // The reserve (taking a descriptor if one is free) and the guard on the
  // listener.
  void guard_listener() {
    reserve_ = std::make_unique<DescriptorReserve>(std::string(kTooMany));
    guard_ =
        std::make_unique<AcceptGuard>(loop_.base(), listener_, &AcceptGuardTest::on_accept, this,
                                      *reserve_, "test listener", [this] { ++refused_; });
  }

  // The listener's own callback: the guard must hand it every client it
  // accepts, with the listener's own argument.
  static void on_accept(evconnlistener*, evutil_socket_t fd, sockaddr* addr, int, void* arg) {
    auto* self = static_cast<AcceptGuardTest*>(arg);
    self->accepted_.push_back(fd);
    self->accepted_family_ok_ &= addr != nullptr && addr->sa_family == AF_INET;
  }

  LogFile log_;
  TestLoop loop_;
  evconnlistener* listener_ = nullptr;
  SocketAddress address_;
  std::unique_ptr<DescriptorReserve> reserve_;
  std::unique_ptr<AcceptGuard> guard_;
  std::vector<int> accepted_;
  bool accepted_family_ok_ = true;
  int refused_ = 0;
};

TEST_F(AcceptGuardTest, ClientsGoToTheListenersOwnCallbackWhileDescriptorsLast) {
  guard_listener();
  Fd a = connect_client(address_);
  Fd b = connect_client(address_);
  ASSERT_TRUE(loop_.run_until([&] { return accepted_.size() == 2; }));
  EXPECT_TRUE(accepted_family_ok_);
  EXPECT_EQ(refused_, 0);
  EXPECT_TRUE(still_waiting(a.get()));  // accepted, not refused
  EXPECT_TRUE(log_.reports().empty());
}

TEST_F(AcceptGuardTest, WithTheGuardGoneTheListenerHasItsOwnCallbackBack) {
  guard_listener();
  guard_.reset();
  Fd a = connect_client(address_);
  ASSERT_TRUE(loop_.run_until([&] { return accepted_.size() == 1; }));
}

TEST_F(AcceptGuardTest, OutOfDescriptorsWaitingClientsAreRefusedCountedAndLogged) {
  guard_listener();
  std::vector<Fd> clients;
  clients.push_back(connect_client(address_, "get k\r\n"));
  clients.push_back(connect_client(address_));
  clients.push_back(connect_client(address_, "version\r\n"));
  {
    DescriptorsExhausted exhausted;
    ASSERT_TRUE(loop_.run_until([&] { return refused_ == 3; })) << refused_;
    EXPECT_TRUE(accepted_.empty());
    // The first refusal is logged at once, those that followed within its
    // second when the second is over: every one is counted in the end.
    ASSERT_TRUE(loop_.run_until([&] { return refused_in(log_.reports()) == 3; })) << log_.text();
  }
  for (Fd& c : clients) EXPECT_EQ(read_until_closed(c.get()), kTooMany);
  auto reports = log_.reports();
  ASSERT_GE(reports.size(), 2u) << log_.text();
  EXPECT_EQ(reports[0].refused, 1u);
  for (const GuardReport& r : reports) {
    EXPECT_GE(r.refused, 1u);
    EXPECT_EQ(r.pauses, 0u);
    EXPECT_EQ(r.said, "ERROR Too many open connections");
  }
  EXPECT_NE(log_.text().find("Too many open files"), std::string::npos) << log_.text();
  // Never paused: with descriptors back, the next client is accepted.
  Fd next = connect_client(address_);
  ASSERT_TRUE(loop_.run_until([&] { return accepted_.size() == 1; }));
  EXPECT_EQ(refused_, 3);
}

TEST_F(AcceptGuardTest, WithNoReserveToRefuseWithTheListenerPausesThenTakesTheClient) {
  Fd client = connect_client(address_);
  auto exhausted = std::make_unique<DescriptorsExhausted>();
  guard_listener();  // the reserve, made with none free, holds none
  // Armed before the pause begins, due halfway through it.
  size_t accepted_at_halfway = 1;
  TestLoop::Mark halfway(loop_, AcceptGuard::kPauseMs * 1000 / 2,
                         [&] { accepted_at_halfway = accepted_.size(); });
  ASSERT_TRUE(loop_.run_until([&] { return !log_.reports().empty(); }));
  // Descriptors are back at once, and the client still waits in the
  // backlog: a listener that had not paused would accept it now.
  exhausted.reset();
  ASSERT_TRUE(loop_.run_until(halfway));
  EXPECT_EQ(accepted_at_halfway, 0u) << "accepted during the pause";
  // The pause ends, and the listener takes the client.
  ASSERT_TRUE(loop_.run_until([&] { return accepted_.size() == 1; }));
  EXPECT_EQ(refused_, 0);
  EXPECT_TRUE(still_waiting(client.get()));  // accepted, not refused
  auto reports = log_.reports();
  ASSERT_EQ(reports.size(), 1u) << log_.text();
  EXPECT_EQ(reports[0].refused, 0u);
  EXPECT_EQ(reports[0].pauses, 1u);
  EXPECT_EQ(reports[0].pause_ms, AcceptGuard::kPauseMs);
}

TEST_F(AcceptGuardTest, TheListenerPausesAgainAndAgainWhileNoDescriptorIsFree) {
  Fd client = connect_client(address_);
  {
    DescriptorsExhausted exhausted;
    guard_listener();  // the reserve holds none
    // The first pause is logged at once; the second line sums those that
    // followed it within a second, each after a pause ended and the
    // listener tried again.
    ASSERT_TRUE(loop_.run_until([&] { return log_.reports().size() == 2; })) << log_.text();
    auto reports = log_.reports();
    EXPECT_EQ(reports[0].pauses, 1u);
    EXPECT_GE(reports[1].pauses, 1u);
    EXPECT_EQ(reports[0].refused + reports[1].refused, 0u);
    EXPECT_TRUE(accepted_.empty());
    EXPECT_TRUE(still_waiting(client.get()));  // never refused nor dropped
  }
}

// The reserve can be lost: refuse_one frees it for accept() and takes it
// back after, and a worker thread may open a descriptor in between. The
// tests below lose it by making it while none is free.

TEST_F(AcceptGuardTest, AReserveLostInAShortageIsBackForTheNext) {
  Fd first = connect_client(address_);
  auto exhausted = std::make_unique<DescriptorsExhausted>();
  guard_listener();
  ASSERT_TRUE(loop_.run_until([&] { return !log_.reports().empty(); }));  // paused
  // The shortage ends: the first client gets in.
  exhausted.reset();
  ASSERT_TRUE(loop_.run_until([&] { return accepted_.size() == 1; }));
  // The next shortage: the client that comes then must be told, not left
  // waiting without a word as long as it lasts.
  Fd second = connect_client(address_);
  exhausted = std::make_unique<DescriptorsExhausted>();
  EXPECT_TRUE(loop_.run_until([&] { return refused_ == 1; }))
      << "still no reserve: the client waits, unrefused";
  exhausted.reset();
  EXPECT_EQ(read_until_closed(second.get()), kTooMany);
}

TEST_F(AcceptGuardTest, AReserveLostAsAShortageEndedIsBackOnceAClientGetsIn) {
  {
    DescriptorsExhausted exhausted;
    guard_listener();  // the reserve holds none, and no pause follows
  }
  Fd first = connect_client(address_);
  ASSERT_TRUE(loop_.run_until([&] { return accepted_.size() == 1; }));
  // The next shortage: the client that comes then must be told.
  Fd second = connect_client(address_);
  auto exhausted = std::make_unique<DescriptorsExhausted>();
  EXPECT_TRUE(loop_.run_until([&] { return refused_ == 1; }))
      << "still no reserve: the client waits, unrefused";
  exhausted.reset();
  EXPECT_EQ(read_until_closed(second.get()), kTooMany);
}

}  // namespace
}  // namespace memshard::proxy
