// Reading one pool (the map of directives under a pool name) from YAML.
// Internal to conf/: the public entry points are in config.h.
#pragma once

#include <yaml-cpp/yaml.h>

#include <string>
#include <string_view>
#include <vector>

#include "conf/model.h"

namespace memshard::conf::detail {

// Collects every error instead of stopping at the first, so an operator can
// fix a whole file in one pass.
class ErrorList {
 public:
  explicit ErrorList(std::string file) : file_(std::move(file)) {}
  void add(int line, std::string directive, std::string message);
  std::vector<ConfigError>& all() { return errors_; }

 private:
  std::string file_;
  std::vector<ConfigError> errors_;
};

// 1-based line of a node, 0 when yaml-cpp has no position for it.
int line_of(const YAML::Node& node);
// "a list", "a map", "nothing", "a value": for "expected X, found Y".
std::string describe(const YAML::Node& node);
// `s` between double quotes, as errors quote what the file says.
std::string in_quotes(std::string_view s);

struct ParsedPool {
  PoolConfig pool;
  bool has_listen = false;    // a valid listen directive was read
  bool listen_given = false;  // one was written, even if refused
  int listen_line = 0;
};

// Reads the directives of pool `name` (whose key is on `line`) and checks
// the pool on its own; checks across pools are the caller's.
ParsedPool parse_pool(const std::string& name, int line, const YAML::Node& body, ErrorList& errors);

// The names of the directives a pool takes, TLS's aside (pool.cc), in the
// order nutcracker lists them, then memshard's; of TLS's (tls.cc); of the
// fields of one `routes` entry (routes.cc). conf/keys.h gathers them.
std::vector<std::string_view> pool_directive_names();
std::vector<std::string_view> tls_directives();
std::vector<std::string_view> route_field_names();

// conf/routes.cc: a pool's `routes` list, and the checks across pools
// that routes, shadows and gutters need (targets exist and have servers;
// a pool without listen is reached by one of them).
void parse_routes(const YAML::Node& value, int line, PoolConfig& pool, ErrorList& errors);
void check_routes(const std::vector<ParsedPool>& pools, ErrorList& errors);

// conf/tls.cc: the TLS directives. tls_directive() reads one (false when
// `key` is not one of them); check_tls() checks them together.
bool is_tls_directive(std::string_view key);
std::string tls_directive_names();
bool tls_directive(PoolConfig& pool, const std::string& key, const std::string& text, int line,
                   ErrorList& errors);
void check_tls(const PoolConfig& pool, ErrorList& errors);

// conf/discovery.cc: servers_srv, servers_dns and their discovery_*
// settings. discovery_directive() reads one (false when `key` is not one of
// them); check_discovery() checks them against the pool (`servers_line`:
// of its `servers`, 0 when none).
bool is_discovery_directive(std::string_view key);
std::vector<std::string_view> discovery_directives();
bool discovery_directive(PoolConfig& pool, const std::string& key, const std::string& text,
                         int line, ErrorList& errors);
void check_discovery(const PoolConfig& pool, int servers_line, ErrorList& errors);

}  // namespace memshard::conf::detail
