// TlsLink (proxy/transport/tls_link.h), the TLS record plumbing under a
// Stream: the SSL object writes its records into the link's `cipher`
// buffer and never to the socket, one record per write and every write
// taken whole; handshakes are counted by version and resumption; failures
// are classified (not TLS, certificate, version, closed), counted and
// explained.
//
// Two links over a Unix socket pair, driven as Stream drives them
// (stream_tls.cc): each reads its socket itself, and the test moves what a
// link put in its cipher buffer to its socket, as the stream's writes do.
// Certificates are made in memory with OpenSSL's API; the contexts set the
// options of TlsContext that matter here.
#include "proxy/transport/tls_link.h"

#include <event2/buffer.h>
#include <gtest/gtest.h>
#include <openssl/bio.h>
#include <openssl/err.h>
#include <openssl/evp.h>
#include <openssl/ssl.h>
#include <openssl/x509.h>
#include <openssl/x509v3.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cerrno>
#include <cstdint>
#include <cstring>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "proxy/support/stats.h"
#include "proxy/support/timer.h"
#include "tests/proxy/support/test_loop.h"
#include "tests/proxy/transport/test_sockets.h"

namespace memshard::proxy {
namespace {

using test_sockets::Fd;

// ---------------------------------------------------------------------------
// Certificates and contexts

// A self-signed certificate for "localhost" and its key.
struct Identity {
  EVP_PKEY* key = nullptr;
  X509* cert = nullptr;
  Identity() = default;
  Identity(const Identity&) = delete;
  Identity& operator=(const Identity&) = delete;
  ~Identity() {
    X509_free(cert);
    EVP_PKEY_free(key);
  }
};

std::unique_ptr<Identity> make_identity(long serial) {
  auto id = std::make_unique<Identity>();
  id->key = EVP_EC_gen("P-256");
  EXPECT_NE(id->key, nullptr);
  X509* cert = id->cert = X509_new();
  X509_set_version(cert, 2);
  ASN1_INTEGER_set(X509_get_serialNumber(cert), serial);
  X509_gmtime_adj(X509_getm_notBefore(cert), -3600);
  X509_gmtime_adj(X509_getm_notAfter(cert), 24 * 3600);
  X509_set_pubkey(cert, id->key);
  X509_NAME* name = X509_get_subject_name(cert);
  X509_NAME_add_entry_by_txt(name, "CN", MBSTRING_ASC,
                             reinterpret_cast<const unsigned char*>("localhost"), -1, -1, 0);
  X509_set_issuer_name(cert, name);
  X509V3_CTX v3;
  X509V3_set_ctx_nodb(&v3);
  X509V3_set_ctx(&v3, cert, cert, nullptr, nullptr, 0);
  X509_EXTENSION* san = X509V3_EXT_conf_nid(nullptr, &v3, NID_subject_alt_name, "DNS:localhost");
  EXPECT_NE(san, nullptr);
  X509_add_ext(cert, san, -1);
  X509_EXTENSION_free(san);
  EXPECT_GT(X509_sign(cert, id->key, EVP_sha256()), 0);
  return id;
}

const Identity& server_identity() {
  static auto id = make_identity(1);
  return *id;
}

const Identity& stranger_identity() {
  static auto id = make_identity(2);
  return *id;
}

using Ctx = std::unique_ptr<SSL_CTX, decltype(&SSL_CTX_free)>;

// As TlsContext sets them: a peer that closes without close_notify is an
// ordinary end of stream.
void set_proxy_options(SSL_CTX* ctx) {
  SSL_CTX_set_options(
      ctx, SSL_OP_NO_RENEGOTIATION | SSL_OP_IGNORE_UNEXPECTED_EOF | SSL_OP_NO_COMPRESSION);
}

Ctx accepting_ctx(int min_version = TLS1_2_VERSION) {
  Ctx ctx(SSL_CTX_new(TLS_server_method()), &SSL_CTX_free);
  set_proxy_options(ctx.get());
  SSL_CTX_set_min_proto_version(ctx.get(), min_version);
  EXPECT_EQ(SSL_CTX_use_certificate(ctx.get(), server_identity().cert), 1);
  EXPECT_EQ(SSL_CTX_use_PrivateKey(ctx.get(), server_identity().key), 1);
  static const unsigned char kScope[] = "tls-link-test";
  SSL_CTX_set_session_id_context(ctx.get(), kScope, sizeof(kScope) - 1);
  return ctx;
}

// Verifies the server against `trusted`, by the name "localhost".
Ctx connecting_ctx(const Identity& trusted, int max_version = 0) {
  Ctx ctx(SSL_CTX_new(TLS_client_method()), &SSL_CTX_free);
  set_proxy_options(ctx.get());
  if (max_version != 0) SSL_CTX_set_max_proto_version(ctx.get(), max_version);
  EXPECT_EQ(X509_STORE_add_cert(SSL_CTX_get_cert_store(ctx.get()), trusted.cert), 1);
  SSL_CTX_set_verify(ctx.get(), SSL_VERIFY_PEER, nullptr);
  return ctx;
}

SSL* connecting_session(SSL_CTX* ctx, const char* name = "localhost") {
  SSL* ssl = SSL_new(ctx);
  SSL_set_tlsext_host_name(ssl, name);
  SSL_set1_host(ssl, name);
  return ssl;
}

// ---------------------------------------------------------------------------
// One end of a connection: a link over a socket, as a Stream holds it.

class End {
 public:
  End(SSL* ssl, Fd fd, bool accepting) : fd_(std::move(fd)) {
    TlsCounters c;
    c.handshakes = &handshakes;
    c.resumed = &resumed;
    c.tls1_2 = &tls1_2;
    c.tls1_3 = &tls1_3;
    for (size_t i = 0; i < kTlsFailureKinds; ++i) c.failures[i] = &failures[i];
    link = std::make_unique<TlsLink>(ssl, c);
    // Reads go straight through the socket (Stream::tls_begin).
    SSL_set0_rbio(ssl, BIO_new_socket(fd_.get(), BIO_NOCLOSE));
    if (accepting)
      SSL_set_accept_state(ssl);
    else
      SSL_set_connect_state(ssl);
  }

