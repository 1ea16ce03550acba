#include "proxy/transport/tls_context.h"

#include <openssl/err.h>
#include <openssl/x509v3.h>

#include <ctime>
#include <string>

#include "proxy/transport/socket_address.h"

namespace memshard::proxy {

namespace {

// OpenSSL's queued errors, oldest first, as one line (and the queue emptied,
// so the next failure does not report this one's).
std::string openssl_errors() {
  std::string out;
  char buf[256];
  while (unsigned long e = ERR_get_error()) {
    ERR_error_string_n(e, buf, sizeof(buf));
    out += out.empty() ? "" : "; ";
    out += buf;
  }
  return out.empty() ? "unknown error" : out;
}

std::optional<int64_t> to_epoch(const ASN1_TIME* t) {
  tm parts{};
  if (t == nullptr || ASN1_TIME_to_tm(t, &parts) != 1) return std::nullopt;
  return static_cast<int64_t>(timegm(&parts));
}

}  // namespace

std::shared_ptr<const TlsContext> TlsContext::build(const TlsOptions& options,
                                                    TlsLoadError& error) {
  ERR_clear_error();
  std::shared_ptr<TlsContext> out(new TlsContext(options));
  const bool accepting = options.role == TlsOptions::Role::accept;
  out->ctx_ = SSL_CTX_new(accepting ? TLS_server_method() : TLS_client_method());
  SSL_CTX* ctx = out->ctx_;
  auto fail = [&](TlsLoadError::File file, const std::string& what) {
    error = TlsLoadError{file, what};
    return nullptr;
  };
  if (ctx == nullptr) return fail(TlsLoadError::File::cert, openssl_errors());
  SSL_CTX_set_min_proto_version(ctx, options.min_version);
  // Renegotiation is refused (a client could make us spend a handshake's
  // CPU at will); a peer that closes without close_notify, as memcached
  // clients do, is an ordinary end of stream.
  uint64_t opts = SSL_OP_NO_RENEGOTIATION | SSL_OP_IGNORE_UNEXPECTED_EOF | SSL_OP_NO_COMPRESSION;
  SSL_CTX_set_options(ctx, opts);
  // Stream writes from an evbuffer whose front may move between a refused
  // write and its retry; idle connections give their record buffers back.
  SSL_CTX_set_mode(ctx, SSL_MODE_ENABLE_PARTIAL_WRITE | SSL_MODE_ACCEPT_MOVING_WRITE_BUFFER |
                            SSL_MODE_RELEASE_BUFFERS);
  if (!options.cert_file.empty()) {
    if (SSL_CTX_use_certificate_chain_file(ctx, options.cert_file.c_str()) != 1)
      return fail(TlsLoadError::File::cert,
                  "cannot load certificate " + options.cert_file + ": " + openssl_errors());
    X509* cert = SSL_CTX_get0_certificate(ctx);
    if (X509_cmp_current_time(X509_get0_notAfter(cert)) <= 0)
      return fail(TlsLoadError::File::cert, "certificate " + options.cert_file + " has expired");
    if (X509_cmp_current_time(X509_get0_notBefore(cert)) > 0)
      return fail(TlsLoadError::File::cert,
                  "certificate " + options.cert_file + " is not valid yet");
    out->not_after_ = to_epoch(X509_get0_notAfter(cert));
    // OpenSSL checks the pair as it loads the key.
    bool loaded = SSL_CTX_use_PrivateKey_file(ctx, options.key_file.c_str(), SSL_FILETYPE_PEM) == 1;
    bool mismatch = !loaded && ERR_GET_REASON(ERR_peek_last_error()) == X509_R_KEY_VALUES_MISMATCH;
    if (!loaded && !mismatch)
      return fail(TlsLoadError::File::key,
                  "cannot load private key " + options.key_file + ": " + openssl_errors());
    if (mismatch || SSL_CTX_check_private_key(ctx) != 1)
      return fail(TlsLoadError::File::key, "private key " + options.key_file +
                                               " does not match certificate " + options.cert_file);
  }
  if (!options.ca_file.empty()) {
    if (SSL_CTX_load_verify_locations(ctx, options.ca_file.c_str(), nullptr) != 1)
      return fail(TlsLoadError::File::ca,
                  "cannot load CA certificates " + options.ca_file + ": " + openssl_errors());
  } else if (options.verify_peer && !accepting) {
    SSL_CTX_set_default_verify_paths(ctx);
  }
  if (accepting) {
    // Resumption (session IDs and TLS 1.3 tickets) within this pool only;
    // a context of its own per reload, so a rotation starts a new cache.
    std::string id = options.session_id.substr(0, SSL_MAX_SID_CTX_LENGTH);
    SSL_CTX_set_session_id_context(ctx, reinterpret_cast<const unsigned char*>(id.data()),
                                   static_cast<unsigned>(id.size()));
    if (options.verify_peer) {
      SSL_CTX_set_verify(ctx, SSL_VERIFY_PEER | SSL_VERIFY_FAIL_IF_NO_PEER_CERT, nullptr);
      if (STACK_OF(X509_NAME)* names = SSL_load_client_CA_file(options.ca_file.c_str()))
        SSL_CTX_set_client_CA_list(ctx, names);
    }
  } else if (options.verify_peer) {
    SSL_CTX_set_verify(ctx, SSL_VERIFY_PEER, nullptr);
  }
  ERR_clear_error();
  return out;
}

TlsContext::~TlsContext() {
  SSL_CTX_free(ctx_);
}

SSL* TlsContext::new_session(const std::string& host) const {
  SSL* ssl = SSL_new(ctx_);
  if (ssl == nullptr || options_.role == TlsOptions::Role::accept) return ssl;
  const std::string& name = options_.name.empty() ? host : options_.name;
  if (name.empty()) return ssl;
  if (is_ip_literal(name)) {
    if (options_.verify_peer) X509_VERIFY_PARAM_set1_ip_asc(SSL_get0_param(ssl), name.c_str());
    return ssl;
  }
  SSL_set_tlsext_host_name(ssl, name.c_str());
  if (options_.verify_peer) SSL_set1_host(ssl, name.c_str());
  return ssl;
}

}  // namespace memshard::proxy
