// The stats port for real (admin/stats_server.h): a StatsServer listening
// on 127.0.0.1, over a fake StatsView, on a real libevent loop driven as
// the main thread drives it (event_base_loop(EVLOOP_ONCE), then
// StreamLoop::flush()). The test is the reader, on a non-blocking socket
// in the same thread: a twemproxy-style reader that says nothing or no
// HTTP, and HTTP GET, HEAD and the answers to what is not served.
//
// Every wait is bounded by an iteration budget and a generous deadline; a
// repeating tick ends each iteration when nothing else is ready. Nothing
// asserts how long anything took.
#include "proxy/admin/stats_server.h"

#include <event2/event.h>
#include <fcntl.h>
#include <gtest/gtest.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cctype>
#include <cerrno>
#include <chrono>
#include <csignal>
#include <cstring>
#include <functional>
#include <map>
#include <memory>
#include <stdexcept>
#include <string>

#include "fake_stats_view.h"
#include "prometheus_text.h"
#include "proxy/protocol/replies.h"
#include "strict_json.h"
#include "tests/proxy/transport/test_sockets.h"

namespace memshard::proxy {
namespace {

using Clock = std::chrono::steady_clock;
using test_sockets::Fd;
using testing::alpha_fleet;
using testing::FakeStatsView;

// An HTTP answer as a reader takes it apart.
struct HttpReply {
  bool http = false;  // it began with a status line
  int status = 0;
  std::map<std::string, std::string> headers;  // names lower-cased
  std::string body;

  std::string header(const std::string& name) const {
    auto it = headers.find(name);
    return it == headers.end() ? "" : it->second;
  }
};

HttpReply parse_http(const std::string& raw) {
  HttpReply r;
  const size_t head_end = raw.find("\r\n\r\n");
  if (!raw.starts_with("HTTP/1.1 ") || head_end == std::string::npos) return r;
  r.http = true;
  r.status = std::stoi(raw.substr(9, 3));
  size_t at = raw.find("\r\n") + 2;
  while (at < head_end) {
    const size_t eol = raw.find("\r\n", at);
    const std::string line = raw.substr(at, eol - at);
    at = eol + 2;
    const size_t colon = line.find(':');
    if (colon == std::string::npos) continue;
    std::string name = line.substr(0, colon);
    for (char& c : name) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
    r.headers[name] = line.substr(line.find_first_not_of(' ', colon + 1));
  }
  r.body = raw.substr(head_end + 4);
  return r;
}

class StatsServerTest : public ::testing::Test {
 protected:
  // A write to a reader that left must fail with EPIPE, not end the test.
  static void SetUpTestSuite() { signal(SIGPIPE, SIG_IGN); }

  StatsServerTest() {
    tick_ = event_new(
        base_, -1, EV_PERSIST, [](evutil_socket_t, short, void*) {}, nullptr);
    timeval tv{0, 10'000};
    event_add(tick_, &tv);
  }
  ~StatsServerTest() override {
    server_.reset();
    streams_.reset();
    event_free(tick_);
    event_base_free(base_);
  }

  // Listens on a port the kernel just had free: another process may take
  // it between the probe and the bind, so a few are tried.
  void start(const std::string& token = "") {
    for (int attempt = 0; attempt < 20 && server_ == nullptr; ++attempt) {
      SocketAddress probe;
      { Fd taken = test_sockets::tcp_socket(probe, false); }
      port_ = ntohs(reinterpret_cast<const sockaddr_in*>(&probe.storage)->sin_port);
      try {
        server_ =
            std::make_unique<StatsServer>(*streams_, view_, reserve_, "127.0.0.1", port_, token);
      } catch (const std::runtime_error& e) {
        last_error_ = e.what();
      }
    }
    ASSERT_NE(server_, nullptr) << last_error_;
  }

  void iterate() {
    event_base_loop(base_, EVLOOP_ONCE);
    streams_->flush();
  }

  bool run_until(const std::function<bool()>& done) {
    const auto deadline = Clock::now() + std::chrono::seconds(20);
    for (int i = 0; i < 20000 && Clock::now() < deadline; ++i) {
      if (done()) return true;
      iterate();
    }
    return done();
  }

  // Connects at once (loopback completes the handshake before accept),
  // then reads and writes without blocking, in the loop's thread.
  Fd connect_reader() {
    Fd fd(socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0));
    sockaddr_in sin{};
    sin.sin_family = AF_INET;
    sin.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    sin.sin_port = htons(port_);
    EXPECT_EQ(::connect(fd.get(), reinterpret_cast<sockaddr*>(&sin), sizeof(sin)), 0)
        << strerror(errno);
    EXPECT_EQ(fcntl(fd.get(), F_SETFL, fcntl(fd.get(), F_GETFL) | O_NONBLOCK), 0);
    return fd;
  }

  // Whatever the reader can read now; true once the server closed its side.
  static bool read_available(int fd, std::string& got) {
    char buf[65536];
    for (;;) {
      const ssize_t n = recv(fd, buf, sizeof(buf), 0);
      if (n > 0) {
        got.append(buf, static_cast<size_t>(n));
        continue;
      }
      return n == 0;
    }
  }

