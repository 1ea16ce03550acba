// Stream's TLS half (stream.h, tls_link.h): the handshake, driven by the
// socket's readiness like everything else, reads through OpenSSL, and the
// encryption of the output into records that the plain write path sends.
#include <openssl/err.h>

#include <algorithm>
#include <cerrno>
#include <cstring>

#include "proxy/support/log.h"
#include "proxy/transport/stream.h"

namespace memshard::proxy {

namespace {

// Reads per readiness at most, as for plain streams (stream.cc); OpenSSL
// hands out one record (at most 16 KiB) per read.
constexpr int kMaxTlsReadsPerEvent = 16;
// One record's worth of plaintext per SSL_write: small chains of the output
// are joined into full records rather than sent one record each.
constexpr size_t kTlsRecord = 16 * 1024;
// Ciphertext made ahead of the socket at most; the rest of the output waits
// as plaintext (and still counts in output_length()).
constexpr size_t kMaxCipherAhead = 256 * 1024;

}  // namespace

void Stream::start_tls(SSL* ssl, const TlsCounters& counters, int timeout_ms) {
  tls_ = std::make_unique<TlsLink>(ssl, counters);
  tls_timeout_ms_ = timeout_ms > 0 ? timeout_ms : 10000;
  tls_->deadline = std::make_unique<Timer>(loop_.base(), [this] { on_tls_timeout(); });
  if (connecting_ || fd_ < 0) {
    SSL_set_connect_state(ssl);  // begins once connected (handle_write)
    return;
  }
  SSL_set_accept_state(ssl);
  tls_begin();
  tls_->handshake_wants = EV_READ;  // the client speaks first
  set_interest();
}

// The socket is connected: reads go straight through it from now on.
void Stream::tls_begin() {
  BIO* rbio = BIO_new_socket(fd_, BIO_NOCLOSE);
  SSL_set0_rbio(tls_->ssl, rbio);
  tls_->deadline->arm_ms(static_cast<uint64_t>(tls_timeout_ms_));
}

void Stream::on_tls_timeout() {
  Stream* s = this;
  if (!s->tls_->handshaking || s->failed_ || s->fd_ < 0) return;
  s->tls_->error = "handshake not finished within " + std::to_string(s->tls_timeout_ms_) + " ms";
  s->tls_->count_failure(TlsFailure::timeout);
  s->tls_fail(TlsFailure::timeout);
}

// Handshake flights are written at once rather than with the loop's
// batch: there is nothing to join them with.
bool Stream::tls_send_cipher() {
  evbuffer* c = tls_->cipher;
  while (evbuffer_get_length(c) > 0) {
    int n = evbuffer_write(c, fd_);
    if (n > 0) continue;
    if (n < 0 && errno == EINTR) continue;
    return n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK);
  }
  return true;
}

void Stream::tls_handshake() {
  TlsLink& t = *tls_;
  if (!t.deadline->armed() && SSL_is_server(t.ssl) == 0) tls_begin();  // connect() just completed
  ERR_clear_error();
  int r = SSL_do_handshake(t.ssl);
  int e = r == 1 ? SSL_ERROR_NONE : SSL_get_error(t.ssl, r);
  // Whatever the step made (a flight, or the alert that says why we
  // refuse) goes out now.
  bool sent = tls_send_cipher();
  if (e != SSL_ERROR_NONE && e != SSL_ERROR_WANT_READ && e != SSL_ERROR_WANT_WRITE) {
    tls_fail(t.classify(e));
    return;
  }
  if (!sent) {
    errno = errno != 0 ? errno : EPIPE;
    t.error = std::string("cannot write the handshake: ") + strerror(errno);
    t.count_failure(TlsFailure::closed);
    tls_fail(TlsFailure::closed);
    return;
  }
  short wants = evbuffer_get_length(t.cipher) > 0 ? EV_WRITE : 0;
  if (e != SSL_ERROR_NONE) {
    t.handshake_wants = static_cast<short>(wants | EV_READ);
    set_interest();
    return;
  }
  t.handshaking = false;
  t.handshake_wants = 0;
  t.deadline->cancel();
  t.count_success();
  set_interest();
  if (SSL_is_server(t.ssl) == 0 && !report(Happened::connected)) return;
  // Output appended while the handshake ran, and any flight left unsent.
  if (output_length() > 0) write_out();
}

void Stream::tls_fail(TlsFailure why) {
  tls_->deadline->cancel();
  log_debug("TLS handshake failed (%s): %s", tls_failure_name(why), tls_->error.c_str());
  failed_ = true;
  eof_ = true;
  set_interest();
  report(Happened::error);
}

void Stream::tls_read(size_t& got, bool& eof, bool& error) {
  SSL* ssl = tls_->ssl;
  for (int round = 0; round < kMaxTlsReadsPerEvent; ++round) {
    size_t have = input_length();
    if (have >= input_limit_) break;
    size_t want = std::min(read_chunk_, input_limit_ - have);
    ERR_clear_error();
    int n = SSL_read(ssl, loop_.scratch_.data(), static_cast<int>(want));
    if (n > 0) {
      evbuffer_add(input(), loop_.scratch_.data(), static_cast<size_t>(n));
      got += static_cast<size_t>(n);
      continue;
    }
    int e = SSL_get_error(ssl, n);
    if (e == SSL_ERROR_WANT_READ || e == SSL_ERROR_WANT_WRITE) break;
    if (e == SSL_ERROR_ZERO_RETURN) {
      eof = true;
    } else {
      error = true;
    }
    ERR_clear_error();
    break;
  }
  // A read can make records of its own (a key update's answer).
  if (evbuffer_get_length(tls_->cipher) > 0) mark_dirty();
}

void Stream::end_record() {
  if (tls_ == nullptr) return;
  uint64_t at = tls_->encrypted + (output_ != nullptr ? evbuffer_get_length(output_) : 0);
  if (tls_->record_ends.empty() || tls_->record_ends.back() < at) tls_->record_ends.push_back(at);
}

bool Stream::tls_encrypt() {
  TlsLink& t = *tls_;
  if (t.handshaking || output_ == nullptr) return true;
  while (evbuffer_get_length(output_) > 0 && evbuffer_get_length(t.cipher) < kMaxCipherAhead) {
    while (!t.record_ends.empty() && t.record_ends.front() <= t.encrypted)
      t.record_ends.pop_front();
    size_t len = std::min(evbuffer_get_length(output_), kTlsRecord);
    if (!t.record_ends.empty()) len = std::min<uint64_t>(len, t.record_ends.front() - t.encrypted);
    unsigned char* bytes = evbuffer_pullup(output_, static_cast<ev_ssize_t>(len));
    ERR_clear_error();
    int n = SSL_write(t.ssl, bytes, static_cast<int>(len));
    if (n <= 0) {
      // Records go to memory, which never refuses: only a broken session
      // ends up here.
      ERR_clear_error();
      errno = EPROTO;
      return false;
    }
    evbuffer_drain(output_, static_cast<size_t>(n));
    t.encrypted += static_cast<uint64_t>(n);
  }
  return true;
}

}  // namespace memshard::proxy
