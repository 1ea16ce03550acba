// TlsContext (loading, refusing) and Stream over TLS: two streams on one
// real event loop, over loopback TCP, one accepting and one connecting.
// Certificates are made by the openssl command line when the test starts.
#include <gtest/gtest.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cstdlib>
#include <ctime>
#include <filesystem>
#include <functional>
#include <string>

#include "proxy/transport/stream.h"
#include "proxy/transport/tls_context.h"
#include "test_sockets.h"

namespace memshard::proxy {
namespace {

using Happened = Stream::Happened;

class Certs {
 public:
  Certs() {
    char tmpl[] = "/tmp/memshard-tls-unit-XXXXXX";
    dir_ = mkdtemp(tmpl);
    run("req -x509 -newkey ec -pkeyopt ec_paramgen_curve:P-256 -nodes -keyout ca.key -out ca.crt "
        "-days 2 -subj /CN=ca");
    sign("server", 2);
    sign("other", 2);
    sign("expired", 0);
  }
  ~Certs() { std::filesystem::remove_all(dir_); }
  std::string path(const std::string& name) const { return dir_ + "/" + name; }

 private:
  void run(const std::string& args) {
    std::string cmd = "cd " + dir_ + " && openssl " + args + " >/dev/null 2>&1";
    ASSERT_EQ(std::system(cmd.c_str()), 0) << cmd;
  }
  void sign(const std::string& name, int days) {
    run("req -newkey ec -pkeyopt ec_paramgen_curve:P-256 -nodes -keyout " + name + ".key -out " +
        name + ".csr -subj /CN=localhost");
    run("x509 -req -in " + name + ".csr -CA ca.crt -CAkey ca.key -CAcreateserial -days " +
        std::to_string(days) + " -out " + name + ".crt");
  }
  std::string dir_;
};

Certs& certs() {
  static Certs c;
  return c;
}

TlsOptions accepting(const std::string& cert = "server", const std::string& key = "server") {
  TlsOptions o;
  o.role = TlsOptions::Role::accept;
  o.cert_file = certs().path(cert + ".crt");
  o.key_file = certs().path(key + ".key");
  o.session_id = "test";
  return o;
}

TlsOptions connecting() {
  TlsOptions o;
  o.role = TlsOptions::Role::connect;
  o.ca_file = certs().path("ca.crt");
  o.verify_peer = true;
  o.name = "localhost";
  return o;
}

TEST(TlsContext, LoadsAPairAndKnowsWhenItLapses) {
  TlsLoadError error;
  auto ctx = TlsContext::build(accepting(), error);
  ASSERT_TRUE(ctx) << error.message;
  ASSERT_TRUE(ctx->not_after());
  int64_t left = *ctx->not_after() - static_cast<int64_t>(time(nullptr));
  EXPECT_GT(left, 86400);
  EXPECT_LE(left, 2 * 86400 + 60);
}

TEST(TlsContext, RefusesWhatDoesNotLoadNamingTheFile) {
  TlsLoadError error;
  TlsOptions o = accepting();
  o.cert_file = certs().path("missing.crt");
  EXPECT_FALSE(TlsContext::build(o, error));
  EXPECT_EQ(error.file, TlsLoadError::File::cert);
  EXPECT_NE(error.message.find("missing.crt"), std::string::npos) << error.message;

  EXPECT_FALSE(TlsContext::build(accepting("server", "other"), error));
  EXPECT_EQ(error.file, TlsLoadError::File::key);
  EXPECT_NE(error.message.find("does not match"), std::string::npos) << error.message;

  sleep(1);  // the expired certificate's one second is over
  EXPECT_FALSE(TlsContext::build(accepting("expired", "expired"), error));
  EXPECT_EQ(error.file, TlsLoadError::File::cert);
  EXPECT_NE(error.message.find("expired"), std::string::npos) << error.message;

  TlsOptions c = connecting();
  c.ca_file = certs().path("none.crt");
  EXPECT_FALSE(TlsContext::build(c, error));
  EXPECT_EQ(error.file, TlsLoadError::File::ca);
}

struct TlsOwner {
  std::unique_ptr<Stream> stream;
  std::string received;
  int connected = 0, errors = 0, eofs = 0;
  static void on(void* self, Happened what) {
    auto* o = static_cast<TlsOwner*>(self);
    switch (what) {
      case Happened::input: {
        evbuffer* in = o->stream->input();
        size_t n = evbuffer_get_length(in);
        std::string bytes(n, '\0');
        evbuffer_remove(in, bytes.data(), n);
        o->received += bytes;
        o->stream->update();
        break;
      }
      case Happened::connected:
        ++o->connected;
        break;
      case Happened::error:
        ++o->errors;
        o->stream->close();
        break;
      case Happened::eof:
        ++o->eofs;
        break;
      default:
        break;
    }
  }
};

class TlsStreamTest : public ::testing::Test {
 protected:
  void SetUp() override {
    base_ = event_base_new();
    loop_ = std::make_unique<StreamLoop>(base_);
    tick_ = event_new(
        base_, -1, EV_PERSIST, [](evutil_socket_t, short, void*) {}, nullptr);
    timeval tv{0, 10'000};
    event_add(tick_, &tv);
    listener_ = test_sockets::tcp_socket(address_, true);
  }
  void TearDown() override {
    server_.stream.reset();
    client_.stream.reset();
    event_free(tick_);
    loop_.reset();
    event_base_free(base_);
  }
  bool run_until(const std::function<bool()>& done, int limit_ms = 5000) {
    for (int i = 0; i < limit_ms / 10 + 1; ++i) {
      if (done()) return true;
      event_base_loop(base_, EVLOOP_ONCE);
      loop_->flush();
    }
    return done();
  }
  // The accepting stream, on the connection the listener holds.
  void accept_into(TlsOwner& owner, const TlsContext* tls, const TlsCounters& counters,
                   int timeout_ms = 5000) {
    int fd = -1;
    ASSERT_TRUE(run_until([&] {
      fd = accept4(listener_.get(), nullptr, nullptr, SOCK_NONBLOCK | SOCK_CLOEXEC);
      return fd >= 0;
    }));
    owner.stream = std::make_unique<Stream>(*loop_, fd, &TlsOwner::on, &owner, 16 * 1024,
                                            Stream::Reads::compact);
    if (tls != nullptr) owner.stream->start_tls(tls->new_session(), counters, timeout_ms);
  }
  void connect_client(const TlsContext* tls, const TlsCounters& counters = {}) {
    client_.stream = std::make_unique<Stream>(*loop_, -1, &TlsOwner::on, &client_, 64 * 1024,
                                              Stream::Reads::reserved);
    ASSERT_TRUE(client_.stream->connect(address_));
    if (tls != nullptr) client_.stream->start_tls(tls->new_session(), counters, 5000);
  }

  event_base* base_ = nullptr;
  std::unique_ptr<StreamLoop> loop_;
  event* tick_ = nullptr;
  SocketAddress address_;
  test_sockets::Fd listener_;
  TlsOwner server_, client_;
};

std::shared_ptr<const TlsContext> build(const TlsOptions& o) {
  TlsLoadError error;
  auto ctx = TlsContext::build(o, error);
  EXPECT_TRUE(ctx) << error.message;
  return ctx;
}

TEST_F(TlsStreamTest, BytesCrossBothWaysAndConnectedComesAfterTheHandshake) {
  auto server_ctx = build(accepting());
  auto client_ctx = build(connecting());
  Counter handshakes, tls13;
  TlsCounters sc;
  sc.handshakes = &handshakes;
  sc.tls1_3 = &tls13;
  connect_client(client_ctx.get());
  // Appended before the handshake: it leaves once the handshake is done.
  evbuffer_add(client_.stream->output(), "get a\r\n", 7);
  client_.stream->end_record();
  client_.stream->mark_dirty();
  accept_into(server_, server_ctx.get(), sc);
  ASSERT_TRUE(run_until([&] { return server_.received == "get a\r\n"; })) << server_.received;
  EXPECT_EQ(client_.connected, 1);
  EXPECT_EQ(handshakes.get(), 1u);
  EXPECT_EQ(tls13.get(), 1u);
  // Far more than one record, and than the ciphertext made ahead at once.
  std::string big(3 << 20, 'v');
  for (size_t i = 0; i < big.size(); i += 4093) big[i] = static_cast<char>('a' + i % 26);
  evbuffer_add(server_.stream->output(), big.data(), big.size());
  server_.stream->mark_dirty();
  ASSERT_TRUE(run_until([&] { return client_.received.size() >= big.size(); }, 20000));
  EXPECT_TRUE(client_.received == big);
  EXPECT_EQ(server_.stream->output_length(), 0u);
  // The client closes: the server reads the end of stream.
  client_.stream.reset();
  ASSERT_TRUE(run_until([&] { return server_.eofs + server_.errors > 0; }));
  EXPECT_EQ(server_.errors, 0);
}

TEST_F(TlsStreamTest, PlaintextOnATlsStreamFailsAndIsCounted) {
  auto server_ctx = build(accepting());
  Counter not_tls;
  TlsCounters sc;
  sc.failures[static_cast<size_t>(TlsFailure::not_tls)] = &not_tls;
  connect_client(nullptr);
  evbuffer_add(client_.stream->output(), "get a\r\n", 7);
  client_.stream->mark_dirty();
  accept_into(server_, server_ctx.get(), sc);
  ASSERT_TRUE(run_until([&] { return server_.errors > 0; }));
  EXPECT_EQ(not_tls.get(), 1u);
  EXPECT_EQ(server_.received, "");
  EXPECT_NE(server_.stream->tls_error(), "");
}

TEST_F(TlsStreamTest, AHandshakeThatStallsFailsAtItsDeadline) {
  auto server_ctx = build(accepting());
  Counter timeouts;
  TlsCounters sc;
  sc.failures[static_cast<size_t>(TlsFailure::timeout)] = &timeouts;
  connect_client(nullptr);  // connects, then says nothing
  accept_into(server_, server_ctx.get(), sc, 200);
  ASSERT_TRUE(run_until([&] { return server_.errors > 0; }));
  EXPECT_EQ(timeouts.get(), 1u);
}

TEST_F(TlsStreamTest, AServerTheClientDoesNotTrustFailsTheConnect) {
  TlsOptions o = connecting();
  o.name = "elsewhere";  // the certificate names localhost
  auto client_ctx = build(o);
  auto server_ctx = build(accepting());
  Counter failed;
  TlsCounters cc;
  cc.failures[static_cast<size_t>(TlsFailure::certificate)] = &failed;
  connect_client(client_ctx.get(), cc);
  accept_into(server_, server_ctx.get(), {});
  ASSERT_TRUE(run_until([&] { return client_.errors > 0; }));
  EXPECT_EQ(client_.connected, 0);
  EXPECT_EQ(failed.get(), 1u);
}

}  // namespace
}  // namespace memshard::proxy