  // Sends `request` (all of it: loopback takes a few KiB at once), then
  // runs the loop until the server has answered and closed its side.
  // `close_after`: the reader also closes its own side once it has sent.
  std::string exchange(const std::string& request, bool close_after = false) {
    Fd fd = connect_reader();
    size_t sent = 0;
    bool write_closed = false;
    std::string got;
    const bool ok = run_until([&] {
      while (sent < request.size()) {
        const ssize_t n =
            ::send(fd.get(), request.data() + sent, request.size() - sent, MSG_NOSIGNAL);
        if (n <= 0) break;
        sent += static_cast<size_t>(n);
      }
      if (close_after && !write_closed && sent == request.size()) {
        shutdown(fd.get(), SHUT_WR);
        write_closed = true;
      }
      return read_available(fd.get(), got);
    });
    EXPECT_TRUE(ok) << "no end of the answer; got: " << got.substr(0, 200);
    return got;
  }

  // One request on a connection of its own, which the client asks to close
  // after the answer (an HTTP/1.1 client that does not is kept, see
  // AKeptConnectionAnswersTheNextRequestToo).
  HttpReply http(const std::string& method, const std::string& path,
                 const std::string& extra_headers = "") {
    const std::string raw =
        exchange(method + " " + path + " HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n" +
                 extra_headers + "\r\n");
    HttpReply r = parse_http(raw);
    EXPECT_TRUE(r.http) << raw.substr(0, 200);
    return r;
  }

  static void expect_twemproxy_json(const std::string& body) {
    std::string error;
    std::optional<testing::Json> doc = testing::StrictJsonReader::parse(body, error);
    ASSERT_TRUE(doc) << error << "\n" << body.substr(0, 200);
    ASSERT_NE(doc->find("service"), nullptr);
    EXPECT_EQ(doc->find("service")->text, "memshard");
    ASSERT_NE(doc->find("alpha"), nullptr) << "the view's pool";
    EXPECT_EQ(doc->find("alpha")->find("requests")->as_unsigned(), 1000u);
  }

