// One /status.json document (admin/status_json.h) as `memshard top` reads
// it: the fields it shows, parsed with yaml-cpp (JSON is YAML).
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace memshard::proxy {

struct StatusSample {
  struct Server {
    std::string address, name, state;
    uint64_t weight = 0, requests = 0, errors = 0, requests_shed = 0, connections = 0,
             in_flight = 0;
    double share = 0, copies = 0;
  };
  struct Pool {
    std::string name, listen, distribution;
    bool in_config = true, tls = false;
    uint64_t replicas = 1;
    uint64_t requests = 0, hits = 0, misses = 0, forward_errors = 0, client_connections = 0;
    std::vector<uint64_t> latency;  // per bucket
    uint64_t warmup_windows = 0, warmup_seconds_left = 0;
    bool migrating = false;
    uint64_t migrate_moved = 0, migrate_pending = 0, migrate_failed = 0;
    // servers_srv / servers_dns: the name looked up ("" when none), when
    // the servers last changed, whether lookups fail now, what change waits.
    std::string discovery, discovery_pending;
    int64_t discovery_last_change = 0;
    bool discovery_failing = false;
    std::vector<Server> servers;

    const Server* server(const std::string& address) const;
  };
  struct Reload {
    int64_t at = 0;
    uint64_t generation = 0;
    std::string outcome, reason;
  };
  struct Certificate {
    std::string pool, side;
    int64_t seconds_left = 0;
  };
  std::string source, version;
  int64_t time = 0;
  uint64_t clock_ms = 0, uptime = 0;
  uint64_t connections = 0, generation = 0, reloads = 0, reload_failures = 0;
  bool switch_pending = false;
  std::vector<uint64_t> latency_bounds_usec;
  std::vector<Reload> history;
  std::vector<Pool> pools;
  std::vector<Certificate> certificates;

  const Pool* pool(const std::string& name) const;
};

// nullopt, with `error`, when the text is not such a document.
std::optional<StatusSample> parse_status_sample(const std::string& json, std::string& error);

}  // namespace memshard::proxy
