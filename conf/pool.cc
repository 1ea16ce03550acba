#include "conf/pool.h"

#include <algorithm>
#include <array>
#include <climits>
#include <cstdint>
#include <cstdlib>
#include <map>
#include <optional>
#include <string_view>
#include <vector>

#include "conf/values.h"
#include "ketama/hash.h"

namespace memshard::conf::detail {
namespace {

constexpr int kMinItemSizeMax = 1024;        // memcached's -I lower bound
constexpr int kMaxItemSizeMax = 1024 << 20;  // and its upper bound (1 GiB)
// `distribution: modula` repeats each server `weight` times in one table
// (twemproxy allocates it whole); beyond this it is hundreds of MB.
constexpr uint64_t kMaxModulaTotalWeight = uint64_t{1} << 24;

constexpr std::array kModes = {
    ketama::Mode::twemproxy,    ketama::Mode::libmemcached_weighted,
    ketama::Mode::libmemcached, ketama::Mode::libmemcached_spy,
    ketama::Mode::libketama,    ketama::Mode::spymemcached,
};

std::string found(std::string_view text) {
  return ", found " + in_quotes(text);
}

template <class Names>
std::string join(const Names& names) {
  std::string out;
  for (const auto& n : names) out += (out.empty() ? "" : ", ") + std::string(n);
  return out;
}

std::string hash_names() {
  std::vector<std::string_view> names;
  for (ketama::HashFunction f : ketama::kAllHashFunctions) names.push_back(ketama::hash_name(f));
  return join(names);
}

std::string mode_names() {
  std::vector<std::string_view> names;
  for (ketama::Mode m : kModes) names.push_back(ketama::mode_name(m));
  return join(names);
}

// Every directive nutcracker 0.5 accepts, then memshard's extensions.
constexpr std::array<std::string_view, 44> kDirectives = {
    "listen",
    "hash",
    "hash_tag",
    "distribution",
    "timeout",
    "backlog",
    "preconnect",
    "redis",
    "redis_auth",
    "redis_db",
    "server_connections",
    "auto_eject_hosts",
    "server_retry_timeout",
    "server_failure_limit",
    "client_connections",
    "tcpkeepalive",
    "servers",
    "ketama_compat",
    "item_size_max",
    "client_idle_timeout",
    "dns_refresh",
    "replicas",
    "write_policy",
    "read_failover_on_miss",
    "read_repair",
    "reload_warmup",
    "reload_migrate_rate",
    "hot_key_log_share",
    "hot_key_cache",
    "hot_key_ttl",
    "hot_key_spread",
    "server_queue_limit",
    "routes",
    "gutter",
    "gutter_ttl",
    "ttl_max",
    "ttl_set",
    "reload_switch_at",
    "reload_switch_window",
    "repair_record",
    "auto_eject_max",
    "server_flap_time",
    "server_flap_backoff_max",
    "hash_salt",
};

// What only a pool with servers of its own uses: refused in a pool that
// routes its keys to other pools, where it would silently do nothing.
constexpr std::array<std::string_view, 32> kServerDirectives = {
    "hash",
    "hash_tag",
    "hash_salt",
    "distribution",
    "ketama_compat",
    "timeout",
    "preconnect",
    "server_connections",
    "server_queue_limit",
    "auto_eject_hosts",
    "server_retry_timeout",
    "server_failure_limit",
    "dns_refresh",
    "replicas",
    "read_repair",
    "reload_warmup",
    "reload_migrate_rate",
    "reload_switch_at",
    "reload_switch_window",
    "hot_key_log_share",
    "hot_key_cache",
    "hot_key_ttl",
    "hot_key_spread",
    "gutter",
    "gutter_ttl",
    "ttl_max",
    "ttl_set",
    "server_tls",
    "repair_record",
    "auto_eject_max",
    "server_flap_time",
    "server_flap_backoff_max",
};

// Reads one pool's directives into a PoolConfig, reporting into `errors`.
class PoolReader {
 public:
  PoolReader(const std::string& name, int line, ErrorList& errors) : errors_(errors) {
    out_.pool.name = name;
    out_.pool.line = line;
  }

