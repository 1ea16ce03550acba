// The running proxy: listeners and signal handling on the main thread,
// requests on the workers. The main thread accepts connections and hands
// each to a worker (worker_picker.h: the one matching the CPU the
// connection arrives on, within a bound on imbalance); this one mechanism
// serves TCP and unix-socket listeners alike, and lets a reload open and
// close listeners without touching the workers.
#pragma once

#include <event2/event.h>

#include <atomic>
#include <cstdint>
#include <memory>
#include <set>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "conf/config.h"
#include "proxy/admin/stats_server.h"
#include "proxy/clients/client_count.h"
#include "proxy/routes/topology.h"
#include "proxy/runtime/active_workers.h"
#include "proxy/runtime/config_watch.h"
#include "proxy/runtime/discovery.h"
#include "proxy/runtime/health.h"
#include "proxy/runtime/listeners.h"
#include "proxy/runtime/main_loop.h"
#include "proxy/runtime/migration.h"
#include "proxy/runtime/name_refresh.h"
#include "proxy/runtime/reload_log.h"
#include "proxy/runtime/stats_token_source.h"
#include "proxy/runtime/worker.h"
#include "proxy/support/timer.h"

namespace memshard::proxy {

struct ProxyOptions {
  std::string config_file;
  int threads = 0;               // 0: one per CPU this process may run on
  bool watch = false;            // reload when the config file changes
  int drain_timeout_ms = 10000;  // SIGTERM: how long in-flight requests may take
  std::string stats_address = "127.0.0.1";
  uint16_t stats_port = 22222;  // 0: no stats port
  int park_after_ms = 1000;     // idle this long, a client is parked; 0: never
  bool batch_writes = true;     // io_uring write batches when the kernel allows (stream.h)
  // Every worker takes connections all the time; otherwise as few as keep
  // up with the load (worker_governor.h), `threads` at most.
  bool fixed_threads = false;
  // --stats-token-file: when given, the file holding the stats token, over
  // the config's stats_token and stats_token_file (stats_token_source.h);
  // read at start and at every reload.
  std::string stats_token_file;
  // --dns-server: the DNS servers of DNS discovery's lookups (HOST:PORT);
  // empty: those of /etc/resolv.conf.
  std::vector<std::string> dns_servers;
  // How the config file is read, at start and at every reload: --listen
  // for mcrouter's JSON config (conf/config.h).
  conf::LoadOptions load;
};

class Proxy final : public StatsView, public WorkerHost {
 public:
  explicit Proxy(ProxyOptions options);
  ~Proxy();
  Proxy(const Proxy&) = delete;
  Proxy& operator=(const Proxy&) = delete;

  // Loads the config, binds every listener and starts the workers.
  // Throws std::runtime_error with a message for the operator.
  void start();
  // Runs until SIGINT/SIGTERM. Returns the process exit code.
  int run();

  // Safe from any thread.
  uint64_t uptime_seconds() const override;
  int thread_count() const override { return static_cast<int>(workers_.size()); }
  int active_threads() const override { return active_ ? active_->active() : 0; }
  // Client connections each worker holds (by index), parked ones included.
  std::vector<uint64_t> worker_connections() const override;
  // Per-pool and per-server counters summed over the workers.
  StatsSnapshot snapshot() const override;
  // Every worker counter, summed over the workers, in declaration order.
  std::vector<std::pair<std::string_view, uint64_t>> counter_totals() const override;
  uint64_t generation() const override { return generation_.load(std::memory_order_relaxed); }
  uint64_t reloads() const override { return reloads_.load(std::memory_order_relaxed); }
  uint64_t reload_failures() const override {
    return reload_failures_.load(std::memory_order_relaxed);
  }
  uint64_t rejected_connections() const override { return listeners_->rejected(); }
  // The client connections the descriptor limit leaves room for
  // (descriptor_budget.h); memcached's max_connections.
  uint64_t max_connections() const override { return listeners_->max_connections(); }

  std::vector<TlsCertificate> tls_certificates() const override;
  uint64_t ejections() const override { return health_->ejections(); }
  uint64_t readmissions() const override { return health_->readmissions(); }
  RepairCounts repair_counts(const std::string& pool, const std::string& identity) const override;
  uint64_t held_by_cap(const std::string& pool) const override {
    return health_->held_by_cap(pool);
  }
  uint64_t pool_ejections(const std::string& pool) const override {
    return health_->pool_ejections(pool);
  }
  uint64_t ejected_at(const std::string& pool, const std::string& identity) const override {
    return health_->ejected_at(pool, identity);
  }

