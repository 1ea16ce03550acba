// An OpenSSL context (SSL_CTX) for one side of one pool: accepting its
// clients, or connecting to its servers. Built from files when a config is
// loaded or reloaded, off the request path; immutable afterwards and shared
// by every worker, so a reload that rotates a certificate makes a new one
// for new handshakes while connections already open keep theirs (an SSL
// object holds a reference to its context).
#pragma once

#include <openssl/ssl.h>

#include <cstdint>
#include <memory>
#include <optional>
#include <string>

namespace memshard::proxy {

struct TlsOptions {
  enum class Role : uint8_t { accept, connect };
  Role role = Role::accept;
  std::string cert_file, key_file;  // PEM; both empty: no certificate of our own
  std::string ca_file;              // empty with verify_peer: the system's CAs
  bool verify_peer = false;         // accept: refuse a client without a good cert
  int min_version = TLS1_2_VERSION;
  std::string name;        // connect: the name to verify and send as SNI (empty: the host)
  std::string session_id;  // accept: the session cache's scope (the pool's name)
};

// What failed to load, for an error that names the directive.
struct TlsLoadError {
  enum class File : uint8_t { cert, key, ca };
  File file;
  std::string message;
};

class TlsContext {
 public:
  // Null and `error` set when a file does not load, has expired, or the
  // key does not match the certificate.
  static std::shared_ptr<const TlsContext> build(const TlsOptions& options, TlsLoadError& error);
  ~TlsContext();
  TlsContext(const TlsContext&) = delete;
  TlsContext& operator=(const TlsContext&) = delete;

  // A new session for one connection. `host`: a server's host, used for
  // SNI and verification when the options gave no name.
  SSL* new_session(const std::string& host = "") const;
  TlsOptions::Role role() const { return options_.role; }
  // When our own certificate lapses (seconds since the epoch), if we have one.
  std::optional<int64_t> not_after() const { return not_after_; }

 private:
  explicit TlsContext(TlsOptions options) : options_(std::move(options)) {}
  TlsOptions options_;
  SSL_CTX* ctx_ = nullptr;
  std::optional<int64_t> not_after_;
};

}  // namespace memshard::proxy
