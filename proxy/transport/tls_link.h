// The TLS state of one Stream (stream.h): its SSL object over the stream's
// socket, where the handshake stands, and its deadline. A Stream without
// TLS has none of this, so plain connections pay one null pointer.
//
// The SSL object reads the socket itself, but writes its records into an
// evbuffer of ciphertext (`cipher`), which the stream writes as it writes a
// plain stream's output: once per loop iteration, in the same io_uring
// batch as every other socket, so TLS keeps the write batching without
// kernel TLS. Records end where the owner asks (Stream::end_record), which
// memcached's TLS needs (see stream.h).
#pragma once

#include <event2/buffer.h>
#include <event2/event.h>
#include <event2/event_struct.h>
#include <openssl/ssl.h>

#include <cstdint>
#include <deque>
#include <memory>
#include <string>

#include "proxy/support/stats.h"
#include "proxy/support/timer.h"

namespace memshard::proxy {

// Why a handshake failed.
enum class TlsFailure : uint8_t {
  not_tls,      // the peer sent something that is not TLS (plaintext, garbage)
  certificate,  // a certificate was missing, untrusted, expired or misnamed
  version,      // no protocol version both sides accept
  timeout,      // the handshake did not finish in time
  closed,       // the peer went away mid-handshake
  other,
};
inline constexpr size_t kTlsFailureKinds = 6;

// Where a TLS stream counts its handshakes (its owner's counters; any may
// be null).
struct TlsCounters {
  Counter* handshakes = nullptr;  // completed
  Counter* resumed = nullptr;     // of those, resuming an earlier session
  Counter* tls1_2 = nullptr;      // completed, by protocol version
  Counter* tls1_3 = nullptr;
  Counter* failures[kTlsFailureKinds] = {};
};

struct TlsLink {
  // Takes `session` and gives it its write side (into `cipher`).
  TlsLink(SSL* session, const TlsCounters& counts);
  ~TlsLink();
  TlsLink(const TlsLink&) = delete;
  TlsLink& operator=(const TlsLink&) = delete;

  SSL* ssl;
  TlsCounters counters;
  std::unique_ptr<Timer> deadline;  // the handshake's (Stream::start_tls)
  bool handshaking = true;
  short handshake_wants = 0;  // EV_READ / EV_WRITE the handshake waits for
  evbuffer* cipher;           // records made and not yet written
  // Plaintext bytes encrypted so far, and the positions (in that count)
  // where a record must end.
  uint64_t encrypted = 0;
  std::deque<uint64_t> record_ends;
  std::string error;  // why the handshake failed, for the log

  void count_success();
  // Classifies the failure OpenSSL queued (after SSL_get_error said
  // SSL_ERROR_SSL or SSL_ERROR_SYSCALL), fills `error`, counts it.
  TlsFailure classify(int ssl_error);
  void count_failure(TlsFailure why);
};

const char* tls_failure_name(TlsFailure why);

}  // namespace memshard::proxy
