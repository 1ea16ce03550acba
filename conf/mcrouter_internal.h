// What an mcrouter config means, as memshard can say it: the pieces
// conf/mcrouter.cc reads the JSON into (pools of servers, what each route
// handle does with reads and with writes) and the memshard pools and
// routes conf/mcrouter_yaml.cc writes out of them. Internal to conf/.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "conf/model.h"

namespace memshard::conf::mcrouter {

// mcrouter's --server-timeout default: a pool without server_timeout waits
// this long for a reply, as memshard's `timeout` does.
inline constexpr int kDefaultTimeoutMs = 1000;
// The longest expiry a gutter caps at (gutter_ttl's bound): memcached reads
// a larger exptime as a unix time.
inline constexpr uint32_t kMaxGutterTtl = 30 * 24 * 3600;
// replicas' bound (proxy/routes/replica_placement.h: kMaxReplicas).
inline constexpr size_t kMaxCopies = 8;

// The pool settings mcrouter's hashes are in memshard (ketama/, conf/pool.cc).
inline constexpr std::string_view kDistributionCh3 = "ch3";
inline constexpr std::string_view kDistributionWch3 = "wch3";
inline constexpr std::string_view kDistributionCrc32 = "crc32";
inline constexpr std::string_view kSaltDirective = "hash_salt";

// Where in the JSON something comes from.
struct Origin {
  std::string path;  // "route.policies[\"a:\"].children[1]"
  int line = 0;
};

// One destination of an mcrouter pool.
struct Server {
  std::string address;  // as memshard writes it: host:port (IPv6 without brackets) or /path
  Origin origin;
};

// One pool of `pools` (or written inline), its `inherit` applied.
struct SourcePool {
  std::string name;
  Origin origin;
  std::vector<Server> servers;
  std::vector<std::string> weights;  // as written; empty when the pool has none
  Origin weights_origin;
  int timeout_ms = kDefaultTimeoutMs;
};

enum class HashFunc { ch3, wch3, crc32 };

struct Hashing {
  HashFunc func = HashFunc::ch3;
  std::string salt;
  std::vector<std::string> weights;  // wch3: one per server, as written
};

// Servers in order, from one pool (or, for a HashRoute over several
// `Pool|X` lists, from several, one after the other).
struct Group {
  std::vector<const Server*> servers;
  std::string name;  // the pool's name; "A+B" for several
  int timeout_ms = kDefaultTimeoutMs;
  std::string key() const;
};

// What a route handle does with one class of requests (reads or writes).
enum class Kind {
  hashed,  // each key to one server of a group, by a hash (PoolRoute, HashRoute)
  one_of,  // any server of a group, the next on an error (LatestRoute|Pool|A, ...)
  all_of,  // every server of a group (AllSyncRoute|Pool|A, ...)
  chain,   // parts in order: the next on an error (or a miss) of the one before
  fanout,  // every part (AllSyncRoute over routes, ...)
  error,   // an error reply (ErrorRoute)
  warm,    // reads: parts[0] (cold), then parts[1] (warm) on a miss, copied back (WarmUpRoute)
  null,    // answered at once, nothing sent (NullRoute, DevNullRoute)
};

struct Sem {
  Kind kind = Kind::error;
  Group group;                              // hashed, one_of, all_of
  Hashing hashing;                          // hashed
  WritePolicy policy = WritePolicy::first;  // all_of, fanout: whose reply the client gets
  bool on_miss = false;                     // chain, one_of: a miss fails over too
  std::vector<Sem> parts;                   // chain, fanout
  std::optional<uint32_t> ttl;              // expiries capped (ModifyExptimeRoute, min)
  std::optional<uint32_t> ttl_set;          // every expiry set to this (ModifyExptimeRoute, set)
  uint32_t warm_ttl = 0;                    // warm: the copies' expiry (WarmUpRoute's exptime)
  std::string what;                         // the handle, for messages ("PoolRoute|A")
  Origin origin;
  std::string key() const;  // equal keys: the same placement and behaviour
};

// A memshard pool with servers.
struct PoolSpec {
  Group group;
  Hashing hashing;
  bool plain_hash = false;  // memshard's default ring (replicas: every server holds every key)
  uint32_t replicas = 1;
  WritePolicy policy = WritePolicy::first;
  bool read_failover_on_miss = false;
  bool eject = false;  // auto_eject_hosts: mcrouter's TKO skips a failing copy
  std::string gutter;  // memshard pool name
  uint32_t gutter_ttl = 0;
  uint32_t ttl_max = 0;             // ModifyExptimeRoute, min; 0: none
  std::optional<uint32_t> ttl_set;  // ModifyExptimeRoute, set
  Origin origin;
  std::string what;
  std::string key() const;
};

// Where a route of the listener sends its keys.
struct Target {
  enum class Kind { pool, zones, error, blackhole } kind = Kind::error;
  std::vector<std::string> pools;  // memshard pool names: one, or the zone copies in read order
  bool on_miss = false;            // zones: read_failover_on_miss
  WritePolicy policy = WritePolicy::first;  // zones: write_policy
  std::string warm_from;                    // WarmUpRoute: the warm pool; empty: none
  uint32_t warm_ttl = 0;
  Origin origin;
};

struct RouteOut {
  std::string prefix;
  bool is_default = false;
  Target target;
  Origin origin;
};

// The whole mapping, ready to write out.
struct Mapping {
  std::vector<std::pair<std::string, PoolSpec>> pools;  // memshard name, in order made
  std::vector<RouteOut> routes;                         // the listener's
  std::string listener;      // a pool of `pools` that listens itself, or empty: a routing pool
  std::string routing_name;  // the routing pool's name, when it routes
  Origin route_origin;       // the JSON's route
};

// Writes memshard's YAML for `m`: the listener listens on `listen`
// (`placeholder`: mcrouter's config had none and --listen gave none).
// `origins` gets the JSON origin of each line written.
std::string write_yaml(const Mapping& m, const std::string& file, const std::string& listen,
                       bool placeholder, std::vector<std::pair<std::string, int>>& origins);

std::string_view policy_name(WritePolicy p);

}  // namespace memshard::conf::mcrouter