  // One step of the handshake, as Stream::tls_handshake takes it.
  void step() {
    if (done || failed) return;
    ERR_clear_error();
    int r = SSL_do_handshake(link->ssl);
    int e = r == 1 ? SSL_ERROR_NONE : SSL_get_error(link->ssl, r);
    send_cipher();
    if (e == SSL_ERROR_NONE) {
      done = true;
      link->handshaking = false;
      link->count_success();
    } else if (e != SSL_ERROR_WANT_READ && e != SSL_ERROR_WANT_WRITE) {
      failed = true;
      why = link->classify(e);
    }
  }

  // Writes what the link made to its socket: the stream's part.
  void send_cipher() {
    for (int i = 0; i < 100'000 && evbuffer_get_length(link->cipher) > 0; ++i) {
      if (evbuffer_write(link->cipher, fd_.get()) <= 0) {
        ASSERT_TRUE(errno == EAGAIN || errno == EWOULDBLOCK) << strerror(errno);
        return;
      }
    }
  }

  // Plaintext the peer sent, as far as it has arrived.
  std::string read_plain() {
    std::string got;
    char buf[16 * 1024];
    for (int i = 0; i < 100'000; ++i) {
      int n = SSL_read(link->ssl, buf, sizeof(buf));
      if (n <= 0) break;
      got.append(buf, static_cast<size_t>(n));
    }
    send_cipher();  // whatever reading made (a key update's answer)
    return got;
  }

  size_t cipher_length() const { return evbuffer_get_length(link->cipher); }
  int fd() const { return fd_.get(); }
  void close_socket() { fd_.reset(); }
  uint64_t failures_of(TlsFailure kind) const { return failures[static_cast<size_t>(kind)].get(); }
  uint64_t all_failures() const {
    uint64_t n = 0;
    for (const Counter& c : failures) n += c.get();
    return n;
  }

  std::unique_ptr<TlsLink> link;
  Counter handshakes, resumed, tls1_2, tls1_3;
  Counter failures[kTlsFailureKinds];
  bool done = false, failed = false;
  TlsFailure why = TlsFailure::other;