  // WorkerHost: from any worker thread.
  void server_failing(const std::string& pool, const std::string& identity) override {
    health_->report_failing(pool, identity);
  }
  void server_unreachable(const std::string& pool, const std::string& identity) override {
    names_->connect_failed(pool, identity);
  }
  const StatsView& stats_view() const override { return *this; }
  void hand_over(size_t to, int fd, std::string pool_name,
                 std::shared_ptr<ClientCount> pool_clients, ClientConn::Arrival arrival) override {
    workers_[to]->adopt_client(fd, std::move(pool_name), std::move(pool_clients), arrival);
  }
  // Lookups of a server's name that found other addresses than before, and
  // lookups that failed (the server keeps its last addresses).
  uint64_t dns_address_changes() const override {
    return dns_changes_.load(std::memory_order_relaxed);
  }
  uint64_t dns_failures() const override { return dns_failures_.load(std::memory_order_relaxed); }
  std::map<std::string, MigrationStatus> migrations() const override;
  std::map<std::string, SwitchStatus> switches() const override;
  std::map<std::string, DiscoveryStatus> discoveries() const override {
    return discovery_ ? discovery_->status() : std::map<std::string, DiscoveryStatus>{};
  }
  // The status page's view of the config in force (pool_layout.h).
  std::vector<PoolLayout> pool_layouts() const override;
  std::vector<ReloadRecord> reload_history() const override { return reload_log_.records(); }

  // Re-reads the config file and switches every worker to it; a config that
  // does not load, resolve or bind changes nothing. Main thread only.
  bool reload();
  // DNS discovery decided a step for `pool` (discovery.h): the config in
  // force is applied again with the pool's new servers, as a reload.
  bool apply_discovery(const std::string& pool);

 private:
  static void on_signal(evutil_socket_t sig, short, void* self);
  void on_drain_tick();
  // The topology's clock (topology_timer.cc): reload_warmup windows that
  // end, scheduled switches whose window ends, a wall clock that stepped.
  void on_warmup_end();
  // Sets the timer for the next of those.
  void arm_warmup_timer();
  // Records for stats what a reload from `before` did to switches.
  void note_switches(const Topology& before, uint64_t now_usec);
  void begin_drain();
  // Logs what the reload changes; returns per pool kept the share of the
  // keyspace that changes server.
  std::vector<std::pair<std::string, double>> log_changes(const Topology& next) const;
  // A reload that changed nothing, and why.
  bool refuse_reload(std::string why);
  // The stats token of `config` (stats_token_source.h); throws
  // std::runtime_error when its file does not load.
  StatsTokenSource stats_token_of(const conf::Config& config) const;
  // Puts `next` in force for the stats port's next request, and says so
  // when it differs from the token in force (never the token itself).
  void use_stats_token(StatsTokenSource next, bool at_start);
  // A lookup of a server's name came back (name_refresh.h).
  void apply_resolved(const NameRefresh::Result& result);
  // Applies `file` (the config file as loaded) with DNS discovery's
  // servers: every reload's path.
  bool apply_config(const conf::Config& file);
  // Members of a discovery pool moved to new addresses.
  void apply_discovered_addresses(const std::string& pool);

  ProxyOptions options_;
  event_base* base_ = nullptr;
  std::unique_ptr<MainLoop> main_loop_;  // base_ as probes and the stats port see it
  std::vector<event*> signal_events_;
  std::unique_ptr<ConfigWatch> watch_;
  std::unique_ptr<ServerHealth> health_;
  std::unique_ptr<NameRefresh> names_;
  std::unique_ptr<Discovery> discovery_;
  // The config file as last loaded (DNS discovery fills its pools' servers
  // anew at each reload).
  std::optional<conf::Config> config_;
  // Names whose last lookup failed (pool, identity): said once a streak.
  std::set<std::pair<std::string, std::string>> unresolved_;
  std::atomic<uint64_t> dns_changes_{0};
  std::atomic<uint64_t> dns_failures_{0};
  // Before the stats server, which shares its descriptor reserve.
  std::unique_ptr<Listeners> listeners_;
  std::unique_ptr<StatsServer> stats_server_;
  StatsTokenSource stats_token_;  // in force
  void install_on_workers();
  std::unique_ptr<Timer> drain_timer_;  // set once draining
  std::unique_ptr<Timer> warmup_timer_;
  // reload_migrate_rate: the walks the last reload started, per pool
  // (kept once done, for their figures); read by stats readers.
  mutable std::mutex migrations_mu_;
  std::vector<std::unique_ptr<Migration>> migrations_;
  // Starts the walks of the pools named in `only` (all when null), ending
  // those they had.
  void start_migrations(const std::set<std::string>* only = nullptr);
  // reload_switch_at, per pool (read by stats readers).
  mutable std::mutex switches_mu_;
  std::map<std::string, SwitchStatus> switches_;
  uint64_t drain_deadline_ms_ = 0;
  std::shared_ptr<const Topology> topology_;
  std::vector<std::unique_ptr<Worker>> workers_;
  std::unique_ptr<ActiveWorkers> active_;  // which take new clients
  uint64_t started_at_ = 0;
  std::atomic<uint64_t> generation_{0};
  std::atomic<uint64_t> reloads_{0};
  std::atomic<uint64_t> reload_failures_{0};
  ReloadLog reload_log_;  // the last reloads, for the status page
};

}  // namespace memshard::proxy
