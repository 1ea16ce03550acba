// The model of a memshard configuration: pools, servers, listeners, TLS,
// and the errors a file can have, as values. conf/config.h reads a file
// into it; the pool and value parsers (pool.h, values.h) fill its parts.
// No sockets here: addresses are kept as written and resolved by the proxy.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "ketama/ring.h"

namespace memshard::conf {

struct ListenAddress {
  std::string host;  // as written; empty for a unix socket
  uint16_t port = 0;
  bool is_unix = false;
  std::string path;              // unix socket path
  std::optional<uint32_t> perm;  // unix socket permissions ("/tmp/m.sock 0666")
  std::string text;              // the directive's value as written

  bool operator==(const ListenAddress&) const = default;
};

struct ServerConfig {
  ketama::ServerEntry entry;  // host/path, port, weight, explicit name
  std::string text;           // "host:port:weight name" as written
  int line = 0;               // 1-based line in the file

  bool operator==(const ServerConfig& o) const { return text == o.text; }
};

// Which reply a replicated write gives its client: the first live copy's
// (the others are still written), a majority's, or success only when every
// live copy succeeded.
enum class WritePolicy : uint8_t { first, majority, all };
std::string_view write_policy_name(WritePolicy p);

// memshard extension: TLS on the pool's listener (tls_*) and on its
// connections to the servers (server_tls*); read by conf/tls.cc. File
// names are as written: the proxy loads them (at start and every reload).
struct TlsConfig {
  std::string cert_file, key_file, ca_file;  // tls_cert_file, tls_key_file, tls_ca_file
  bool verify_client = false;                // tls_verify_client: refuse clients without a cert
  std::string min_version = "1.2";           // tls_min_version: 1.2 or 1.3
  bool server_tls = false;
  std::string server_ca_file, server_cert_file, server_key_file;
  std::string server_name;                         // server_tls_name: name verified and sent as SNI
  bool server_verify = true;                       // server_tls_verify
  std::vector<std::pair<std::string, int>> lines;  // directive, line given
  bool listens() const { return !cert_file.empty(); }
  int line_of(std::string_view directive) const;
};

// memshard extension (README "Routing across pools"): one entry of a
// pool's `routes`, which sends the keys that start with `prefix` (every
// key no other entry takes, when it has none) to other pools.
struct RouteConfig {
  std::string prefix;
  bool is_default = false;  // no prefix: the route of every other key
  // `pool: a` is {a}; `pools: [a, b]` keeps a copy of each key in each,
  // read from the first (the local zone) and from the next when it fails.
  std::vector<std::string> pools;
  // `shadow: P`: a copy of `shadow_share` of these keys' requests (chosen
  // by a hash of the key) also goes to pool P, whose replies are dropped.
  std::string shadow;
  double shadow_share = 1.0;
  // `warm_from: P` (mcrouter's WarmUpRoute): a read that misses on the
  // route's pool(s), the cold side, looks the key up in pool P, the warm
  // side; a hit is answered and copied to the cold side with an add whose
  // expiry is `warm_ttl` seconds. Every other request goes to the cold
  // side only.
  std::string warm_from;
  int64_t warm_ttl_s = -1;  // -1: not given (required with warm_from)
  // `blackhole: true` (mcrouter's NullRoute): no pool; memshard answers
  // every request of the route itself, as NullRoute does (not stored, not
  // found, a miss), and sends nothing anywhere.
  bool blackhole = false;
  int warm_from_line = 0;
  int warm_ttl_line = 0;
  int line = 0;
  int shadow_line = 0;
  std::vector<int> pool_lines;  // per entry of `pools`

  // How stats name the route: its prefix, or "(default)".
  std::string name() const { return is_default ? "(default)" : prefix; }
};

// memshard extension (docs/discovery.md): a pool whose servers come from
// DNS by themselves. `servers_srv: NAME`: every target:port of NAME's SRV
// records is a server; `servers_dns: NAME:PORT`: every A/AAAA address of
// NAME is one, on PORT. Looked up every refresh_ms; a change is applied
// once it has been seen for hold_ms, at most max_change of the pool at a
// time (the rest in later steps). The lookups are the proxy's.
struct DiscoveryConfig {
  enum class Kind : uint8_t { none, srv, dns };
  Kind kind = Kind::none;
  std::string name;   // the SRV name, or the host name of servers_dns
  uint16_t port = 0;  // servers_dns: the port every address serves on
  int refresh_ms = 5000;
  int hold_ms = 30000;
  double max_change = 0.5;  // share of the pool's servers per step
  int line = 0;             // of servers_srv or servers_dns; 0: not given
  // The discovery directives given, with their lines.
  std::vector<std::pair<std::string, int>> lines;

