// What the admin layer reads of the running proxy: a narrow, read-only
// view that the runtime implements (and a test can fake), so rendering
// stats needs neither workers nor a whole proxy. Every reader is safe to
// call from any thread.
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "proxy/support/hot_key_sketch.h"

namespace memshard::proxy {

// Per-pool and per-server counters of every worker, summed by name.
struct StatsSnapshot {
  struct Server {
    std::string identity;
    std::vector<uint64_t> counters;  // MEMSHARD_SERVER_COUNTERS order
  };
  struct PoolTotals {
    std::vector<uint64_t> counters;  // MEMSHARD_POOL_COUNTERS order
    std::vector<uint64_t> latency;   // per bucket (not cumulative)
    uint64_t latency_sum_usec = 0;
    std::map<std::string, Server> servers;  // by stats name
    std::vector<HotKeySummary> hot_keys;    // one per worker, merged when shown
    double hot_key_share = 0.01;            // hot_key_log_share
    // A routing pool's routes, by name (prefix or "(default)"):
    // MEMSHARD_ROUTE_COUNTERS order.
    std::map<std::string, std::vector<uint64_t>> routes;
  };
  std::map<std::string, PoolTotals> pools;
};

// One old server's walk, as this instance knows it: walked here, or by
// another instance of the fleet (its lease says how far it got).
struct MigrationWalk {
  std::string server;  // the old server's identity
  std::string walker;  // the instance walking or done walking it; empty until known
  std::string state;   // waiting, walking, done, failed
  uint64_t seen = 0;   // items listed
  uint64_t moved = 0;  // copied to their new servers
};

// A pool's background migration after a reload (reload_migrate_rate):
// the keys of its last walk, by what became of them.
struct MigrationStatus {
  uint64_t seen = 0;          // items the old servers listed
  uint64_t moved = 0;         // copied to their new servers
  uint64_t skipped = 0;       // already there, gone meanwhile, or being written
  uint64_t failed = 0;        // a server did not answer or answered an error
  uint64_t pending = 0;       // moved keys listed and not handled yet
  uint64_t seconds_left = 0;  // of the warm-up window
  bool running = false;
  std::string instance;              // this instance, as walkers are named
  std::vector<MigrationWalk> walks;  // per old server
};

// A pool's scheduled switch (reload_switch_at): the one that waits or
// whose window runs, else the last one.
struct SwitchStatus {
  bool pending = false;     // a switch waits, or its window runs
  int64_t at_unix_ms = 0;   // when it begins (reload_switch_at)
  uint64_t window_ms = 0;   // reload_switch_window
  uint64_t generation = 0;  // the config generation that waits (or switched last)
  uint64_t switches = 0;    // switches completed since the start
  int64_t late_ms = 0;      // how late this instance loaded its config (0: in time)
};

// A pool whose servers come from DNS (servers_srv, servers_dns;
// docs/discovery.md): its source and what its lookups did.
struct DiscoveryStatus {
  std::string source;            // "servers_srv NAME" or "servers_dns NAME:PORT"
  uint64_t servers = 0;          // members in force
  uint64_t lookups = 0;          // lookups answered (or failed)
  uint64_t failures = 0;         // lookups that failed or found no records
  uint64_t changes = 0;          // changes applied (each step one)
  uint64_t held = 0;             // changes held back: flaps, and steps the cap cut
  int64_t last_change_ms = 0;    // wall clock of the last change applied (0: none)
  int64_t pending_since_ms = 0;  // a change waits for its hold since (0: none)
  std::string pending;           // what it changes
  bool failing = false;          // the last lookup failed
};

// The status page (status_json.h) shows each pool as the configuration in
// force lays it out, beside its counters.
enum class ServerState : uint8_t {
  up,        // in the ring
  ejected,   // out of the ring (auto_eject_hosts) until a probe answers
  probing,   // ejected, and a probe of it is out now
  draining,  // not in the config in force: a reload removed it, and its
             // connections finish what they owe, or a reload_warmup window
             // still looks keys up on it
  joining,   // only in a reload's config that waits for its
             // reload_switch_at: keys are looked up and deleted there
             // until the switch gives it its share
};
inline std::string_view server_state_name(ServerState s) {
  switch (s) {
    case ServerState::up:
      return "up";
    case ServerState::ejected:
      return "ejected";
    case ServerState::probing:
      return "probing";
    case ServerState::draining:
      return "draining";
    case ServerState::joining:
      return "joining";
  }
  return "up";
}

struct ServerLayout {
  std::string address;  // the server's identity: "host:port" or the socket path
  std::string name;     // its stats name
  uint32_t weight = 0;
  double share = 0;   // of the keyspace whose first copy it holds, 0..1
  double copies = 0;  // of all the copies of every key it holds, 0..1 (= share unreplicated)
  ServerState state = ServerState::up;
};

struct PoolLayout {
  std::string name;
  std::string listen;        // as the config writes it
  std::string distribution;  // ketama, modula, random; mcrouter's ch3, wch3, crc32
  std::string hash;
  uint32_t replicas = 1;
  std::string write_policy;  // with replicas > 1
  bool auto_eject_hosts = false;
  bool tls = false;  // the listener speaks TLS
  // reload_warmup: windows still open, and seconds until the last ends.
  uint64_t warmup_windows = 0;
  uint64_t warmup_seconds_left = 0;
  std::vector<ServerLayout> servers;  // config order; then draining and joining ones
};

// One reload (or the start), newest last in reload_history().
struct ReloadRecord {
  int64_t at = 0;           // seconds since the epoch
  uint64_t generation = 0;  // of the config in force after it
  enum class Outcome : uint8_t { started, applied, refused } outcome = Outcome::applied;
  std::string reason;  // refused: the first error, as logged
  // applied: per pool that was there before, the share of the keyspace
  // whose server changed (0..1).
  std::vector<std::pair<std::string, double>> moved;
};
inline std::string_view reload_outcome_name(ReloadRecord::Outcome o) {
  switch (o) {
    case ReloadRecord::Outcome::started:
      return "started";
    case ReloadRecord::Outcome::applied:
      return "applied";
    case ReloadRecord::Outcome::refused:
      return "refused";
  }
  return "applied";
}

// What a server may hold stale, and its repair (docs/failures.md): from
// its repair log (proxy/backends/repair_log.h).
struct RepairCounts {
  uint64_t keys = 0;              // recorded now, to be deleted from it
  uint64_t recorded = 0;          // writes it missed, since the start
  uint64_t repairs = 0;           // keys deleted from it by the repair
  uint64_t overflow_flushes = 0;  // times its record overflowed (each owes a flush)
  uint64_t flushes = 0;           // flush_all made by the repair (overflow or missed flush)
};

class StatsView {
 public:
  virtual uint64_t uptime_seconds() const = 0;
  virtual int thread_count() const = 0;
  // Of those, the workers taking connections now (worker_governor.h).
  virtual int active_threads() const = 0;
  // Client connections each worker holds (by index), parked ones included.
  virtual std::vector<uint64_t> worker_connections() const = 0;
  virtual StatsSnapshot snapshot() const = 0;
  // Every worker counter, summed over the workers, in declaration order.
  virtual std::vector<std::pair<std::string_view, uint64_t>> counter_totals() const = 0;
  virtual uint64_t generation() const = 0;
  virtual uint64_t reloads() const = 0;
  virtual uint64_t reload_failures() const = 0;
  virtual uint64_t rejected_connections() const = 0;
  virtual uint64_t max_connections() const = 0;
  virtual uint64_t dns_address_changes() const = 0;
  virtual uint64_t dns_failures() const = 0;
  // auto_eject_hosts.
  virtual uint64_t ejections() const = 0;
  virtual uint64_t readmissions() const = 0;
  virtual uint64_t pool_ejections(const std::string& pool) const = 0;
  // When the server was ejected (us since the epoch), 0 when it is in.
  virtual uint64_t ejected_at(const std::string& pool, const std::string& identity) const = 0;
  // The server's repair record.
  virtual RepairCounts repair_counts(const std::string& /*pool*/,
                                     const std::string& /*identity*/) const {
    return {};
  }
  // Servers of the pool failing and kept in the ring by auto_eject_max.
  virtual uint64_t held_by_cap(const std::string& /*pool*/) const { return 0; }
  // Per pool whose reload started one, its background migration.
  virtual std::map<std::string, MigrationStatus> migrations() const { return {}; }
  // Per pool that has had one, its scheduled switch.
  virtual std::map<std::string, SwitchStatus> switches() const { return {}; }
  // Per pool whose servers come from DNS, its discovery.
  virtual std::map<std::string, DiscoveryStatus> discoveries() const { return {}; }
  // TLS: when each certificate of our own in force lapses (seconds since
  // the epoch); side is "client" (the listener's) or "server" (server_tls).
  struct TlsCertificate {
    std::string pool, side;
    int64_t not_after = 0;
  };
  virtual std::vector<TlsCertificate> tls_certificates() const { return {}; }
  // The status page's view of the config in force, and the last reloads.
  virtual std::vector<PoolLayout> pool_layouts() const { return {}; }
  virtual std::vector<ReloadRecord> reload_history() const { return {}; }

 protected:
  ~StatsView() = default;
};

}  // namespace memshard::proxy
