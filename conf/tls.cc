// The TLS directives of a pool (memshard extensions). Only their shape is
// checked here; whether the files load and match is the proxy's to find
// out (proxy/transport/tls_context.h), at start and at every reload, so a
// rotated certificate is read again.
#include <algorithm>
#include <array>
#include <string_view>
#include <vector>

#include "conf/pool.h"
#include "conf/values.h"

namespace memshard::conf {

int TlsConfig::line_of(std::string_view directive) const {
  for (const auto& [name, line] : lines) {
    if (name == directive) return line;
  }
  return 0;
}

namespace detail {
namespace {

constexpr std::array<std::string_view, 11> kTlsDirectives = {
    "tls_cert_file",       "tls_key_file",    "tls_ca_file",        "tls_verify_client",
    "tls_min_version",     "server_tls",      "server_tls_ca_file", "server_tls_cert_file",
    "server_tls_key_file", "server_tls_name", "server_tls_verify",
};

}  // namespace

bool is_tls_directive(std::string_view key) {
  return std::find(kTlsDirectives.begin(), kTlsDirectives.end(), key) != kTlsDirectives.end();
}

std::vector<std::string_view> tls_directives() {
  return {kTlsDirectives.begin(), kTlsDirectives.end()};
}

std::string tls_directive_names() {
  std::string out;
  for (std::string_view n : kTlsDirectives) out += (out.empty() ? "" : ", ") + std::string(n);
  return out;
}

bool tls_directive(PoolConfig& pool, const std::string& key, const std::string& text, int line,
                   ErrorList& errors) {
  if (!is_tls_directive(key)) return false;
  TlsConfig& t = pool.tls;
  t.lines.emplace_back(key, line);
  auto set_bool = [&](bool& field) {
    Parsed<bool> b = parse_bool(text);
    if (b.value) {
      field = *b.value;
    } else {
      errors.add(line, key, b.error + ", found \"" + text + "\"");
    }
  };
  auto set_file = [&](std::string& field) {
    if (text.empty()) return errors.add(line, key, "expected a file name, found nothing");
    field = text;
  };
  if (key == "tls_cert_file") {
    set_file(t.cert_file);
  } else if (key == "tls_key_file") {
    set_file(t.key_file);
  } else if (key == "tls_ca_file") {
    set_file(t.ca_file);
  } else if (key == "tls_verify_client") {
    set_bool(t.verify_client);
  } else if (key == "tls_min_version") {
    if (text == "1.2" || text == "1.3") {
      t.min_version = text;
    } else {
      errors.add(line, key, "expected 1.2 or 1.3, found \"" + text + "\"");
    }
  } else if (key == "server_tls") {
    set_bool(t.server_tls);
  } else if (key == "server_tls_ca_file") {
    set_file(t.server_ca_file);
  } else if (key == "server_tls_cert_file") {
    set_file(t.server_cert_file);
  } else if (key == "server_tls_key_file") {
    set_file(t.server_key_file);
  } else if (key == "server_tls_name") {
    t.server_name = text;
  } else if (key == "server_tls_verify") {
    set_bool(t.server_verify);
  }
  return true;
}

void check_tls(const PoolConfig& pool, ErrorList& errors) {
  const TlsConfig& t = pool.tls;
  auto need = [&](bool ok, std::string_view directive, const std::string& message) {
    if (!ok) errors.add(t.line_of(directive), std::string(directive), message);
  };
  const bool client_side =
      !t.cert_file.empty() || !t.key_file.empty() || !t.ca_file.empty() || t.verify_client;
  if (client_side) {
    need(!t.cert_file.empty(), t.key_file.empty() ? "tls_ca_file" : "tls_key_file",
         "expected tls_cert_file as well: the listener's certificate");
    need(!t.key_file.empty(), "tls_cert_file",
         "expected tls_key_file as well: the certificate's private key");
    need(!t.verify_client || !t.ca_file.empty(), "tls_verify_client",
         "expected tls_ca_file as well: the CA that signs the clients' certificates");
    need(!pool.listen.is_unix, "tls_cert_file",
         "pool '" + pool.name + "' listens on a unix socket, which stays plain; expected no tls_*");
  }
  need(t.line_of("tls_min_version") == 0 || client_side, "tls_min_version",
       "expected tls_cert_file and tls_key_file as well: the version bounds the listener's TLS");
  for (std::string_view d : {"server_tls_ca_file", "server_tls_cert_file", "server_tls_key_file",
                             "server_tls_name", "server_tls_verify"}) {
    need(t.server_tls || t.line_of(d) == 0, d, "has no effect without server_tls: true");
  }
  need(t.server_cert_file.empty() == t.server_key_file.empty(),
       t.server_cert_file.empty() ? "server_tls_key_file" : "server_tls_cert_file",
       "expected server_tls_cert_file and server_tls_key_file together");
}

}  // namespace detail
}  // namespace memshard::conf