  bool enabled() const { return kind != Kind::none; }
  // "servers_srv NAME" or "servers_dns NAME:PORT": how logs and stats name
  // the source.
  std::string describe() const;
  bool same_source(const DiscoveryConfig& o) const {
    return kind == o.kind && name == o.name && port == o.port;
  }
};

// Defaults are nutcracker 0.5's. A loaded config guarantees: listen set
// (port 1..65535, or a unix path of at most 107 bytes, perm <= 0777); at
// least one server, each with weight >= 1 (with distribution wch3: a
// weight from 0 to 1, ServerEntry::fraction), port 1..65535 (0 for a unix
// socket), unique address and unique twemproxy ring name; pool weights sum
// to at most 2^32-1 (2^24 with modula); hash_tag empty or 2 bytes; every
// number in 0..INT_MAX; server_connections >= 1; item_size_max 1 KiB..1 GiB.
struct PoolConfig {
  std::string name;
  int line = 0;
  ListenAddress listen;
  // hash (fnv1a_64), hash_tag, distribution (ketama), ketama_compat, hash_salt
  ketama::RingOptions ring;
  int hash_line = 0;              // line of the hash directive; 0 when the default applies
  std::optional<int> timeout_ms;  // none = wait forever, as nutcracker (also for timeout: 0)
  int backlog = 512;
  bool preconnect = false;
  // nutcracker 0.5 accepts redis_auth only with redis: true, which memshard
  // refuses, so a valid config never sets it.
  std::optional<std::string> redis_auth;
  int redis_db = 0;  // accepted for compatibility, unused
  uint32_t server_connections = 1;
  // Requests waiting on one server connection at most (sent or queued, not
  // answered); past it, new requests for that server are answered
  // SERVER_ERROR at once (load shedding). 0: no limit. A healthy memcached
  // answers a connection within a millisecond: a connection with this many
  // waiting has a server that stopped.
  uint32_t server_queue_limit = 4096;
  bool auto_eject_hosts = false;
  int server_retry_timeout_ms = 30000;
  uint32_t server_failure_limit = 2;
  // memshard extension (docs/failures.md): at most this share of the
  // pool's servers is ejected at once. Past it a failing server stays in
  // the ring and its keys fail fast: moving them onto the rest would load
  // those with more than they were sized for, and one failure would
  // cascade into the next. 0.5: a pool keeps at least half of its servers.
  double auto_eject_max = 0.5;
  // memshard extension: a server ejected again within this many ms of its
  // re-admission flaps: its next probe waits twice as long as the last,
  // up to server_flap_backoff_max ms.
  int server_flap_time_ms = 30000;
  int server_flap_backoff_max_ms = 300000;
  // memshard extension (docs/failures.md): MB of keys recorded per server
  // as written while it missed them, deleted from it before it serves
  // again. Past it, the server is flushed before it serves again.
  uint32_t repair_record_mb = 64;
  uint32_t client_connections = 0;  // 0 = no limit
  bool tcpkeepalive = false;
  // memshard extension: largest value accepted from a client (memcached's -I).
  uint32_t item_size_max = 1024 * 1024;
  // memshard extension: close a client connection that has sent nothing
  // for this many ms and is owed no reply (0 = never, as nutcracker).
  int client_idle_timeout_ms = 0;
  // memshard extension: look the servers' DNS names up again this often
  // (ms; 0 = only when a connection to one fails, at start and on reload).
  int dns_refresh_ms = 30000;
  // memshard extension: keep each key on the first `replicas` distinct
  // servers clockwise from its point (1: today's single copy). At most the
  // number of servers.
  uint32_t replicas = 1;
  int replicas_line = 0;
  // With replicas > 1: which copy's reply a write's client sees.
  WritePolicy write_policy = WritePolicy::first;
  // With replicas > 1: a read that misses tries the next copy as well (a
  // copy that restarted empty), and with read_repair the hit is written
  // back to the copies that missed.
  bool read_failover_on_miss = false;
  bool read_repair = false;
  // memshard extension: for this many ms after a reload that moves keys, a
  // read that misses a moved key on its new server looks for it on the
  // server that held it before (and copies a hit over); writes of moved
  // keys invalidate the old copy meanwhile. 0: off.
  int reload_warmup_ms = 0;
  // With reload_warmup: copy the moved keys to their new servers in the
  // background at no more than this many keys a second (0: off).
  uint32_t reload_migrate_rate = 0;
  int reload_migrate_rate_line = 0;
  // memshard extension, for a fleet of instances in front of one set of
  // servers (README "Changing a fleet of instances"): a reload whose
  // placement differs keeps routing by the placement in force until this
  // moment (ms since the epoch; 0: switch at the reload), then switches,
  // with the old servers as the reload_warmup fallback. Each key switches
  // at reload_switch_at + (its hash % reload_switch_window ms).
  int64_t reload_switch_at_ms = 0;
  int reload_switch_at_line = 0;
  int reload_switch_window_ms = 0;
  int reload_switch_window_line = 0;
  // memshard extension, hot keys (README "Hot keys"): a key whose share of
  // the pool's requests reaches hot_key_log_share is hot (logged, and
  // cached with hot_key_cache); hot_key_cache MB of values of hot keys kept
  // for hot_key_ttl ms (0 MB: no cache); hot_key_spread: with replicas > 1,
  // reads of a hot key go to any of its copies.
  double hot_key_log_share = 0.01;
  uint32_t hot_key_cache_mb = 0;
  uint32_t hot_key_ttl_ms = 1000;
  bool hot_key_spread = false;
  int hot_key_spread_line = 0;
  // memshard extension (README "Routing across pools"): a pool with
  // `routes` has no servers of its own and sends each key to another pool;
  // a pool that only routes reach has no `listen`.
  std::vector<RouteConfig> routes;
  int routes_line = 0;
  // `gutter: P`: the keys of a server that is down (refused, timed out,
  // ejected) go to pool P, with their expiry capped at gutter_ttl seconds,
  // instead of to the ring's next server.
  std::string gutter;
  int gutter_line = 0;
  uint32_t gutter_ttl_s = 10;
  // memshard extension (mcrouter's ModifyExptimeRoute): every expiry a
  // request sets on this pool's servers (a write, a touch, gat, meta T and
  // N) capped at ttl_max seconds (0 and far unix times included: action
  // min), or replaced by ttl_set seconds (action set). At most one of them.
  uint32_t ttl_max_s = 0;  // 0: no cap
  int ttl_max_line = 0;
  std::optional<uint32_t> ttl_set_s;
  int ttl_set_line = 0;
  std::vector<ServerConfig> servers;
  TlsConfig tls;
  // servers_srv / servers_dns: `servers` is filled by the proxy from DNS.
  DiscoveryConfig discovery;