  event_base* base_ = event_base_new();
  std::unique_ptr<StreamLoop> streams_ = std::make_unique<StreamLoop>(base_);
  DescriptorReserve reserve_{std::string(proto::reply::kTooManyConnections)};
  FakeStatsView view_ = alpha_fleet();
  std::unique_ptr<StatsServer> server_;
  uint16_t port_ = 0;
  std::string last_error_;
  event* tick_ = nullptr;
};

TEST_F(StatsServerTest, ASilentReaderGetsTwemproxysJsonWithoutHttp) {
  start();
  const std::string raw = exchange("");
  EXPECT_FALSE(raw.starts_with("HTTP/")) << "twemproxy's readers get the document alone";
  expect_twemproxy_json(raw);
}

TEST_F(StatsServerTest, AReaderThatClosesWithoutAWordGetsTheJson) {
  start();
  expect_twemproxy_json(exchange("", true));
}

TEST_F(StatsServerTest, AReaderThatSpeaksNoHttpGetsTheJson) {
  start();
  expect_twemproxy_json(exchange("stats\r\n"));
}

TEST_F(StatsServerTest, GetMetricsIsPrometheusTextWithItsLength) {
  start();
  const HttpReply r = http("GET", "/metrics");
  EXPECT_EQ(r.status, 200);
  EXPECT_EQ(r.header("content-type"), "text/plain; version=0.0.4; charset=utf-8");
  EXPECT_EQ(r.header("content-length"), std::to_string(r.body.size()));
  EXPECT_EQ(r.header("connection"), "close");
  const testing::PromText text = testing::read_prometheus_text(r.body);
  for (const std::string& e : text.errors) ADD_FAILURE() << e;
  const auto requests = text.find("memshard_pool_requests_total", {{"pool", "alpha"}});
  ASSERT_EQ(requests.size(), 1u);
  EXPECT_EQ(requests[0].value, 1000.0);
}

TEST_F(StatsServerTest, HeadHasGetsHeadersAndNoBody) {
  start();
  // /metrics of this view holds no clock reading: GET's body is the same
  // each time, so HEAD's Content-Length must be its length exactly.
  const HttpReply get = http("GET", "/metrics");
  const HttpReply head = http("HEAD", "/metrics");
  EXPECT_EQ(head.status, 200);
  EXPECT_EQ(head.body, "");
  EXPECT_EQ(head.header("content-type"), get.header("content-type"));
  EXPECT_EQ(get.header("content-length"), std::to_string(get.body.size()));
  EXPECT_EQ(head.header("content-length"), std::to_string(get.body.size()))
      << "the length GET's body has";
  EXPECT_FALSE(get.body.empty());
}

TEST_F(StatsServerTest, AnUnknownPathIs404) {
  start();
  const HttpReply r = http("GET", "/nothing-here");
  EXPECT_EQ(r.status, 404);
  EXPECT_EQ(r.header("content-length"), std::to_string(r.body.size()));
}

TEST_F(StatsServerTest, AnyMethodButGetAndHeadIs405) {
  start();
  for (const char* method : {"POST", "PUT", "DELETE"}) {
    const HttpReply r = http(method, "/metrics", "Content-Length: 0\r\n");
    EXPECT_EQ(r.status, 405) << method;
    EXPECT_EQ(r.header("allow"), "GET, HEAD") << method;
  }
}

TEST_F(StatsServerTest, WithATokenOnlyAReaderThatCarriesItIsAnswered) {
  const std::string token = "s3cret-token";
  start(token);
  EXPECT_EQ(http("GET", "/metrics").status, 401);
  EXPECT_EQ(http("GET", "/metrics", "Authorization: Bearer wrong\r\n").status, 401);
  const HttpReply ok = http("GET", "/metrics", "Authorization: Bearer " + token + "\r\n");
  EXPECT_EQ(ok.status, 200);
  EXPECT_NE(ok.body.find("memshard_pool_requests_total"), std::string::npos);
  const std::string raw = exchange("stats\r\n");
  EXPECT_EQ(raw.find("\"alpha\""), std::string::npos) << "no stats without the token: " << raw;
  EXPECT_NE(raw.find("token"), std::string::npos) << "the raw reader is told why: " << raw;
}

TEST_F(StatsServerTest, ReadersAtOnceAreEachAnswered) {
  start();
  // Two readers connected before either is answered.
  Fd first = connect_reader();
  Fd second = connect_reader();
  const std::string request = "GET /stats HTTP/1.1\r\nConnection: close\r\n\r\n";
  std::string got[2];
  bool eof[2] = {false, false};
  bool sent[2] = {false, false};
  const int fds[2] = {first.get(), second.get()};
  EXPECT_TRUE(run_until([&] {
    for (int i = 0; i < 2; ++i) {
      if (!sent[i]) {
        sent[i] = ::send(fds[i], request.data(), request.size(), MSG_NOSIGNAL) ==
                  static_cast<ssize_t>(request.size());
      }
      if (!eof[i]) eof[i] = read_available(fds[i], got[i]);
    }
    return eof[0] && eof[1];
  }));
  for (const std::string& raw : got) {
    const HttpReply r = parse_http(raw);
    EXPECT_EQ(r.status, 200);
    expect_twemproxy_json(r.body);
  }
}

TEST_F(StatsServerTest, APortInUseIsRefusedWithTheReason) {
  SocketAddress taken;
  Fd listener = test_sockets::tcp_socket(taken, true);
  const uint16_t port = ntohs(reinterpret_cast<const sockaddr_in*>(&taken.storage)->sin_port);
  try {
    StatsServer s(*streams_, view_, reserve_, "127.0.0.1", port);
    ADD_FAILURE() << "bound a port another socket listens on";
  } catch (const std::runtime_error& e) {
    EXPECT_NE(std::string(e.what()).find(std::to_string(port)), std::string::npos) << e.what();
  }
}

// An HTTP/1.1 client that does not ask to close keeps its connection: a
// page polling the JSON every second reuses one, rather than having its
// browser open the next ahead of time and leave it silent (a silent
// connection gets the raw reader's JSON). Two requests, sent at once, are
// answered in order on the one connection; then the client closes.
TEST_F(StatsServerTest, AKeptConnectionAnswersTheNextRequestToo) {
  start();
  Fd fd = connect_reader();
  const std::string two = "GET /stats HTTP/1.1\r\nHost: x\r\n\r\nGET /metrics HTTP/1.1\r\n\r\n";
  ASSERT_EQ(::send(fd.get(), two.data(), two.size(), MSG_NOSIGNAL),
            static_cast<ssize_t>(two.size()));
  std::string got;
  const auto answers = [&] {
    size_t n = 0;
    for (size_t at = got.find("HTTP/1.1 "); at != std::string::npos;
         at = got.find("HTTP/1.1 ", at + 1))
      ++n;
    return n;
  };
  EXPECT_TRUE(run_until([&] {
    read_available(fd.get(), got);
    return answers() == 2 && got.find("# TYPE") != std::string::npos;
  })) << got.substr(0, 300);
  const size_t second = got.find("HTTP/1.1 ", 1);
  ASSERT_NE(second, std::string::npos);
  const HttpReply first = parse_http(got.substr(0, second));
  EXPECT_EQ(first.status, 200);
  EXPECT_EQ(first.header("connection"), "keep-alive");
  expect_twemproxy_json(first.body);
  const HttpReply metrics = parse_http(got.substr(second));
  EXPECT_EQ(metrics.status, 200);
  EXPECT_EQ(metrics.header("content-type"), "text/plain; version=0.0.4; charset=utf-8");
  // Closed by the client between requests: the server closes too, and
  // says nothing (no raw reader's JSON to a connection that spoke HTTP).
  shutdown(fd.get(), SHUT_WR);
  std::string after;
  EXPECT_TRUE(run_until([&] { return read_available(fd.get(), after); }));
  EXPECT_EQ(after, "");
}

}  // namespace
}  // namespace memshard::proxy
