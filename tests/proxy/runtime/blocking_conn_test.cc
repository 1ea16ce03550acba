// BlockingConn (proxy/runtime/blocking_conn.h): the migration's blocking
// connection with bounded waits. Against a real memcached (the integration
// harness starts it) for what a server says, and scripted servers on
// loopback for what a broken one does: stall, send too little, a line that
// never ends, close. A stalled read returns false once its timeout has
// passed; nothing asserts how long that took.
#include "proxy/runtime/blocking_conn.h"

#include <gtest/gtest.h>

#include <csignal>
#include <string>
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
  ASSERT_TRUE(conn.send("lru_crawler metadump all\r\n"));
  std::vector<std::string> items;
  for (int i = 0; i < 100 && conn.read_line(line) && line != "END"; ++i) items.push_back(line);
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

}  // namespace
}  // namespace memshard::proxy
