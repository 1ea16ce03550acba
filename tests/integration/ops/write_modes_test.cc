// Both ways a worker reads and writes its sockets (proxy/transport/stream.h,
// StreamLoop::Writes, batch_reads): batched in io_uring submissions, one for
// a loop iteration's reads and one for its writes (the default), and one
// system call per socket (--no-io-uring). Many clients send at once, so that
// each iteration has many sockets to write, with values large enough that
// the kernel takes some writes only in part; every reply must come back
// byte for byte. The startup line says which way the proxy writes.
// Where the kernel refuses io_uring (a container's seccomp profile, here
// tests/integration/ops/refuse_syscall.cc), the proxy says so and falls back
// to one system call per socket: at startup when the ring cannot be made, at the
// first submission when the ring is made but never takes one.
#include <gtest/gtest.h>

#include <memory>
#include <ostream>
#include <string>
#include <vector>

#include "ops_util.h"

namespace memshard::testing::ops {
namespace {

enum class Mode { batched, one_by_one, setup_refused, enter_refused };

const char* name_of(Mode mode) {
  switch (mode) {
    case Mode::batched:
      return "Batched";
    case Mode::one_by_one:
      return "OneByOne";
    case Mode::setup_refused:
      return "IoUringSetupRefused";
    case Mode::enter_refused:
      return "IoUringEnterRefused";
  }
  return "?";
}

void PrintTo(Mode mode, std::ostream* os) {
  *os << name_of(mode);
}

class WriteModes : public ::testing::TestWithParam<Mode> {
 protected:
  void SetUp() override {
    fleet_ = std::make_unique<Fleet>(2);
    port_ = free_port();
    log_ = dir_.path() + "/memshard.log";
    PoolSpec pool{"alpha", "127.0.0.1:" + std::to_string(port_), {}, fleet_->server_lines()};
    std::vector<std::string> extra = {"-o", log_, "--threads", "2"};
    if (GetParam() == Mode::one_by_one) extra.push_back("--no-io-uring");
    std::vector<std::string> launcher;
    if (GetParam() == Mode::setup_refused)
      launcher = {MEMSHARD_REFUSE_SYSCALL, "io_uring_setup"};
    else if (GetParam() == Mode::enter_refused)
      launcher = {MEMSHARD_REFUSE_SYSCALL, "io_uring_enter"};
    proxy_ = start_proxy(dir_, config_yaml({pool}), port_, extra, "", launcher);
    ASSERT_TRUE(wait_until([&] { return log().find(" started: ") != std::string::npos; })) << log();
  }

  std::string log() const { return read_file(log_); }

  TempDir dir_;
  std::unique_ptr<Fleet> fleet_;
  uint16_t port_ = 0;
  std::string log_;
  std::unique_ptr<Proxy> proxy_;
};

// A value that differs in every byte position and between keys.
std::string value_for(int client, int i) {
  size_t size = (i == 3) ? 300'000 : static_cast<size_t>(1 + client * 37 + i * 101);
  std::string v(size, '\0');
  for (size_t k = 0; k < size; ++k) v[k] = static_cast<char>('a' + (k * 7 + client + i) % 26);
  return v;
}

TEST_P(WriteModes, ManyClientsAtOnceGetEveryReplyIntact) {
  const std::string started = log().substr(log().find(" started: "));
  const bool refused_here = GetParam() != Mode::setup_refused &&
                            log().find("io_uring is not available") != std::string::npos;
  switch (GetParam()) {
    case Mode::batched:
    case Mode::enter_refused:
      if (refused_here) GTEST_SKIP() << "the kernel refuses io_uring here: " << log();
      EXPECT_NE(started.find("reads and writes batched (io_uring)"), std::string::npos) << started;
      break;
    case Mode::one_by_one:
      EXPECT_NE(started.find("reads and writes one system call per socket"), std::string::npos)
          << started;
      break;
    case Mode::setup_refused:
      EXPECT_NE(log().find("io_uring is not available (Operation not permitted)"),
                std::string::npos)
          << log();
      EXPECT_NE(started.find("reads and writes one system call per socket"), std::string::npos)
          << started;
      break;
  }

  constexpr int kClients = 24, kKeys = 8;
  auto key = [](int c, int i) { return "wm-" + std::to_string(c) + "-" + std::to_string(i); };
  std::vector<std::unique_ptr<RawClient>> clients;
  for (int c = 0; c < kClients; ++c) clients.push_back(std::make_unique<RawClient>(port_));

  // Every client sends all its sets before any reads a reply.
  for (int c = 0; c < kClients; ++c) {
    std::string sets;
    for (int i = 0; i < kKeys; ++i) {
      std::string v = value_for(c, i);
      sets += "set " + key(c, i) + " " + std::to_string(c) + " 0 " + std::to_string(v.size()) +
              "\r\n" + v + "\r\n";
    }
    clients[c]->send(sets);
  }
  std::string stored;
  for (int i = 0; i < kKeys; ++i) stored += "STORED\r\n";
  for (int c = 0; c < kClients; ++c)
    ASSERT_EQ(clients[c]->read_exact(stored.size()), stored) << "client " << c;

  // Then each asks for its own keys and a neighbour's, all before reading.
  std::vector<std::string> want(kClients);
  for (int c = 0; c < kClients; ++c) {
    int n = (c + 1) % kClients;
    std::string get = "get";
    for (int i = 0; i < kKeys; ++i) {
      get += " " + key(c, i) + " " + key(n, i);
      for (int owner : {c, n}) {
        std::string v = value_for(owner, i);
        want[c] += "VALUE " + key(owner, i) + " " + std::to_string(owner) + " " +
                   std::to_string(v.size()) + "\r\n" + v + "\r\n";
      }
    }
    want[c] += "END\r\n";
    clients[c]->send(get + "\r\n");
  }
  for (int c = 0; c < kClients; ++c) {
    std::string got = clients[c]->read_exact(want[c].size(), std::chrono::seconds(20));
    ASSERT_EQ(got.size(), want[c].size()) << "client " << c;
    EXPECT_TRUE(got == want[c]) << "client " << c << ": the reply differs";
  }
  // Reads and sends a refused submission carried were made one by one instead, as
  // the byte-exact replies above show. Each worker has its own ring and
  // says so once, when its ring first fails.
  const size_t warnings = count_of(log(), "io_uring stopped taking submissions");
  if (GetParam() == Mode::enter_refused) {
    EXPECT_GE(warnings, 1u) << log();
    EXPECT_LE(warnings, 2u) << "more than once per worker: " << log();
  } else {
    EXPECT_EQ(warnings, 0u) << log();
  }
}

INSTANTIATE_TEST_SUITE_P(Writes, WriteModes,
                         ::testing::Values(Mode::batched, Mode::one_by_one, Mode::setup_refused,
                                           Mode::enter_refused),
                         [](const ::testing::TestParamInfo<Mode>& param) {
                           return std::string(name_of(param.param));
                         });

}  // namespace
}  // namespace memshard::testing::ops