  bool has_listen() const { return !listen.text.empty(); }
  bool routes_keys() const { return !routes.empty(); }
};

// memshard extension: the stats token, a top-level key beside the pools
// (a pool's value is a map, these keys' a scalar). `stats_token: TOKEN`
// gives the token itself, `stats_token_file: FILE` a file holding it (one
// line, read by the proxy at start and every reload; a relative name is
// the config file's neighbour). At most one of the two; memshard's
// --stats-token-file overrides both. None: the stats port asks for none.
struct StatsTokenConfig {
  std::string token;  // stats_token: 1 to 4096 bytes of visible ASCII
  std::string file;   // stats_token_file, as written
  int line = 0;       // of the key given; 0 when neither is

  bool given() const { return line != 0; }
  // "stats_token" or "stats_token_file", whichever is given.
  std::string_view key() const { return file.empty() ? "stats_token" : "stats_token_file"; }
};

struct Config {
  std::string file;
  std::vector<PoolConfig> pools;  // in file order
  StatsTokenConfig stats_token;

  const PoolConfig* find_pool(const std::string& name) const;
};

struct ConfigError {
  std::string file;
  int line = 0;           // 0 when the error is about the file as a whole
  std::string directive;  // e.g. "servers", "listen"; empty when none applies
  std::string message;    // says what was expected

  // "file:line: directive: message" (GCC-style, so editors can jump to it)
  std::string to_string() const;
};

}  // namespace memshard::conf
