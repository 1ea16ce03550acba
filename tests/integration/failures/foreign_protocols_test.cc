// Input that is not memcached, from real tools: curl's HTTP POST, whose
// body would be a memcached command (a browser page or a server-side
// request forgery aimed at the port), and openssl's TLS handshake on a
// listener without TLS. memshard closes both without executing anything,
// counts them, and says the second in its log. Real memcached behind it.
#include <gtest/gtest.h>

#include <cstdlib>
#include <memory>
#include <string>

#include "failure_util.h"

namespace memshard::testing::failures {
namespace {

using namespace std::chrono_literals;

class ForeignProtocols : public ::testing::Test {
 protected:
  void SetUp() override {
    mc_ = std::make_unique<Memcached>();
    proxy_ = std::make_unique<Proxy>(dir_, std::vector<std::string>{mc_->address() + ":1"},
                                     Directives{{"timeout", "2000"}});
  }
  void TearDown() override { proxy_->dump_log_on_failure(); }

  // Runs `command` through the shell; its exit status.
  static int run(const std::string& command) { return std::system(command.c_str()); }

  bool stored_on_server(const std::string& key) {
    RawClient c(mc_->port());
    return c.roundtrip("get " + key + "\r\n", "END\r\n") != "END\r\n";
  }

  TempDir dir_;
  std::unique_ptr<Memcached> mc_;
  std::unique_ptr<Proxy> proxy_;
};

TEST_F(ForeignProtocols, AnHttpPostIsClosedAndItsBodyNeverStored) {
  const std::string port = std::to_string(proxy_->port());
  // curl fails: the connection closes without an answer (exit 52, "empty
  // reply"). What matters is that the body's set never ran.
  const int status =
      run("printf 'set pwn 0 0 3\\r\\nabc\\r\\n' | curl -s -m 5 --data-binary @- "
          "http://127.0.0.1:" +
          port + "/ >/dev/null 2>&1");
  EXPECT_NE(status, 0) << "curl got an answer";
  EXPECT_FALSE(stored_on_server("pwn")) << "the HTTP body was executed";
  // The connection after it is a new one, and works.
  RawClient c(proxy_->port());
  EXPECT_EQ(c.roundtrip("set ok 0 0 1\r\nx\r\n"), "STORED\r\n");
  EXPECT_TRUE(
      eventually([&] { return proxy_stat(proxy_->port(), "main:client_foreign") == 1; }, 5s))
      << "counted per pool";
}

TEST_F(ForeignProtocols, AnHttpRequestLineFromARawClientClosesWithoutAWord) {
  RawClient c(proxy_->port());
  c.send("GET / HTTP/1.1\r\nHost: x\r\n\r\nset pwn2 0 0 1\r\ny\r\n");
  EXPECT_TRUE(c.closed_by_peer(5s));
  EXPECT_FALSE(stored_on_server("pwn2"));
}

TEST_F(ForeignProtocols, ATlsHandshakeOnAPlainListenerIsClosedAndLogged) {
  const std::string port = std::to_string(proxy_->port());
  const int status = run("openssl s_client -connect 127.0.0.1:" + port +
                         " -servername x </dev/null >/dev/null 2>&1");
  EXPECT_NE(status, 0) << "the handshake succeeded on a plain listener";
  EXPECT_TRUE(eventually(
      [&] {
        return proxy_->log_tail().find("began a TLS handshake on a listener without TLS") !=
               std::string::npos;
      },
      5s))
      << proxy_->log_tail();
  RawClient c(proxy_->port());
  EXPECT_EQ(c.roundtrip("version\r\n").substr(0, 8), "VERSION ");
}

}  // namespace
}  // namespace memshard::testing::failures
