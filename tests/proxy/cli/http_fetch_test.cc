// The blocking GET of `memshard top` (cli/http_fetch.h) against a stats
// port the test plays: what it asks (path, host, the token as a bearer),
// what it makes of a 200, of another status, of an answer that is not
// HTTP, of a server that hangs up or says nothing within the limit; and
// how a -s argument splits into host and port.
#include "proxy/cli/http_fetch.h"

#include <gtest/gtest.h>

#include <chrono>
#include <string>

#include "tests/proxy/cli/scripted_http_server.h"

namespace memshard::proxy {
namespace {

using namespace std::chrono_literals;
using testing_cli::ScriptedHttpServer;

// Generous: only a server that says nothing waits this long.
constexpr auto kLimit = 20s;

TEST(HttpFetch, AGetForThePathWithHostAndConnectionClose) {
  ScriptedHttpServer server({testing_cli::http(200, "OK", "{\"a\":1}")});
  const FetchResult r = http_fetch("127.0.0.1", server.port(), "/status.json", "", kLimit);
  EXPECT_TRUE(r.ok) << r.error;
  EXPECT_EQ(r.status, 200);
  EXPECT_EQ(r.body, "{\"a\":1}");
  EXPECT_EQ(r.error, "");
  ASSERT_EQ(server.requests().size(), 1u);
  const std::string head = server.requests()[0];
  EXPECT_TRUE(head.starts_with("GET /status.json HTTP/1.1\r\n")) << head;
  EXPECT_NE(head.find("\r\nHost: 127.0.0.1:" + std::to_string(server.port()) + "\r\n"),
            std::string::npos)
      << head;
  EXPECT_NE(head.find("\r\nConnection: close\r\n"), std::string::npos) << head;
  EXPECT_EQ(head.find("Authorization"), std::string::npos) << "no token, no header";
  EXPECT_TRUE(head.ends_with("\r\n\r\n"));
}

TEST(HttpFetch, TheTokenGoesAsABearer) {
  ScriptedHttpServer server({testing_cli::http(200, "OK", "{}")});
  const FetchResult r = http_fetch("127.0.0.1", server.port(), "/status.json", "s3cret", kLimit);
  EXPECT_TRUE(r.ok) << r.error;
  ASSERT_EQ(server.requests().size(), 1u);
  EXPECT_NE(server.requests()[0].find("\r\nAuthorization: Bearer s3cret\r\n"), std::string::npos)
      << server.requests()[0];
}

TEST(HttpFetch, ALargeBodyArrivesWhole) {
  std::string body(3 << 20, 'x');
  for (size_t i = 0; i < body.size(); i += 4096) body[i] = static_cast<char>('a' + (i / 4096) % 26);
  ScriptedHttpServer server({testing_cli::http(200, "OK", body)});
  const FetchResult r = http_fetch("127.0.0.1", server.port(), "/status.json", "", kLimit);
  EXPECT_TRUE(r.ok) << r.error;
  EXPECT_TRUE(r.body == body) << "got " << r.body.size() << " bytes of " << body.size();
}

TEST(HttpFetch, AnotherStatusIsNotOkButKeepsItsBody) {
  ScriptedHttpServer server({testing_cli::http(404, "Not Found", "try /status\n", "text/plain")});
  const FetchResult r = http_fetch("127.0.0.1", server.port(), "/nope", "", kLimit);
  EXPECT_FALSE(r.ok);
  EXPECT_EQ(r.status, 404);
  EXPECT_EQ(r.body, "try /status\n");
  EXPECT_NE(r.error.find("404 Not Found"), std::string::npos) << r.error;
  EXPECT_NE(r.error.find("127.0.0.1:" + std::to_string(server.port())), std::string::npos)
      << "names where it asked: " << r.error;
}

TEST(HttpFetch, A401SaysToGiveTheToken) {
  ScriptedHttpServer server({testing_cli::http(401, "Unauthorized", "token\n", "text/plain")});
  const FetchResult r = http_fetch("127.0.0.1", server.port(), "/status.json", "", kLimit);
  EXPECT_FALSE(r.ok);
  EXPECT_EQ(r.status, 401);
  EXPECT_NE(r.error.find("token"), std::string::npos) << r.error;
}

TEST(HttpFetch, AnAnswerThatIsNotHttpIsRefused) {
  // nutcracker's stats port: the JSON alone, then close.
  ScriptedHttpServer server({testing_cli::answer("{\"service\":\"nutcracker\"}\n")});
  const FetchResult r = http_fetch("127.0.0.1", server.port(), "/status.json", "", kLimit);
  EXPECT_FALSE(r.ok);
  EXPECT_EQ(r.status, 0);
  EXPECT_NE(r.error.find("HTTP"), std::string::npos) << r.error;
}

TEST(HttpFetch, AServerThatHangsUpGivesAnError) {
  ScriptedHttpServer server({testing_cli::hang_up()});
  const FetchResult r = http_fetch("127.0.0.1", server.port(), "/status.json", "", kLimit);
  EXPECT_FALSE(r.ok);
  EXPECT_EQ(r.status, 0);
  EXPECT_FALSE(r.error.empty());
}

TEST(HttpFetch, ASilentServerIsGivenUpOnAtTheLimit) {
  ScriptedHttpServer server({testing_cli::silent()});
  const FetchResult r = http_fetch("127.0.0.1", server.port(), "/status.json", "", 300ms);
  EXPECT_FALSE(r.ok);
  EXPECT_EQ(r.status, 0);
  EXPECT_NE(r.error.find("in time"), std::string::npos) << r.error;
}

TEST(HttpFetch, NobodyListeningIsACannotConnect) {
  // Bound and not listening: connections are refused, and the port stays
  // ours while the test runs.
  SocketAddress address;
  test_sockets::Fd closed = test_sockets::tcp_socket(address, false);
  const uint16_t port = ntohs(reinterpret_cast<const sockaddr_in*>(&address.storage)->sin_port);
  const FetchResult r = http_fetch("127.0.0.1", port, "/status.json", "", kLimit);
  EXPECT_FALSE(r.ok);
  EXPECT_EQ(r.status, 0);
  EXPECT_NE(r.error.find("cannot connect to 127.0.0.1:" + std::to_string(port)), std::string::npos)
      << r.error;
}

TEST(SplitHostPort, HostAndPortInEachForm) {
  std::string host;
  uint16_t port = 0;
  ASSERT_TRUE(split_host_port("stats.example:9000", host, port));
  EXPECT_EQ(host, "stats.example");
  EXPECT_EQ(port, 9000);
  ASSERT_TRUE(split_host_port("[::1]:22223", host, port));
  EXPECT_EQ(host, "::1");
  EXPECT_EQ(port, 22223);
  ASSERT_TRUE(split_host_port("[fe80::1]", host, port));
  EXPECT_EQ(host, "fe80::1");
  EXPECT_EQ(port, 22222) << "the stats port's default";
  ASSERT_TRUE(split_host_port("stats.example", host, port));
  EXPECT_EQ(host, "stats.example");
  EXPECT_EQ(port, 22222);
  ASSERT_TRUE(split_host_port("::1", host, port)) << "a bare IPv6 address is a host";
  EXPECT_EQ(host, "::1");
  EXPECT_EQ(port, 22222);
  ASSERT_TRUE(split_host_port(":9000", host, port));
  EXPECT_EQ(host, "127.0.0.1") << "no host: this one";
  EXPECT_EQ(port, 9000);
  ASSERT_TRUE(split_host_port("h:65535", host, port));
  EXPECT_EQ(port, 65535);
}

TEST(SplitHostPort, APortOutside1To65535OrNotANumberIsRefused) {
  std::string host;
  uint16_t port = 0;
  for (const char* bad :
       {"h:0", "h:65536", "h:99999999999", "h:x", "h:12x", "h:-1", "[::1", "[::1]x", "[::1]:0"}) {
    EXPECT_FALSE(split_host_port(bad, host, port)) << bad;
  }
}

}  // namespace
}  // namespace memshard::proxy
