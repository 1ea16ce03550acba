// A backend that is not a memcached server: a tiny fake (a listener thread
// in the test) answers memshard's requests with garbage, or closes in the
// middle of a reply. Only the requests on that connection may fail: the
// real servers' keys are answered, in order, and memshard keeps running.
#include <gtest/gtest.h>

#include <chrono>
#include <iostream>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "failure_util.h"

namespace memshard::testing::failures {
namespace {

using namespace std::chrono_literals;

constexpr std::string_view kInvalid = "SERVER_ERROR backend sent an invalid reply\r\n";
constexpr std::string_view kClosed = "SERVER_ERROR backend closed the connection\r\n";

struct Garbage {
  const char* name;
  // What the fake does with one request line; `key` is its first key.
  // Returns false to close the connection.
  bool (*answer)(int fd, FakeServer& self, const std::string& key);
  // Sent as soon as memshard connects, before any request.
  const char* greeting;
  std::string_view expected;  // memshard's reply to a request for a key on the fake
};

// Waits for memshard to close the connection (it must, after garbage).
bool linger(int fd, FakeServer& self) {
  std::string buffered, line;
  while (self.read_line(fd, buffered, line, 5s)) {
  }
  return false;
}

const Garbage kGarbage[] = {
    {"HelloWorld",
     [](int fd, FakeServer&, const std::string&) {
       FakeServer::send_all(fd, "HELLO WORLD\r\n");
       return true;
     },
     "", kInvalid},
    {"CloseMidValue",
     [](int fd, FakeServer&, const std::string& key) {
       FakeServer::send_all(fd, "VALUE " + key + " 0 100\r\nabc");
       return false;
     },
     "", kClosed},
    {"CloseWithoutAnswer", [](int, FakeServer&, const std::string&) { return false; }, "", kClosed},
    {"ValueForAKeyNotAsked",
     [](int fd, FakeServer&, const std::string&) {
       FakeServer::send_all(fd, "VALUE not-asked 0 1\r\nx\r\nEND\r\n");
       return true;
     },
     "", kInvalid},
    {"LineWithoutEndPast8KiB",
     [](int fd, FakeServer& self, const std::string&) {
       FakeServer::send_all(fd, std::string(20000, 'x'));
       return linger(fd, self);
     },
     "", kInvalid},
    {"BadValueHeader",
     [](int fd, FakeServer&, const std::string& key) {
       FakeServer::send_all(fd, "VALUE " + key + " zero 1\r\nx\r\nEND\r\n");
       return true;
     },
     "", kInvalid},
    // The data block is not followed by "\r\n": the bytes after the
    // announced length are not a line memcached could send.
    {"DataLongerThanAnnounced",
     [](int fd, FakeServer&, const std::string& key) {
       FakeServer::send_all(fd, "VALUE " + key + " 0 3\r\nabcdefgh\r\nEND\r\n");
       return true;
     },
     "", kInvalid},
    // Same, but what follows the short block happens to parse as END: a
    // proxy that does not check the block's "\r\n" forwards a broken frame.
    {"DataNotTerminatedByCrLf",
     [](int fd, FakeServer&, const std::string& key) {
       FakeServer::send_all(fd, "VALUE " + key + " 0 3\r\nabcdeEND\r\n");
       return true;
     },
     "", kInvalid},
    {"UnsolicitedReplyOnConnect",
     [](int fd, FakeServer&, const std::string&) {
       FakeServer::send_all(fd, "END\r\n");
       return true;
     },
     "STORED\r\n", kInvalid},
    // 4 GB announced (more than the pool's item_size_max): refused at once,
    // before memshard buffers any of it.
    {"HugeValueNeverFinished",
     [](int fd, FakeServer& self, const std::string& key) {
       FakeServer::send_all(fd, "VALUE " + key + " 0 4000000000\r\n");
       std::string chunk(1 << 20, 'z');
       for (int i = 0; i < 32 && !self.stopping(); ++i) FakeServer::send_all(fd, chunk);
       return linger(fd, self);
     },
     "", kInvalid},
};

// ctest and gtest name a case by its name, not by its bytes.
void PrintTo(const Garbage& g, std::ostream* os) {
  *os << g.name;
}

class GarbageBackend : public ::testing::TestWithParam<Garbage> {};

TEST_P(GarbageBackend, FailsOnlyItsOwnRequests) {
  const Garbage& g = GetParam();
  FakeServer fake([&g](int fd, FakeServer& self) {
    if (*g.greeting) FakeServer::send_all(fd, g.greeting);
    std::string buffered, line;
    while (self.read_line(fd, buffered, line)) {
      // "get k1 k2\r\n", "mg k v\r\n": the first key is the second token.
      size_t a = line.find(' ');
      size_t b = line.find_first_of(" \r\n", a + 1);
      std::string key = a == std::string::npos ? "" : line.substr(a + 1, b - a - 1);
      if (!g.answer(fd, self, key)) return;
    }
  });
  TempDir dir;
  Fleet fleet(2);
  std::vector<std::string> servers = fleet.server_lines();
  servers.push_back(fake.address() + ":1");
  Proxy proxy(dir, servers, {{"timeout", "1000"}});
  auto keys = keys_by_address(proxy.config(),
                              {fleet[0].address(), fleet[1].address(), fake.address()}, 6, "gb");
  const auto& a = keys[0];
  const auto& b = keys[1];
  const auto& bad = keys[2];
  auto hit = [](const std::string& k) { return "VALUE " + k + " 0 2\r\nok\r\nEND\r\n"; };
  {
    RawClient c(proxy.port());
    for (const auto& k : a) ASSERT_EQ(c.roundtrip(set_command(k, "ok")), "STORED\r\n");
    for (const auto& k : b) ASSERT_EQ(c.roundtrip(set_command(k, "ok")), "STORED\r\n");
  }
  uint64_t rss_before = rss_kib(proxy.pid());

  RawClient c(proxy.port());
  ReplyReader replies(c);
  for (size_t round = 0; round < 3; ++round) {
    SCOPED_TRACE("round " + std::to_string(round));
    // Pipelined: the fake's key between two good ones.
    c.send("get " + a[round] + "\r\nget " + bad[round] + "\r\nget " + b[round] + "\r\n");
    EXPECT_EQ(printable(replies.next()), printable(hit(a[round])));
    EXPECT_EQ(printable(replies.next(10s)), printable(g.expected));
    EXPECT_EQ(printable(replies.next()), printable(hit(b[round])));
    ASSERT_EQ(printable(replies.pending()), "") << "bytes beyond the three replies";
    // A multi-get over all three: the fake's key reads as a miss.
    std::string mg = c.roundtrip(
        "get " + a[round + 3] + " " + bad[round + 3] + " " + b[round + 3] + "\r\n", "END\r\n");
    EXPECT_EQ(printable(mg), printable("VALUE " + a[round + 3] + " 0 2\r\nok\r\nVALUE " +
                                       b[round + 3] + " 0 2\r\nok\r\nEND\r\n"));
    // The fake's keys alone: the whole multi-get fails.
    std::string only = c.roundtrip("get " + bad[round] + " " + bad[round + 3] + "\r\n", "\r\n");
    EXPECT_TRUE(only.starts_with("SERVER_ERROR ")) << printable(only);
    // Another client, good keys only: untouched.
    RawClient other(proxy.port());
    EXPECT_EQ(other.roundtrip("get " + b[round] + " " + a[round] + "\r\n", "END\r\n"),
              "VALUE " + b[round] + " 0 2\r\nok\r\nVALUE " + a[round] + " 0 2\r\nok\r\nEND\r\n");
  }
  // The same client connection still works for the real servers.
  EXPECT_EQ(c.roundtrip(set_command(a[0], "after")), "STORED\r\n");
  EXPECT_EQ(c.roundtrip("get " + a[0] + "\r\n", "END\r\n"),
            "VALUE " + a[0] + " 0 5\r\nafter\r\nEND\r\n");
  EXPECT_TRUE(proxy.process().running()) << "memshard died";
  EXPECT_GE(proxy_stat(proxy.port(), "forward_error"), 3u);
  std::cout << g.name << ": fake accepted " << fake.accepted() << " connection(s); memshard RSS "
            << rss_before << " KiB before, " << rss_kib(proxy.pid()) << " KiB after\n";
}

std::string garbage_name(const ::testing::TestParamInfo<Garbage>& p) {
  return p.param.name;
}

INSTANTIATE_TEST_SUITE_P(Fake, GarbageBackend, ::testing::ValuesIn(kGarbage), garbage_name);

// A multi-get's VALUE blocks that arrive together are taken from the input
// in one move (BackendConn::take_whole_blocks). A bad block after good ones
// in the same read must fail the reply exactly as a bad first block does,
// with no byte of the good blocks reaching the client, and good blocks
// with misses between them must come back whole and in order.
struct BlockRun {
  const char* name;
  std::string reply;     // the fake's whole answer to "get k1 k2 k3", sent in one write
  std::string expected;  // memshard's reply to the client
};

std::vector<BlockRun> block_runs() {
  const std::string ok1 = "VALUE k1 0 2\r\nok\r\n";
  const std::string ok3 = "VALUE k3 5 3 99\r\nthe\r\n";
  const std::string invalid(kInvalid);
  return {
      {"HitsAroundAMiss", ok1 + ok3 + "END\r\n", ok1 + ok3 + "END\r\n"},
      {"EmptyValueThenHit", "VALUE k1 0 0\r\n\r\n" + ok3 + "END\r\n",
       "VALUE k1 0 0\r\n\r\n" + ok3 + "END\r\n"},
      {"SecondBlockNotTerminatedByCrLf", ok1 + "VALUE k2 0 3\r\nabcdeEND\r\n", invalid},
      {"SecondBlockLongerThanAnnounced", ok1 + "VALUE k2 0 3\r\nabcdef\r\nEND\r\n", invalid},
      {"SecondKeyNotAsked", ok1 + "VALUE zz 0 2\r\nok\r\nEND\r\n", invalid},
      {"SecondKeyRepeated", ok1 + ok1 + "END\r\n", invalid},
      {"SecondKeyOutOfOrder", ok3 + ok1 + "END\r\n", invalid},
      {"SecondHeaderBad", ok1 + "VALUE k2 x 2\r\nok\r\nEND\r\n", invalid},
      {"SecondValueOverItemSizeMax", ok1 + "VALUE k2 0 4000000000\r\n", invalid},
  };
}

TEST(GarbageBackendBlockRuns, ABadBlockAfterGoodOnesFailsTheWholeReply) {
  std::string current;  // the case the fake answers with
  std::mutex mu;
  FakeServer fake([&](int fd, FakeServer& self) {
    std::string buffered, line;
    while (self.read_line(fd, buffered, line)) {
      std::string reply;
      {
        std::lock_guard<std::mutex> lock(mu);
        reply = current;
      }
      FakeServer::send_all(fd, reply);
    }
  });
  TempDir dir;
  Proxy proxy(dir, {fake.address() + ":1"}, {{"timeout", "1000"}}, {"--threads", "1", "-s", "0"});
  for (const BlockRun& run : block_runs()) {
    SCOPED_TRACE(run.name);
    {
      std::lock_guard<std::mutex> lock(mu);
      current = run.reply;
    }
    RawClient c(proxy.port());
    std::string got =
        c.roundtrip("get k1 k2 k3\r\n", run.expected == kInvalid ? "\r\n" : "END\r\n");
    EXPECT_EQ(printable(got), printable(run.expected));
  }
  EXPECT_TRUE(proxy.process().running()) << "memshard died";
  proxy.dump_log_on_failure();
}

}  // namespace
}  // namespace memshard::testing::failures