  void directive(const std::string& key, int line, const YAML::Node& value) {
    line_ = line;
    key_ = key;
    if (key == "listen") listen_given_ = true;
    if (key == "servers") return servers(value);
    if (std::find(kServerDirectives.begin(), kServerDirectives.end(), key) !=
            kServerDirectives.end() ||
        key.starts_with("server_tls")) {
      server_directive_lines_.emplace_back(key, line);
    }
    if (key == "routes") return parse_routes(value, line, out_.pool, errors_);
    const std::optional<std::string> text = scalar(value);
    if (!text) return;
    if (tls_directive(out_.pool, key, *text, line, errors_)) return;
    if (discovery_directive(out_.pool, key, *text, line, errors_)) return;
    scalar_directive(*text);
  }

  ParsedPool finish(int servers_line);

 private:
  void error(std::string message) { errors_.add(line_, key_, std::move(message)); }

  std::optional<std::string> scalar(const YAML::Node& value) {
    if (value.IsScalar()) return value.Scalar();
    error("expected a single value, found " + describe(value));
    return std::nullopt;
  }

  std::optional<int> number(const std::string& text, int min = 0, int max = INT_MAX) {
    const Parsed<int> n = parse_number(text);
    if (n.value && *n.value >= min && *n.value <= max) return n.value;
    if (!n.value) {
      error(n.error + found(text));
    } else {
      error("expected a whole number from " + std::to_string(min) + " to " + std::to_string(max) +
            found(text));
    }
    return std::nullopt;
  }

  std::optional<bool> boolean(const std::string& text) {
    const Parsed<bool> b = parse_bool(text);
    if (!b.value) error(b.error + found(text));
    return b.value;
  }

  template <class T>
  void set_number(T& field, const std::string& text, int min = 0, int max = INT_MAX) {
    if (auto n = number(text, min, max)) field = static_cast<T>(*n);
  }

  void set_bool(bool& field, const std::string& text) {
    if (auto b = boolean(text)) field = *b;
  }

  void scalar_directive(const std::string& text);
  void hot_key_directive(PoolConfig& p, const std::string& key, const std::string& text);
  void servers(const YAML::Node& value);
  void check_servers();
  void check_mcrouter_hash();
  void check_routing_pool(int servers_line);
  void check_switch(const PoolConfig& p);

