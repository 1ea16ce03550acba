// BlockingConn (proxy/runtime/blocking_conn.h): the migration's blocking
// connection with bounded waits. Against a real memcached (the integration
// harness starts it) for what a server says, and scripted servers on
// loopback for what a broken one does: stall, send too little, a line that
// never ends, close. A stalled read returns false once its timeout has
// passed; nothing asserts how long that took.
#include "proxy/runtime/blocking_conn.h"

#include <gtest/gtest.h>

#include <chrono>
#include <csignal>
#include <string>
#include <thread>
#include <vector>

#include "harness.h"
#include "proxy/transport/socket_address.h"
#include "scripted_server.h"

namespace memshard::proxy {
namespace {

using memshard::testing::Memcached;
using test::Answer;
using test::RefusingPort;
using test::ScriptedServer;

// Long enough never to run out on a slow machine when the server answers.
constexpr int kPatientMs = 10'000;
// What a stalled read waits: it does run out.
constexpr int kStallMs = 100;
constexpr size_t kLineLimit = 64 * 1024;

ServerInfo server_at(const std::vector<uint16_t>& ports) {
  ServerInfo s;
  s.identity = "127.0.0.1:" + std::to_string(ports.back());
  for (uint16_t p : ports) {
    AddressList one = resolve_addresses("127.0.0.1", p, false);
    s.addresses.insert(s.addresses.end(), one.begin(), one.end());
  }
  return s;
}

class BlockingConnTest : public ::testing::Test {
 protected:
  BlockingConnTest() { std::signal(SIGPIPE, SIG_IGN); }
};

TEST_F(BlockingConnTest, TalksToMemcached) {
  Memcached memcached;
  BlockingConn conn(server_at({memcached.port()}), kPatientMs);
  ASSERT_TRUE(conn.ok());
  std::string line;
  ASSERT_TRUE(conn.send("version\r\n"));
  ASSERT_TRUE(conn.read_line(line));
  EXPECT_TRUE(line.starts_with("VERSION ")) << line;
  EXPECT_EQ(line.find_first_of("\r\n"), std::string::npos) << "the line kept its end";

  ASSERT_TRUE(conn.send("set k 5 0 5\r\nhello\r\nget k\r\n"));
  ASSERT_TRUE(conn.read_line(line));
  EXPECT_EQ(line, "STORED");
  ASSERT_TRUE(conn.read_line(line));
  EXPECT_EQ(line, "VALUE k 5 5");
  std::string data;
  ASSERT_TRUE(conn.read_exact(7, data));
  EXPECT_EQ(data, "hello\r\n");
  ASSERT_TRUE(conn.read_line(line));
  EXPECT_EQ(line, "END");
}

// What the migration reads: metadump's item lines end in a bare "\n", its
// END in "\r\n".
TEST_F(BlockingConnTest, ReadsMetadumpLinesEndingInABareNewline) {
  Memcached memcached;
  BlockingConn conn(server_at({memcached.port()}), kPatientMs);
  ASSERT_TRUE(conn.send("set walk 0 0 1\r\nx\r\n"));
  std::string line;
  ASSERT_TRUE(conn.read_line(line));
  ASSERT_EQ(line, "STORED");
  // memcached answers BUSY while its own background crawl runs (a fresh
  // server starts one soon after it starts): asked again, a little later.
  std::vector<std::string> items;
  for (int attempt = 0; attempt < 50; ++attempt) {
    items.clear();
    ASSERT_TRUE(conn.send("lru_crawler metadump all\r\n"));
    for (int i = 0; i < 100 && conn.read_line(line) && line != "END" && !line.starts_with("BUSY");
         ++i)
      items.push_back(line);
    if (!line.starts_with("BUSY")) break;
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
  }
  ASSERT_EQ(line, "END");
  ASSERT_EQ(items.size(), 1u);
  EXPECT_TRUE(items[0].starts_with("key=walk ")) << items[0];
  EXPECT_EQ(items[0].find_first_of("\r\n"), std::string::npos) << items[0];
}

TEST_F(BlockingConnTest, ConnectsToTheFirstAddressThatAccepts) {
  RefusingPort refusing;
  Memcached memcached;
  BlockingConn conn(server_at({refusing.port(), memcached.port()}), kPatientMs);
  ASSERT_TRUE(conn.ok());
  std::string line;
  ASSERT_TRUE(conn.send("version\r\n"));
  ASSERT_TRUE(conn.read_line(line));
  EXPECT_TRUE(line.starts_with("VERSION ")) << line;
}

TEST_F(BlockingConnTest, NoAddressAcceptingLeavesItUnusable) {
  RefusingPort refusing;
  BlockingConn conn(server_at({refusing.port()}), kPatientMs);
  EXPECT_FALSE(conn.ok());
  EXPECT_FALSE(conn.send("version\r\n"));
  std::string line;
  EXPECT_FALSE(conn.read_line(line));
}

TEST_F(BlockingConnTest, AServerThatNeverAnswersFailsTheReadAndTheConnection) {
  ScriptedServer stalled([](const std::string&) { return Answer(); });
  BlockingConn conn(server_at({stalled.port()}), kStallMs);
  ASSERT_TRUE(conn.ok());
  ASSERT_TRUE(conn.send("version\r\n"));
  std::string line;
  EXPECT_FALSE(conn.read_line(line));
  EXPECT_FALSE(conn.ok()) << "a connection that timed out was kept";
  EXPECT_FALSE(conn.send("version\r\n"));
}

TEST_F(BlockingConnTest, TooFewBytesFailReadExact) {
  ScriptedServer short_reply([](const std::string&) { return Answer("abc"); });
  BlockingConn conn(server_at({short_reply.port()}), kStallMs);
  ASSERT_TRUE(conn.send("give\r\n"));
  std::string data;
  EXPECT_FALSE(conn.read_exact(10, data));
  EXPECT_FALSE(conn.ok());
}

TEST_F(BlockingConnTest, AServerClosingMidReplyFailsTheRead) {
  ScriptedServer closing([](const std::string&) {
    Answer a = Answer::close_connection();
    a.bytes = "VALUE k 0 10\r\nhal";
    return a;
  });
  BlockingConn conn(server_at({closing.port()}), kPatientMs);
  ASSERT_TRUE(conn.send("get k\r\n"));
  std::string line, data;
  ASSERT_TRUE(conn.read_line(line));
  EXPECT_EQ(line, "VALUE k 0 10");
  EXPECT_FALSE(conn.read_exact(12, data));
  EXPECT_FALSE(conn.ok());
}

TEST_F(BlockingConnTest, LinesAndBlocksArriveAsTheServerCutThem) {
  // Several lines in one write, both line ends, a block and what follows
  // it in the same write.
  ScriptedServer server([](const std::string&) {
    return Answer("one\r\ntwo\nthree\r\nVALUE k 0 4\r\nabcd\r\nEND\r\n");
  });
  BlockingConn conn(server_at({server.port()}), kPatientMs);
  ASSERT_TRUE(conn.send("go\r\n"));
  std::string line, data;
  std::vector<std::string> lines;
  for (int i = 0; i < 4 && conn.read_line(line); ++i) lines.push_back(line);
  EXPECT_EQ(lines, (std::vector<std::string>{"one", "two", "three", "VALUE k 0 4"}));
  ASSERT_TRUE(conn.read_exact(6, data));
  EXPECT_EQ(data, "abcd\r\n");
  ASSERT_TRUE(conn.read_line(line));
  EXPECT_EQ(line, "END");
  EXPECT_TRUE(conn.ok());
}

TEST_F(BlockingConnTest, ALargeBlockIsReadWhole) {
  std::string big(300 * 1024, 'v');
  for (size_t i = 0; i < big.size(); i += 1000) big[i] = static_cast<char>('a' + (i / 1000) % 26);
  ScriptedServer server([&big](const std::string&) { return Answer(big + "\r\nEND\r\n"); });
  BlockingConn conn(server_at({server.port()}), kPatientMs);
  ASSERT_TRUE(conn.send("go\r\n"));
  std::string data, line;
  ASSERT_TRUE(conn.read_exact(big.size() + 2, data));
  EXPECT_TRUE(data == big + "\r\n") << "the block came back changed";
  ASSERT_TRUE(conn.read_line(line));
  EXPECT_EQ(line, "END");
}

TEST_F(BlockingConnTest, ALineOf64KiBIsRead) {
  const std::string longest(kLineLimit, 'x');
  ScriptedServer server([&](const std::string&) { return Answer(longest + "\r\nEND\r\n"); });
  BlockingConn conn(server_at({server.port()}), kPatientMs);
  ASSERT_TRUE(conn.send("go\r\n"));
  std::string line;
  ASSERT_TRUE(conn.read_line(line));
  EXPECT_EQ(line.size(), kLineLimit);
  ASSERT_TRUE(conn.read_line(line));
  EXPECT_EQ(line, "END");
}

// No memcached writes such a line: the server is not one we know. The
// whole line and its end arrive at once, so the read fails on its length,
// not on a timeout.
TEST_F(BlockingConnTest, ALinePast64KiBFailsHoweverItArrives) {
  for (size_t length : {kLineLimit + 1, kLineLimit + 100, kLineLimit + 10'000, 4 * kLineLimit}) {
    const std::string too_long(length, 'x');
    ScriptedServer server([&](const std::string&) { return Answer(too_long + "\r\nEND\r\n"); });
    BlockingConn conn(server_at({server.port()}), kPatientMs);
    ASSERT_TRUE(conn.send("go\r\n"));
    std::string line;
    EXPECT_FALSE(conn.read_line(line)) << "a line of " << length << " bytes was read";
    EXPECT_FALSE(conn.ok());
  }
}

// meta_get: what the fleet walk's lease and the migration's copies read.
TEST_F(BlockingConnTest, MetaGetReadsAValueItsFlagsAndItsCas) {
  Memcached memcached;
  BlockingConn conn(server_at({memcached.port()}), kPatientMs);
  std::string line;
  ASSERT_TRUE(conn.send("set k 7 0 5\r\nhello\r\ngets k\r\n"));
  ASSERT_TRUE(conn.read_line(line));
  ASSERT_EQ(line, "STORED");
  ASSERT_TRUE(conn.read_line(line));
  const std::string cas = line.substr(line.rfind(' ') + 1);  // "VALUE k 7 5 <cas>"
  std::string data;
  ASSERT_TRUE(conn.read_exact(7, data) && conn.read_line(line));
  ASSERT_EQ(line, "END");

  std::string reply;
  proto::MetaValue value;
  ASSERT_EQ(conn.meta_get("k", true, 1024, reply, value), BlockingConn::Lookup::hit) << reply;
  EXPECT_EQ(value.data, "hello");
  EXPECT_EQ(value.flags, "7");
  EXPECT_EQ(value.cas, cas);
  EXPECT_EQ(value.ttl, "-1");
  ASSERT_EQ(conn.meta_get("k", false, 1024, reply, value), BlockingConn::Lookup::hit) << reply;
  EXPECT_EQ(value.cas, "") << "the CAS was asked for";
  // The stream is where it should be: the next reply is the next request's.
  ASSERT_TRUE(conn.send("version\r\n") && conn.read_line(line));
  EXPECT_TRUE(line.starts_with("VERSION ")) << line;
}

TEST_F(BlockingConnTest, MetaGetTellsAMissFromAFailure) {
  Memcached memcached;
  BlockingConn conn(server_at({memcached.port()}), kPatientMs);
  std::string reply;
  proto::MetaValue value;
  EXPECT_EQ(conn.meta_get("absent", true, 1024, reply, value), BlockingConn::Lookup::miss);
  EXPECT_TRUE(conn.ok());
  EXPECT_EQ(conn.meta_get(std::string(300, 'k'), true, 1024, reply, value),
            BlockingConn::Lookup::unsendable);

  ScriptedServer busy([](const std::string&) { return Answer("SERVER_ERROR busy\r\n"); });
  BlockingConn to_busy(server_at({busy.port()}), kPatientMs);
  EXPECT_EQ(to_busy.meta_get("k", true, 1024, reply, value), BlockingConn::Lookup::failed);
  EXPECT_TRUE(to_busy.ok()) << "a whole error line leaves the stream in step";
}

// A key a text line cannot carry travels base64 and comes back whole.
TEST_F(BlockingConnTest, MetaGetFindsAKeyHoldingASpace) {
  Memcached memcached;
  BlockingConn conn(server_at({memcached.port()}), kPatientMs);
  std::string line;
  ASSERT_TRUE(conn.send("ms a2V5IHdpdGggc3BhY2U= 2 b\r\nok\r\n") && conn.read_line(line));
  ASSERT_EQ(line, "HD");
  std::string reply;
  proto::MetaValue value;
  ASSERT_EQ(conn.meta_get("key with space", false, 1024, reply, value), BlockingConn::Lookup::hit)
      << reply;
  EXPECT_EQ(value.data, "ok");
}

// A value over the bound is not read; the connection closes rather than
// take its bytes for the next reply.
TEST_F(BlockingConnTest, MetaGetOfAValueOverTheBoundFailsAndCloses) {
  Memcached memcached;
  BlockingConn conn(server_at({memcached.port()}), kPatientMs);
  std::string line;
  const std::string big(2000, 'v');
  ASSERT_TRUE(conn.send("set big 0 0 2000\r\n" + big + "\r\n") && conn.read_line(line));
  ASSERT_EQ(line, "STORED");
  std::string reply;
  proto::MetaValue value;
  EXPECT_EQ(conn.meta_get("big", false, 1024, reply, value), BlockingConn::Lookup::failed);
  EXPECT_FALSE(conn.ok()) << "the unread value would be read as the next reply";

  BlockingConn again(server_at({memcached.port()}), kPatientMs);
  ASSERT_EQ(again.meta_get("big", false, 2000, reply, value), BlockingConn::Lookup::hit);
  EXPECT_EQ(value.data, big);
}

}  // namespace
}  // namespace memshard::proxy
