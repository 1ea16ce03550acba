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
  };
  std::map<std::string, PoolTotals> pools;
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
  // Per pool whose reload started one, its background migration.
  virtual std::map<std::string, MigrationStatus> migrations() const { return {}; }
  // TLS: when each certificate of our own in force lapses (seconds since
  // the epoch); side is "client" (the listener's) or "server" (server_tls).
  struct TlsCertificate {
    std::string pool, side;
    int64_t not_after = 0;
  };
  virtual std::vector<TlsCertificate> tls_certificates() const { return {}; }

 protected:
  ~StatsView() = default;
};

}  // namespace memshard::proxy