 private:
  Fd fd_;
};

struct Connection {
  std::unique_ptr<End> client, server;
};

Connection connect_pair(SSL* client_ssl, SSL* server_ssl) {
  int fds[2] = {-1, -1};
  EXPECT_EQ(socketpair(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0, fds), 0);
  return {std::make_unique<End>(client_ssl, Fd(fds[0]), false),
          std::make_unique<End>(server_ssl, Fd(fds[1]), true)};
}

// Steps both ends until each has finished or failed; bounded (every step
// is non-blocking, and a handshake takes a few).
void handshake(Connection& c) {
  for (int round = 0; round < 50; ++round) {
    c.client->step();
    c.server->step();
    bool client_over = c.client->done || c.client->failed;
    bool server_over = c.server->done || c.server->failed;
    if (client_over && server_over) return;
    // One side failed and the other waits for what will never come.
    if ((c.client->failed || c.server->failed) && round > 10) return;
  }
}

// The TLS records in `bytes`: their content types and lengths.
struct Record {
  uint8_t type;
  size_t length;
};
std::vector<Record> records_in(const std::string& bytes) {
  std::vector<Record> out;
  size_t at = 0;
  while (at + 5 <= bytes.size()) {
    size_t len = static_cast<uint8_t>(bytes[at + 3]) * 256u + static_cast<uint8_t>(bytes[at + 4]);
    out.push_back({static_cast<uint8_t>(bytes[at]), len});
    at += 5 + len;
  }
  EXPECT_EQ(at, bytes.size()) << "a record cut short";
  return out;
}

std::string take_cipher(End& end) {
  evbuffer* c = end.link->cipher;
  std::string bytes(evbuffer_get_length(c), '\0');
  evbuffer_remove(c, bytes.data(), bytes.size());
  return bytes;
}

bool nothing_to_read(int fd) {
  char c;
  return recv(fd, &c, 1, MSG_DONTWAIT | MSG_PEEK) < 0 && errno == EAGAIN;
}

constexpr uint8_t kHandshakeRecord = 22;
constexpr uint8_t kApplicationData = 23;

// ---------------------------------------------------------------------------

TEST(TlsLink, TheSessionWritesItsRecordsIntoCipherNotTheSocket) {
  Ctx client_ctx = connecting_ctx(server_identity());
  Ctx server_ctx = accepting_ctx();
  Connection c = connect_pair(connecting_session(client_ctx.get()), SSL_new(server_ctx.get()));
  EXPECT_TRUE(c.client->link->handshaking);
  ERR_clear_error();
  EXPECT_EQ(SSL_get_error(c.client->link->ssl, SSL_do_handshake(c.client->link->ssl)),
            SSL_ERROR_WANT_READ);
  // The ClientHello is in the buffer, a whole handshake record, and none of
  // it reached the socket.
  ASSERT_GT(c.client->cipher_length(), 0u);
  EXPECT_TRUE(nothing_to_read(c.server->fd()));
  unsigned char first = 0;
  evbuffer_copyout(c.client->link->cipher, &first, 1);
  EXPECT_EQ(first, kHandshakeRecord);
  // Moved to the socket, it is what the server reads and answers (its
  // answer, too, goes through its buffer: step() moves it to the socket).
  c.client->send_cipher();
  EXPECT_EQ(c.client->cipher_length(), 0u);
  c.server->step();
  EXPECT_FALSE(c.server->failed) << c.server->link->error;
  EXPECT_FALSE(nothing_to_read(c.client->fd()));
}

class TlsLinkVersions : public ::testing::TestWithParam<int> {};

TEST_P(TlsLinkVersions, AHandshakeIsCountedOnceByItsVersionAndAResumptionAsSuch) {
  const int version = GetParam();
  Ctx client_ctx = connecting_ctx(server_identity(), version);
  Ctx server_ctx = accepting_ctx();
  Connection first = connect_pair(connecting_session(client_ctx.get()), SSL_new(server_ctx.get()));
  handshake(first);
  ASSERT_TRUE(first.client->done && first.server->done)
      << first.client->link->error << " / " << first.server->link->error;
  for (End* end : {first.client.get(), first.server.get()}) {
    EXPECT_EQ(end->handshakes.get(), 1u);
    EXPECT_EQ(end->tls1_3.get(), version == TLS1_3_VERSION ? 1u : 0u);
    EXPECT_EQ(end->tls1_2.get(), version == TLS1_2_VERSION ? 1u : 0u);
    EXPECT_EQ(end->resumed.get(), 0u);
    EXPECT_EQ(end->all_failures(), 0u);
  }
  // TLS 1.3 sends the session ticket after the handshake: read it.
  first.client->read_plain();
  SSL_SESSION* session = SSL_get1_session(first.client->link->ssl);
  ASSERT_NE(session, nullptr);
  ASSERT_EQ(SSL_SESSION_is_resumable(session), 1);

  SSL* again = connecting_session(client_ctx.get());
  SSL_set_session(again, session);
  SSL_SESSION_free(session);
  Connection second = connect_pair(again, SSL_new(server_ctx.get()));
  handshake(second);
  ASSERT_TRUE(second.client->done && second.server->done);
  for (End* end : {second.client.get(), second.server.get()}) {
    EXPECT_EQ(end->handshakes.get(), 1u);
    EXPECT_EQ(end->resumed.get(), 1u);
  }
}

INSTANTIATE_TEST_SUITE_P(Tls, TlsLinkVersions, ::testing::Values(TLS1_2_VERSION, TLS1_3_VERSION),
                         [](const ::testing::TestParamInfo<int>& param) {
                           return param.param == TLS1_3_VERSION ? "tls1_3" : "tls1_2";
                         });

class TlsLinkConnected : public ::testing::Test {
 protected:
  void SetUp() override {
    c_ = connect_pair(connecting_session(client_ctx_.get()), SSL_new(server_ctx_.get()));
    handshake(c_);
    ASSERT_TRUE(c_.client->done && c_.server->done);
    c_.client->read_plain();  // the session tickets
    ASSERT_EQ(c_.client->cipher_length(), 0u);
  }
  Ctx client_ctx_ = connecting_ctx(server_identity());
  Ctx server_ctx_ = accepting_ctx();
  Connection c_;
};

TEST_F(TlsLinkConnected, EachWriteEndsARecordInCipher) {
  // Stream ends a record where its owner asks by ending an SSL_write
  // there: the link must not join or hold back writes.
  const std::vector<std::string> writes = {"get a\r\n", std::string(100, 'b'),
                                           std::string(5000, 'c')};
  std::string sent;
  for (const std::string& w : writes) {
    ASSERT_EQ(SSL_write(c_.client->link->ssl, w.data(), static_cast<int>(w.size())),
              static_cast<int>(w.size()));
    sent += w;
  }
  EXPECT_TRUE(nothing_to_read(c_.server->fd()));  // all in the buffer, none on the socket
  std::string cipher = take_cipher(*c_.client);
  auto records = records_in(cipher);
  ASSERT_EQ(records.size(), writes.size());
  for (size_t i = 0; i < writes.size(); ++i) {
    EXPECT_EQ(records[i].type, kApplicationData);
    EXPECT_GT(records[i].length, writes[i].size());  // the plaintext and its tag
    EXPECT_LT(records[i].length, writes[i].size() + 64);
  }
  ASSERT_EQ(send(c_.client->fd(), cipher.data(), cipher.size(), 0),
            static_cast<ssize_t>(cipher.size()));
  EXPECT_EQ(c_.server->read_plain(), sent);
}

TEST_F(TlsLinkConnected, AWriteOfAnySizeIsTakenWholeInOneCall) {
  // The buffer never refuses, so the stream never has a write to retry:
  // one call encrypts it all, in records of at most 16 KiB.
  std::string big(1 << 20, '\0');
  for (size_t i = 0; i < big.size(); ++i) big[i] = static_cast<char>('a' + (i * 7) % 26);
  ASSERT_EQ(SSL_write(c_.server->link->ssl, big.data(), static_cast<int>(big.size())),
            static_cast<int>(big.size()));
  EXPECT_TRUE(nothing_to_read(c_.client->fd()));
  std::string cipher = take_cipher(*c_.server);
  EXPECT_GT(cipher.size(), big.size());
  auto records = records_in(cipher);
  EXPECT_EQ(records.size(), big.size() / (16 * 1024));
  for (const Record& r : records) EXPECT_LE(r.length, 16 * 1024u + 256);
  // Through the socket, as the stream writes it while the peer reads.
  std::string got;
  size_t at = 0;
  for (int i = 0; i < 100'000 && (at < cipher.size() || got.size() < big.size()); ++i) {
    ssize_t n = send(c_.server->fd(), cipher.data() + at, cipher.size() - at, MSG_DONTWAIT);
    if (n > 0) at += static_cast<size_t>(n);
    got += c_.client->read_plain();
  }
  EXPECT_TRUE(got == big) << got.size() << " of " << big.size() << " bytes";
}

// ---------------------------------------------------------------------------
// Failures

TEST(TlsLinkFailure, PlaintextIsNotTls) {
  Ctx server_ctx = accepting_ctx();
  const std::vector<std::string> not_tls = {
      "get a\r\n",                          // memcached's text protocol
      "GET / HTTP/1.1\r\nHost: x\r\n\r\n",  // a browser
      std::string("\x80\x00\x00\x01\x00\x00\x00\x00", 8) + std::string(16, '\0'),  // binary
  };
  for (const std::string& bytes : not_tls) {
    Connection c = connect_pair(SSL_new(server_ctx.get()), SSL_new(server_ctx.get()));
    ASSERT_EQ(send(c.client->fd(), bytes.data(), bytes.size(), 0),
              static_cast<ssize_t>(bytes.size()));
    c.server->step();
    ASSERT_TRUE(c.server->failed) << bytes;
    EXPECT_EQ(c.server->why, TlsFailure::not_tls) << c.server->link->error;
    EXPECT_EQ(c.server->failures_of(TlsFailure::not_tls), 1u);
    EXPECT_EQ(c.server->all_failures(), 1u);
    EXPECT_EQ(c.server->handshakes.get(), 0u);
    EXPECT_FALSE(c.server->link->error.empty());
    // The queue is emptied: the next failure is not explained by this one.
    EXPECT_EQ(ERR_peek_error(), 0u);
  }
}

TEST(TlsLinkFailure, AnUntrustedServerFailsBothEndsOnItsCertificate) {
  Ctx client_ctx = connecting_ctx(stranger_identity());
  Ctx server_ctx = accepting_ctx();
  Connection c = connect_pair(connecting_session(client_ctx.get()), SSL_new(server_ctx.get()));
  handshake(c);
  ASSERT_TRUE(c.client->failed);
  EXPECT_EQ(c.client->why, TlsFailure::certificate) << c.client->link->error;
  EXPECT_EQ(c.client->failures_of(TlsFailure::certificate), 1u);
  EXPECT_NE(c.client->link->error.find("certificate verify failed"), std::string::npos)
      << c.client->link->error;
  // The server hears why from the client's alert.
  ASSERT_TRUE(c.server->failed);
  EXPECT_EQ(c.server->why, TlsFailure::certificate) << c.server->link->error;
  EXPECT_EQ(c.client->handshakes.get() + c.server->handshakes.get(), 0u);
}

TEST(TlsLinkFailure, AServerOfAnotherNameFailsOnItsCertificate) {
  Ctx client_ctx = connecting_ctx(server_identity());
  Ctx server_ctx = accepting_ctx();
  Connection c =
      connect_pair(connecting_session(client_ctx.get(), "elsewhere"), SSL_new(server_ctx.get()));
  handshake(c);
  ASSERT_TRUE(c.client->failed);
  EXPECT_EQ(c.client->why, TlsFailure::certificate) << c.client->link->error;
  EXPECT_EQ(c.client->failures_of(TlsFailure::certificate), 1u);
}

TEST(TlsLinkFailure, AClientWithoutTheCertificateTheServerRequiresFailsOnIt) {
  Ctx client_ctx = connecting_ctx(server_identity());
  Ctx server_ctx = accepting_ctx();
  SSL_CTX_set_verify(server_ctx.get(), SSL_VERIFY_PEER | SSL_VERIFY_FAIL_IF_NO_PEER_CERT, nullptr);
  Connection c = connect_pair(connecting_session(client_ctx.get()), SSL_new(server_ctx.get()));
  handshake(c);
  ASSERT_TRUE(c.server->failed);
  EXPECT_EQ(c.server->why, TlsFailure::certificate) << c.server->link->error;
  EXPECT_EQ(c.server->failures_of(TlsFailure::certificate), 1u);
}

TEST(TlsLinkFailure, NoVersionBothAcceptFailsBothEndsOnTheVersion) {
  Ctx client_ctx = connecting_ctx(server_identity(), TLS1_2_VERSION);
  Ctx server_ctx = accepting_ctx(TLS1_3_VERSION);
  Connection c = connect_pair(connecting_session(client_ctx.get()), SSL_new(server_ctx.get()));
  handshake(c);
  ASSERT_TRUE(c.server->failed);
  EXPECT_EQ(c.server->why, TlsFailure::version) << c.server->link->error;
  EXPECT_EQ(c.server->failures_of(TlsFailure::version), 1u);
  ASSERT_TRUE(c.client->failed);
  EXPECT_EQ(c.client->why, TlsFailure::version) << c.client->link->error;
  EXPECT_EQ(c.client->failures_of(TlsFailure::version), 1u);
}

TEST(TlsLinkFailure, APeerThatLeavesMidHandshakeIsClosed) {
  Ctx client_ctx = connecting_ctx(server_identity());
  Ctx server_ctx = accepting_ctx();
  // Before saying anything, and halfway through its ClientHello.
  for (size_t sent : {size_t{0}, size_t{20}}) {
    Connection c = connect_pair(connecting_session(client_ctx.get()), SSL_new(server_ctx.get()));
    SSL_do_handshake(c.client->link->ssl);
    std::string hello = take_cipher(*c.client);
    ASSERT_GT(hello.size(), sent);
    if (sent > 0) {
      ASSERT_EQ(send(c.client->fd(), hello.data(), sent, 0), static_cast<ssize_t>(sent));
    }
    c.client->close_socket();
    c.server->step();
    ASSERT_TRUE(c.server->failed) << "after " << sent << " bytes";
    EXPECT_EQ(c.server->why, TlsFailure::closed) << c.server->link->error;
    EXPECT_EQ(c.server->failures_of(TlsFailure::closed), 1u);
    EXPECT_EQ(c.server->link->error, "connection closed during the handshake");
  }
}

TEST(TlsLinkFailure, CountFailureCountsWhatTheStreamFoundItself) {
  // A handshake past its deadline is found by the stream, not OpenSSL.
  Ctx server_ctx = accepting_ctx();
  Connection c = connect_pair(SSL_new(server_ctx.get()), SSL_new(server_ctx.get()));
  c.server->link->count_failure(TlsFailure::timeout);
  EXPECT_EQ(c.server->failures_of(TlsFailure::timeout), 1u);
  EXPECT_EQ(c.server->all_failures(), 1u);
}

TEST(TlsLinkFailure, CountersTheOwnerDoesNotKeepAreLeftOut) {
  Ctx server_ctx = accepting_ctx();
  int fds[2];
  ASSERT_EQ(socketpair(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0, fds), 0);
  Fd ours(fds[0]), peer(fds[1]);
  Counter not_tls;
  TlsCounters only_not_tls;
  only_not_tls.failures[static_cast<size_t>(TlsFailure::not_tls)] = &not_tls;
  TlsLink link(SSL_new(server_ctx.get()), only_not_tls);
  SSL_set0_rbio(link.ssl, BIO_new_socket(ours.get(), BIO_NOCLOSE));
  SSL_set_accept_state(link.ssl);
  ASSERT_EQ(send(peer.get(), "stats\r\n", 7, 0), 7);
  ERR_clear_error();
  int r = SSL_do_handshake(link.ssl);
  ASSERT_NE(r, 1);
  EXPECT_EQ(link.classify(SSL_get_error(link.ssl, r)), TlsFailure::not_tls);
  EXPECT_EQ(not_tls.get(), 1u);
  link.count_failure(TlsFailure::timeout);  // no counter: nothing to do
  link.count_success();
}

TEST(TlsLink, FailureNames) {
  EXPECT_STREQ(tls_failure_name(TlsFailure::not_tls), "not TLS");
  EXPECT_STREQ(tls_failure_name(TlsFailure::certificate), "certificate");
  EXPECT_STREQ(tls_failure_name(TlsFailure::version), "protocol version");
  EXPECT_STREQ(tls_failure_name(TlsFailure::timeout), "timeout");
  EXPECT_STREQ(tls_failure_name(TlsFailure::closed), "closed");
  EXPECT_STREQ(tls_failure_name(TlsFailure::other), "other");
}

TEST(TlsLink, ItsHandshakeDeadlineGoesWithIt) {
  test_loop::TestLoop loop;
  Ctx server_ctx = accepting_ctx();
  bool fired = false;
  auto link = std::make_unique<TlsLink>(SSL_new(server_ctx.get()), TlsCounters{});
  link->deadline = std::make_unique<Timer>(loop.base(), [&] { fired = true; });
  link->deadline->arm_usec(0);
  link.reset();
  ASSERT_TRUE(loop.pass_usec(20'000));
  EXPECT_FALSE(fired);
}

}  // namespace
}  // namespace memshard::proxy
