#include "proxy/transport/tls_link.h"

#include <event2/buffer.h>
#include <openssl/bio.h>
#include <openssl/err.h>

namespace memshard::proxy {

namespace {

// A write-only BIO that appends to an evbuffer: the records OpenSSL makes
// land where the stream writes from, in one copy.
int cipher_write(BIO* bio, const char* data, size_t len, size_t* written) {
  if (evbuffer_add(static_cast<evbuffer*>(BIO_get_data(bio)), data, len) != 0) return 0;
  *written = len;
  return 1;
}

long cipher_ctrl(BIO*, int cmd, long, void*) {
  return cmd == BIO_CTRL_FLUSH ? 1 : 0;  // nothing held: a flush is done at once
}

int cipher_create(BIO* bio) {
  BIO_set_init(bio, 1);
  return 1;
}

BIO_METHOD* cipher_method() {
  static BIO_METHOD* method = [] {
    BIO_METHOD* m = BIO_meth_new(BIO_get_new_index() | BIO_TYPE_SOURCE_SINK, "memshard cipher");
    BIO_meth_set_write_ex(m, cipher_write);
    BIO_meth_set_ctrl(m, cipher_ctrl);
    BIO_meth_set_create(m, cipher_create);
    return m;
  }();
  return method;
}

}  // namespace

TlsLink::TlsLink(SSL* session, const TlsCounters& counts)
    : ssl(session), counters(counts), cipher(evbuffer_new()) {
  BIO* wbio = BIO_new(cipher_method());
  BIO_set_data(wbio, cipher);
  SSL_set0_wbio(ssl, wbio);
}

TlsLink::~TlsLink() {
  deadline.reset();
  SSL_free(ssl);
  evbuffer_free(cipher);
}

void TlsLink::count_success() {
  if (counters.handshakes) counters.handshakes->add();
  if (counters.resumed && SSL_session_reused(ssl)) counters.resumed->add();
  int v = SSL_version(ssl);
  if (v == TLS1_3_VERSION && counters.tls1_3) counters.tls1_3->add();
  if (v == TLS1_2_VERSION && counters.tls1_2) counters.tls1_2->add();
}

void TlsLink::count_failure(TlsFailure why) {
  if (Counter* c = counters.failures[static_cast<size_t>(why)]) c->add();
}

TlsFailure TlsLink::classify(int ssl_error) {
  unsigned long e = ERR_peek_last_error();
  char buf[256];
  ERR_error_string_n(e, buf, sizeof(buf));
  error = e != 0 ? buf : "connection closed during the handshake";
  TlsFailure why = TlsFailure::other;
  if (e == 0 || ssl_error == SSL_ERROR_SYSCALL || ssl_error == SSL_ERROR_ZERO_RETURN) {
    why = e == 0 ? TlsFailure::closed : TlsFailure::other;
  } else if (ERR_GET_LIB(e) == ERR_LIB_SSL) {
    switch (ERR_GET_REASON(e)) {
      case SSL_R_WRONG_VERSION_NUMBER:
      case SSL_R_HTTP_REQUEST:
      case SSL_R_HTTPS_PROXY_REQUEST:
      case SSL_R_UNKNOWN_PROTOCOL:
      case SSL_R_PACKET_LENGTH_TOO_LONG:
      case SSL_R_RECORD_LENGTH_MISMATCH:
      case SSL_R_UNEXPECTED_MESSAGE:
      case SSL_R_UNEXPECTED_RECORD:
        why = TlsFailure::not_tls;
        break;
      case SSL_R_CERTIFICATE_VERIFY_FAILED:
      case SSL_R_PEER_DID_NOT_RETURN_A_CERTIFICATE:
      case SSL_R_NO_CERTIFICATES_RETURNED:
      case SSL_R_SSLV3_ALERT_BAD_CERTIFICATE:
      case SSL_R_SSLV3_ALERT_CERTIFICATE_EXPIRED:
      case SSL_R_SSLV3_ALERT_CERTIFICATE_UNKNOWN:
      case SSL_R_SSLV3_ALERT_CERTIFICATE_REVOKED:
      case SSL_R_SSLV3_ALERT_UNSUPPORTED_CERTIFICATE:
      case SSL_R_TLSV1_ALERT_UNKNOWN_CA:
      case SSL_R_TLSV13_ALERT_CERTIFICATE_REQUIRED:
        why = TlsFailure::certificate;
        break;
      case SSL_R_UNSUPPORTED_PROTOCOL:
      case SSL_R_TLSV1_ALERT_PROTOCOL_VERSION:
      case SSL_R_NO_PROTOCOLS_AVAILABLE:
      case SSL_R_VERSION_TOO_LOW:
      case SSL_R_VERSION_TOO_HIGH:
        why = TlsFailure::version;
        break;
      default:
        break;
    }
  }
  ERR_clear_error();
  count_failure(why);
  return why;
}

const char* tls_failure_name(TlsFailure why) {
  switch (why) {
    case TlsFailure::not_tls:
      return "not TLS";
    case TlsFailure::certificate:
      return "certificate";
    case TlsFailure::version:
      return "protocol version";
    case TlsFailure::timeout:
      return "timeout";
    case TlsFailure::closed:
      return "closed";
    case TlsFailure::other:
      break;
  }
  return "other";
}

}  // namespace memshard::proxy
