// The running proxy: listeners and signal handling on the main thread,
// requests on the workers. The main thread accepts connections and hands
// each to a worker (worker_picker.h: the one matching the CPU the
// connection arrives on, within a bound on imbalance); this one mechanism
// serves TCP and unix-socket listeners alike, and lets a reload open and
// close listeners without touching the workers.
#pragma once

#include <event2/event.h>
#include <event2/listener.h>

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
#include "proxy/protocol/replies.h"
#include "proxy/routes/topology.h"
#include "proxy/runtime/config_watch.h"
#include "proxy/runtime/descriptor_budget.h"
#include "proxy/runtime/health.h"
#include "proxy/runtime/main_loop.h"
#include "proxy/runtime/migration.h"
#include "proxy/runtime/name_refresh.h"
#include "proxy/runtime/reload_log.h"
#include "proxy/runtime/worker.h"
#include "proxy/runtime/worker_governor.h"
#include "proxy/runtime/worker_picker.h"
#include "proxy/support/timer.h"
#include "proxy/support/warning_throttle.h"
#include "proxy/transport/accept_guard.h"

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
  // When not empty, every HTTP request on the stats port must carry it
  // (admin/stats_token.h; --stats-token-file).
  std::string stats_token;
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
  int active_threads() const override { return active_.load(std::memory_order_relaxed); }
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
  uint64_t rejected_connections() const override {
    return rejected_connections_.load(std::memory_order_relaxed);
  }
  // The client connections the descriptor limit leaves room for
  // (descriptor_budget.h); memcached's max_connections.
  uint64_t max_connections() const override { return max_clients_.load(std::memory_order_relaxed); }

  std::vector<TlsCertificate> tls_certificates() const override;
  uint64_t ejections() const override { return health_->ejections(); }
  uint64_t readmissions() const override { return health_->readmissions(); }
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
  // The status page's view of the config in force (pool_layout.h).
  std::vector<PoolLayout> pool_layouts() const override;
  std::vector<ReloadRecord> reload_history() const override { return reload_log_.records(); }

  // Re-reads the config file and switches every worker to it; a config that
  // does not load, resolve or bind changes nothing. Main thread only.
  bool reload();

 private:
  struct Listener {
    Proxy* proxy = nullptr;
    std::string pool;
    uint32_t client_limit = 0;  // client_connections; 0 = none
    conf::ListenAddress address;
    evconnlistener* listener = nullptr;
    std::unique_ptr<AcceptGuard> guard;  // out of descriptors: refuse, do not spin
    std::shared_ptr<ClientCount> clients;
  };
  static void on_accept(evconnlistener*, evutil_socket_t fd, sockaddr*, int, void* self);
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
  void close_listener(Listener& l);
  // The worker for a connection arriving on `cpu` (-1: unknown).
  Worker& worker_for(int cpu);
  // Binds a listener for the pool; null (and errno set) on failure.
  std::unique_ptr<Listener> open_listener(const Pool& pool);
  // False, with why, when a new listener does not bind.
  bool swap_listeners(const Topology& next, std::string& why);
  // Logs what the reload changes; returns per pool kept the share of the
  // keyspace that changes server.
  std::vector<std::pair<std::string, double>> log_changes(const Topology& next) const;
  // A reload that changed nothing, and why.
  bool refuse_reload(std::string why);
  // A lookup of a server's name came back (name_refresh.h).
  void apply_resolved(const NameRefresh::Result& result);
  // Sets max_connections from the descriptor limit and the topology in
  // force; throws at start when it leaves no room for a client.
  void set_descriptor_budget(bool starting);
  // Refuses a client for want of room; the operator hears of it at most
  // once a second.
  void refuse_over_budget(int fd, uint32_t open);

  ProxyOptions options_;
  event_base* base_ = nullptr;
  std::unique_ptr<MainLoop> main_loop_;  // base_ as probes and the stats port see it
  std::vector<event*> signal_events_;
  std::unique_ptr<ConfigWatch> watch_;
  std::unique_ptr<ServerHealth> health_;
  std::unique_ptr<NameRefresh> names_;
  // Names whose last lookup failed (pool, identity): said once a streak.
  std::set<std::pair<std::string, std::string>> unresolved_;
  std::atomic<uint64_t> dns_changes_{0};
  std::atomic<uint64_t> dns_failures_{0};
  // Before the listeners and the stats server, which use it until they go.
  DescriptorReserve descriptor_reserve_{std::string(proto::reply::kTooManyConnections)};
  std::unique_ptr<StatsServer> stats_server_;
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
  std::vector<std::unique_ptr<Listener>> listeners_;
  // Client connections open on every listener, parked ones included.
  std::shared_ptr<std::atomic<uint32_t>> open_clients_ = std::make_shared<std::atomic<uint32_t>>(0);
  std::atomic<uint64_t> max_clients_{UINT64_MAX};
  // What the proxy held itself once started, and how many listeners then:
  // a reload changes only the listeners among its own descriptors.
  uint64_t own_descriptors_ = 0;
  size_t listeners_at_start_ = 0;
  uint64_t refused_over_budget_ = 0;  // since the last warning
  uint32_t open_when_refused_ = 0;
  std::unique_ptr<WarningThrottle> over_budget_warning_;
  std::unique_ptr<WorkerPicker> picker_;
  // Workers 0 .. active_ - 1 take connections (worker_governor.h).
  std::atomic<int> active_{1};
  std::vector<int> cpus_;  // the CPUs this process may run on
  std::unique_ptr<WorkerGovernor> governor_;
  std::unique_ptr<Timer> governor_timer_;
  std::vector<WorkerGovernor::Figures> figures_;  // scratch, main thread only
  void on_governor_tick();
  // Makes `n` workers the active ones and tells every worker where its
  // connections belong now.
  void set_active_workers(size_t n);
  std::vector<uint64_t> loads_;  // scratch for picker_, main thread only
  uint64_t started_at_ = 0;
  std::atomic<uint64_t> generation_{0};
  std::atomic<uint64_t> reloads_{0};
  std::atomic<uint64_t> reload_failures_{0};
  ReloadLog reload_log_;  // the last reloads, for the status page
  std::atomic<uint64_t> rejected_connections_{0};
};

}  // namespace memshard::proxy
