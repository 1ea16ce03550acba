// A pool's TLS contexts, loaded from the files its config names each time
// a topology is built: at start and at every reload, which is how a
// rotated certificate or key comes into use. A file that does not load
// fails the build, so a reload that would break TLS changes nothing.
#include <stdexcept>
#include <string>

#include "proxy/routes/topology.h"

namespace memshard::proxy {

namespace {

// Relative names are the config file's neighbours, wherever memshard runs
// from (a daemon changes to /).
std::string beside(const std::string& config_file, const std::string& name) {
  if (name.empty() || name.front() == '/') return name;
  size_t slash = config_file.rfind('/');
  return slash == std::string::npos ? name : config_file.substr(0, slash + 1) + name;
}

std::shared_ptr<const TlsContext> load(const std::string& file, const conf::PoolConfig& pc,
                                       const TlsOptions& options, const char* cert_directive,
                                       const char* key_directive, const char* ca_directive) {
  TlsLoadError error;
  std::shared_ptr<const TlsContext> ctx = TlsContext::build(options, error);
  if (ctx) return ctx;
  const char* directive = error.file == TlsLoadError::File::cert  ? cert_directive
                          : error.file == TlsLoadError::File::key ? key_directive
                                                                  : ca_directive;
  conf::ConfigError e{file, pc.tls.line_of(directive), directive,
                      "pool '" + pc.name + "': " + error.message};
  throw std::runtime_error(e.to_string());
}

}  // namespace

void load_pool_tls(const std::string& file, Pool& pool) {
  const conf::PoolConfig& pc = pool.config;
  const conf::TlsConfig& t = pc.tls;
  if (t.listens()) {
    TlsOptions o;
    o.role = TlsOptions::Role::accept;
    o.cert_file = beside(file, t.cert_file);
    o.key_file = beside(file, t.key_file);
    o.ca_file = beside(file, t.ca_file);
    o.verify_peer = t.verify_client;
    o.min_version = t.min_version == "1.3" ? TLS1_3_VERSION : TLS1_2_VERSION;
    o.session_id = pc.name;
    pool.client_tls = load(file, pc, o, "tls_cert_file", "tls_key_file", "tls_ca_file");
  }
  if (t.server_tls) {
    TlsOptions o;
    o.role = TlsOptions::Role::connect;
    o.cert_file = beside(file, t.server_cert_file);
    o.key_file = beside(file, t.server_key_file);
    o.ca_file = beside(file, t.server_ca_file);
    o.verify_peer = t.server_verify;
    o.name = t.server_name;
    pool.server_tls =
        load(file, pc, o, "server_tls_cert_file", "server_tls_key_file", "server_tls_ca_file");
  }
}

}  // namespace memshard::proxy