  ErrorList& errors_;
  ParsedPool out_;
  int line_ = 0;
  std::string key_;
  bool redis_ = false;
  int redis_auth_line_ = 0;
  bool listen_given_ = false;  // even if its value was refused
  bool hash_given_ = false;
  int hash_salt_line_ = 0;
  int ketama_compat_line_ = 0;
  bool servers_reported_ = false;  // entries or their container already reported
  int read_repair_line_ = 0;
  // Directives of kServerDirectives given, for a pool that routes.
  std::vector<std::pair<std::string, int>> server_directive_lines_;
};

void PoolReader::scalar_directive(const std::string& text) {
  PoolConfig& p = out_.pool;
  const std::string& key = key_;
  if (key == "listen") {
    Parsed<ListenAddress> listen = parse_listen(text);
    if (!listen.value) return error(listen.error + found(text));
    p.listen = std::move(*listen.value);
    out_.has_listen = true;
    out_.listen_line = line_;
  } else if (key == "hash") {
    hash_given_ = true;
    p.hash_line = line_;
    if (auto h = ketama::parse_hash_name(text)) return void(p.ring.hash = *h);
    error("expected one of " + hash_names() + found(text));
  } else if (key == "hash_tag") {
    // Two bytes, as nutcracker counts them: an opening and a closing mark.
    if (text.size() == 2) return void(p.ring.hash_tag = text);
    error("expected exactly two characters, such as \"{}\"" + found(text));
  } else if (key == "distribution") {
    if (auto d = ketama::parse_distribution_name(text)) return void(p.ring.distribution = *d);
    error("expected ketama, modula or random (twemproxy's), or ch3, wch3 or crc32 (mcrouter's)" +
          found(text));
  } else if (key == "hash_salt") {
    p.ring.hash_salt = text;
    hash_salt_line_ = line_;
  } else if (key == "ketama_compat") {
    ketama_compat_line_ = line_;
    if (auto m = ketama::parse_mode_name(text)) return void(p.ring.mode = *m);
    error("expected one of " + mode_names() + found(text));
  } else if (key == "timeout") {
    // nutcracker arms no timer for a timeout <= 0: 0 means wait forever.
    if (auto n = number(text)) p.timeout_ms = *n > 0 ? std::optional<int>(*n) : std::nullopt;
  } else if (key == "backlog") {
    set_number(p.backlog, text);
  } else if (key == "preconnect") {
    set_bool(p.preconnect, text);
  } else if (key == "redis") {
    if (auto b = boolean(text); b && *b) {
      redis_ = true;
      error("pool '" + p.name +
            "' is a redis pool (redis: true); memshard serves memcached only, so remove the "
            "pool or set redis: false");
    }
  } else if (key == "redis_auth") {
    p.redis_auth = text;
    redis_auth_line_ = line_;
  } else if (key == "redis_db") {
    set_number(p.redis_db, text);
  } else if (key == "server_connections") {
    set_number(p.server_connections, text, 1);  // nutcracker: "cannot be 0"
  } else if (key == "server_queue_limit") {
    set_number(p.server_queue_limit, text);  // 0: no limit
  } else if (key == "auto_eject_hosts") {
    set_bool(p.auto_eject_hosts, text);
  } else if (key == "server_retry_timeout") {
    set_number(p.server_retry_timeout_ms, text);
  } else if (key == "server_failure_limit") {
    set_number(p.server_failure_limit, text);
  } else if (key == "auto_eject_max") {
    const Parsed<double> share = parse_share(text);  // "50%" or the fraction 0.5
    if (!share.value) return error(share.error + found(text));
    p.auto_eject_max = *share.value;
  } else if (key == "server_flap_time") {
    set_number(p.server_flap_time_ms, text, 0, 24 * 3600 * 1000);
  } else if (key == "server_flap_backoff_max") {
    set_number(p.server_flap_backoff_max_ms, text, 0, 24 * 3600 * 1000);
  } else if (key == "repair_record") {
    set_number(p.repair_record_mb, text, 0, 65536);  // MB
  } else if (key == "client_connections") {
    set_number(p.client_connections, text);
  } else if (key == "tcpkeepalive") {
    set_bool(p.tcpkeepalive, text);
  } else if (key == "item_size_max") {
    set_number(p.item_size_max, text, kMinItemSizeMax, kMaxItemSizeMax);
  } else if (key == "client_idle_timeout") {
    set_number(p.client_idle_timeout_ms, text);
  } else if (key == "dns_refresh") {
    set_number(p.dns_refresh_ms, text);
  } else if (key == "replicas") {
    set_number(p.replicas, text, 1, 8);  // proxy/routes/replica_placement.h: kMaxReplicas
    p.replicas_line = line_;
  } else if (key == "write_policy") {
    if (text == "first") return void(p.write_policy = WritePolicy::first);
    if (text == "majority") return void(p.write_policy = WritePolicy::majority);
    if (text == "all") return void(p.write_policy = WritePolicy::all);
    error("expected first, majority or all" + found(text));
  } else if (key == "read_failover_on_miss") {
    set_bool(p.read_failover_on_miss, text);
  } else if (key == "read_repair") {
    set_bool(p.read_repair, text);
    read_repair_line_ = line_;
  } else if (key == "reload_warmup") {
    set_number(p.reload_warmup_ms, text, 0, 24 * 3600 * 1000);
  } else if (key == "reload_migrate_rate") {
    set_number(p.reload_migrate_rate, text, 0, 10000000);
    p.reload_migrate_rate_line = line_;
  } else if (key == "gutter") {
    p.gutter = text;
    p.gutter_line = line_;
  } else if (key == "gutter_ttl") {
    set_number(p.gutter_ttl_s, text, 1, 30 * 24 * 3600);  // memcached's relative-expiry limit
  } else if (key == "ttl_max") {
    set_number(p.ttl_max_s, text, 1, 30 * 24 * 3600);  // memcached's relative-expiry limit
    p.ttl_max_line = line_;
  } else if (key == "ttl_set") {
    uint32_t s = 0;
    set_number(s, text, 0, 30 * 24 * 3600);
    p.ttl_set_s = s;
    p.ttl_set_line = line_;
  } else if (key == "reload_switch_at") {
    p.reload_switch_at_line = line_;
    const Parsed<int64_t> at = parse_switch_time(text);
    if (!at.value) return error(at.error + found(text));
    p.reload_switch_at_ms = *at.value;
  } else if (key == "reload_switch_window") {
    set_number(p.reload_switch_window_ms, text, 0, 24 * 3600 * 1000);
    p.reload_switch_window_line = line_;
  } else if (key.starts_with("hot_key_")) {
    hot_key_directive(p, key, text);
  }
}

void PoolReader::hot_key_directive(PoolConfig& p, const std::string& key, const std::string& text) {
  if (key == "hot_key_log_share") {
    const Parsed<double> share = parse_share(text);  // "2%" or the fraction 0.02
    if (!share.value) return error(share.error + found(text));
    p.hot_key_log_share = *share.value;
  } else if (key == "hot_key_cache") {
    set_number(p.hot_key_cache_mb, text, 0, 65536);  // MB
  } else if (key == "hot_key_ttl") {
    set_number(p.hot_key_ttl_ms, text, 1, 3600000);
  } else if (key == "hot_key_spread") {
    set_bool(p.hot_key_spread, text);
    p.hot_key_spread_line = line_;
  }
}

void PoolReader::servers(const YAML::Node& value) {
  if (value.IsNull()) return;  // reported as "no servers" by finish()
  if (!value.IsSequence()) {
    servers_reported_ = true;
    return error("expected a list of \"host:port:weight [name]\" entries, found " +
                 describe(value));
  }
  for (const YAML::Node& item : value) {
    servers_reported_ = true;
    const int line = line_of(item);
    if (!item.IsScalar()) {
      errors_.add(line, key_,
                  "expected \"host:port:weight [name]\" or \"/path/to.sock:weight [name]\", "
                  "found " +
                      describe(item));
      continue;
    }
    const std::string& text = item.Scalar();
    Parsed<ketama::ServerEntry> entry = parse_server(text);
    if (!entry.value) {
      errors_.add(line, key_, entry.error + found(text));
      continue;
    }
    out_.pool.servers.push_back(ServerConfig{std::move(*entry.value), text, line});
  }
}

// The same memcached twice, or two servers twemproxy would give one ring name.
void PoolReader::check_servers() {
  const std::vector<ServerConfig>& servers = out_.pool.servers;
  std::map<std::string, const ServerConfig*> by_address;
  std::map<std::string, const ServerConfig*> by_name;
  uint64_t total_weight = 0;
  for (const ServerConfig& s : servers) {
    total_weight += s.entry.weight;
    if (std::string e = check_weight(s.entry, out_.pool.ring.distribution); !e.empty()) {
      errors_.add(s.line, "servers", e + found(s.text));
    }
    const auto [addr_it, new_addr] = by_address.emplace(address_key(s.entry), &s);
    const std::string name = twemproxy_ring_name(s.entry);
    const auto [name_it, new_name] = by_name.emplace(name, &s);
    if (!new_addr) {
      const ServerConfig& first = *addr_it->second;
      errors_.add(s.line, "servers",
                  "server " + in_quotes(s.text) + " has the same address as " +
                      in_quotes(first.text) + " on line " + std::to_string(first.line) +
                      "; expected each memcached once per pool");
    } else if (!new_name) {
      const ServerConfig& first = *name_it->second;
      errors_.add(s.line, "servers",
                  "server " + in_quotes(s.text) + " has the ring name " + in_quotes(name) +
                      ", as " + in_quotes(first.text) + " on line " + std::to_string(first.line) +
                      " does; expected unique names (twemproxy names a server without one "
                      "\"host\" when its port is 11211, else \"host:port\")");
    }
  }
  const int servers_line = servers.empty() ? 0 : servers.front().line;
  if (total_weight > UINT32_MAX) {
    errors_.add(servers_line, "servers",
                "pool '" + out_.pool.name + "' has a total weight of " +
                    std::to_string(total_weight) +
                    "; expected at most 4294967295 (twemproxy sums weights in 32 bits)");
  } else if (out_.pool.ring.distribution == ketama::Distribution::modula &&
             total_weight > kMaxModulaTotalWeight) {
    errors_.add(servers_line, "servers",
                "pool '" + out_.pool.name + "' has a total weight of " +
                    std::to_string(total_weight) + "; expected at most " +
                    std::to_string(kMaxModulaTotalWeight) +
                    " with distribution modula, which lists each server weight times");
  }
}

// mcrouter's hashes (distribution ch3, wch3, crc32) hash keys their own
// way: a `hash` or `ketama_compat` beside them would be silently ignored,
// and `hash_salt` is theirs alone.
void PoolReader::check_mcrouter_hash() {
  const PoolConfig& p = out_.pool;
  const ketama::Distribution d = p.ring.distribution;
  const std::string name(ketama::distribution_name(d));
  if (!ketama::is_mcrouter_distribution(d)) {
    if (hash_salt_line_ != 0) {
      errors_.add(hash_salt_line_, "hash_salt",
                  "hash_salt is appended to keys by mcrouter's hashes only, and pool '" + p.name +
                      "' has distribution " + name +
                      "; expected distribution ch3, wch3 or crc32, or no hash_salt");
    }
    return;
  }
  if (hash_given_) {
    errors_.add(p.hash_line, "hash",
                "distribution " + name + " hashes keys with " +
                    (d == ketama::Distribution::crc32 ? "mcrouter's Crc32 (the whole CRC-32)"
                                                      : "mcrouter's furc_hash") +
                    ", not with hash:; expected no hash in pool '" + p.name +
                    "' (twemproxy's hash: crc32 is another function, for ketama or modula)");
  }
  if (ketama_compat_line_ != 0) {
    errors_.add(ketama_compat_line_, "ketama_compat",
                "distribution " + name +
                    " places keys as mcrouter does, by the servers' order in the list; "
                    "expected no ketama_compat in pool '" +
                    p.name + "'");
  }
}

// A pool with `routes` holds no keys itself: servers, and what applies to
// servers, belong on the pools it routes to.
void PoolReader::check_routing_pool(int servers_line) {
  const PoolConfig& p = out_.pool;
  if (servers_line != 0) {
    errors_.add(servers_line, "servers",
                "pool '" + p.name +
                    "' has both routes and servers; expected one of them (a pool either keeps "
                    "keys on its servers or routes them to other pools)");
  }
  for (const auto& [directive, line] : server_directive_lines_) {
    errors_.add(line, directive,
                "applies to a pool's own servers, and pool '" + p.name +
                    "' routes its keys to other pools (routes:); expected it on those pools");
  }
  check_tls(p, errors_);
}

// A scheduled switch falls back on the old servers after it, for as long
// as reload_warmup says: without that window, instances whose clocks differ
// by a little would read and write different servers with nothing to
// reconcile them (docs/fleet.md).
void PoolReader::check_switch(const PoolConfig& p) {
  if (p.reload_switch_at_line != 0 && p.reload_switch_at_ms != 0 && p.reload_warmup_ms == 0) {
    errors_.add(p.reload_switch_at_line, "reload_switch_at",
                "reload_switch_at switches to the new servers with the old ones as the fallback "
                "of reads and writes for reload_warmup ms, which is off (0); set reload_warmup "
                "too, longer than the clock skew between instances (600000 is usual)");
  }
  if (p.reload_switch_window_ms > 0 && p.reload_switch_at_line == 0) {
    errors_.add(p.reload_switch_window_line, "reload_switch_window",
                "reload_switch_window spreads the keys' switch over that many ms after "
                "reload_switch_at, which is not set; set reload_switch_at too");
  }
}

ParsedPool PoolReader::finish(int servers_line) {
  // The key hash a client library uses when its user set none: for the
  // plain libmemcached modes that is libmemcached's default, not twemproxy's.
  if (!hash_given_ && (out_.pool.ring.mode == ketama::Mode::libmemcached ||
                       out_.pool.ring.mode == ketama::Mode::libmemcached_spy)) {
    out_.pool.ring.hash = ketama::HashFunction::one_at_a_time;
  }
  const PoolConfig& p = out_.pool;
  // A missing listen is checked across pools (check_routes): a pool that
  // only routes reach needs none.
  out_.listen_given = listen_given_;
  check_discovery(p, servers_line, errors_);
  if (p.routes_keys() || p.routes_line != 0) {
    check_routing_pool(servers_line);
    return std::move(out_);
  }
  if (p.servers.empty() && !servers_reported_ && p.discovery.line == 0) {
    errors_.add(servers_line ? servers_line : p.line, "servers",
                "pool '" + p.name +
                    "' has no servers; expected a list of \"host:port:weight [name]\" entries");
  }
  check_servers();
  check_mcrouter_hash();
  check_tls(p, errors_);
  if (!p.servers.empty() && p.replicas > p.servers.size()) {
    errors_.add(p.replicas_line, "replicas",
                "pool '" + p.name + "' keeps " + std::to_string(p.replicas) +
                    " copies of each key but has " + std::to_string(p.servers.size()) +
                    " server(s); expected at most one copy per server");
  }
  if (p.reload_migrate_rate > 0 && p.reload_warmup_ms == 0) {
    errors_.add(p.reload_migrate_rate_line, "reload_migrate_rate",
                "reload_migrate_rate copies moved keys during the reload_warmup window, "
                "which is off (0); set reload_warmup too");
  }
  check_switch(p);
  if (p.read_repair && !p.read_failover_on_miss) {
    errors_.add(read_repair_line_, "read_repair",
                "read_repair writes back what a read found on another copy after a miss, "
                "which only read_failover_on_miss: true looks for; expected both");
  }
  if (p.hot_key_spread && p.replicas < 2) {
    errors_.add(p.hot_key_spread_line, "hot_key_spread",
                "hot_key_spread spreads a hot key's reads over its copies, and pool '" + p.name +
                    "' keeps one copy; expected replicas: 2 or more");
  }
  if (p.ttl_max_line != 0 && p.ttl_set_line != 0) {
    errors_.add(std::max(p.ttl_max_line, p.ttl_set_line),
                p.ttl_max_line > p.ttl_set_line ? "ttl_max" : "ttl_set",
                "pool '" + p.name +
                    "' has both ttl_max and ttl_set; expected one of them (ttl_set gives every "
                    "expiry one value, so a cap beside it does nothing)");
  }
  if (!p.gutter.empty() && p.replicas > 1) {
    errors_.add(p.gutter_line, "gutter",
                "pool '" + p.name + "' keeps " + std::to_string(p.replicas) +
                    " copies of each key, and reads a down server's keys from another copy; "
                    "expected a gutter only with replicas: 1");
  }
  if (p.redis_auth && !redis_) {
    errors_.add(redis_auth_line_, "redis_auth",
                "expected no redis_auth in a memcached pool (nutcracker accepts it only with "
                "redis: true, and memshard serves memcached only)");
  }
  return std::move(out_);
}

}  // namespace

std::vector<std::string_view> pool_directive_names() {
  return {kDirectives.begin(), kDirectives.end()};
}

void ErrorList::add(int line, std::string directive, std::string message) {
  errors_.push_back(ConfigError{file_, line, std::move(directive), std::move(message)});
}

int line_of(const YAML::Node& node) {
  const int line = node.Mark().line;
  return line >= 0 ? line + 1 : 0;
}

std::string in_quotes(std::string_view s) {
  return "\"" + std::string(s) + "\"";
}

std::string describe(const YAML::Node& node) {
  switch (node.Type()) {
    case YAML::NodeType::Sequence:
      return "a list";
    case YAML::NodeType::Map:
      return "a map";
    case YAML::NodeType::Scalar:
      return in_quotes(node.Scalar());
    default:
      return "nothing";
  }
}

ParsedPool parse_pool(const std::string& name, int line, const YAML::Node& body,
                      ErrorList& errors) {
  PoolReader reader(name, line, errors);
  std::map<std::string, int> seen;  // directive -> line first given
  int servers_line = 0;
  for (auto it = body.begin(); it != body.end(); ++it) {
    const int key_line = line_of(it->first);
    if (!it->first.IsScalar()) {
      errors.add(key_line, "", "expected a directive name, found " + describe(it->first));
      continue;
    }
    const std::string& key = it->first.Scalar();
    if (std::find(kDirectives.begin(), kDirectives.end(), key) == kDirectives.end() &&
        !is_tls_directive(key) && !is_discovery_directive(key)) {
      errors.add(key_line, key,
                 "unknown directive; expected one of " + join(kDirectives) + ", " +
                     tls_directive_names() + ", " + join(discovery_directives()));
      continue;
    }
    // yaml-cpp keeps both entries of a repeated key; nutcracker refuses them.
    if (const auto [first, is_new] = seen.emplace(key, key_line); !is_new) {
      errors.add(key_line, key,
                 "duplicate directive; already given on line " + std::to_string(first->second));
      continue;
    }
    if (key == "servers") servers_line = key_line;
    reader.directive(key, key_line, it->second);
  }
  return reader.finish(servers_line);
}

}  // namespace memshard::conf::detail
