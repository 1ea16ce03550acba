#include "proxy/runtime/proxy.h"

#include "proxy/backends/repair_log.h"

#include <algorithm>
#include <csignal>
#include <cstring>
#include <ctime>
#include <stdexcept>

#include "proxy/routes/pool_carry.h"
#include "proxy/runtime/pool_layout.h"
#include "proxy/runtime/ring_warnings.h"
#include "proxy/support/clock.h"
#include "proxy/support/log.h"

namespace memshard::proxy {

namespace {
// A switch needs the placement it replaces, which a starting instance does
// not have: it routes by its config at once, and the operator hears that
// it disagrees with a fleet still waiting for the switch.
void warn_switch_at_start(const conf::Config& config) {
  const int64_t now_ms = wall_clock_usec() / 1000;
  for (const conf::PoolConfig& pc : config.pools) {
    if (pc.reload_switch_at_ms <= now_ms) continue;
    log_warn(
        "pool '%s': reload_switch_at %s is ahead, but a starting instance has no placement to "
        "switch from: it routes by this config now, unlike instances that wait for the switch",
        pc.name.c_str(), utc_text(pc.reload_switch_at_ms).c_str());
  }
}
}  // namespace

Proxy::Proxy(ProxyOptions options) : options_(std::move(options)) {
  base_ = event_base_new();
  main_loop_ = std::make_unique<MainLoop>(base_);
  started_at_ = static_cast<uint64_t>(time(nullptr));
  listeners_ = std::make_unique<Listeners>(
      base_, [this](int fd, const std::string& pool, std::shared_ptr<ClientCount> clients,
                    int cpu) { active_->pick(cpu).adopt_client(fd, pool, std::move(clients)); });
}

Proxy::~Proxy() {
  std::vector<std::unique_ptr<Migration>> walks;
  {
    std::lock_guard<std::mutex> lock(migrations_mu_);
    walks.swap(migrations_);
  }
  for (auto& m : walks) m->stop();
  walks.clear();
  listeners_->close_all();
  stats_server_.reset();
  active_.reset();
  workers_.clear();
  discovery_.reset();
  names_.reset();
  health_.reset();
  watch_.reset();
  drain_timer_.reset();
  warmup_timer_.reset();
  for (event* e : signal_events_) event_free(e);
  listeners_.reset();
  main_loop_.reset();
  event_base_free(base_);
}

StatsTokenSource Proxy::stats_token_of(const conf::Config& config) const {
  StatsTokenSource token;
  if (std::string error; !load_stats_token(options_.stats_token_file, config, token, error))
    throw std::runtime_error(error);
  return token;
}

void Proxy::use_stats_token(StatsTokenSource next, bool at_start) {
  if (stats_server_ == nullptr || (!at_start && next == stats_token_)) {
    stats_token_ = std::move(next);
    return;
  }
  stats_server_->set_token(next.token);
  if (next.token.empty()) {
    log_notice("stats port: %sno stats token: HTTP requests need none", at_start ? "" : "now ");
    const std::string& a = options_.stats_address;
    if (!a.starts_with("127.") && a != "::1" && a != "localhost")
      log_warn(
          "the stats port listens on %s with no stats token: whoever reaches it reads the "
          "stats and the status page (stats_token, stats_token_file or --stats-token-file)",
          a.c_str());
  } else {
    const bool same_source = !at_start && next.from == stats_token_.from;
    log_notice("stats port: HTTP requests must carry the stats token%s, from %s",
               same_source ? ", changed" : (at_start ? "" : " now"), next.describe().c_str());
  }
  stats_token_ = std::move(next);
}

RepairCounts Proxy::repair_counts(const std::string& pool, const std::string& identity) const {
  const RepairLog* log = RepairLog::find(pool, identity);
  if (log == nullptr) return {};
  return RepairCounts{log->keys(), log->recorded(), log->repairs(), log->overflows(),
                      log->flushes()};
}

uint64_t Proxy::uptime_seconds() const {
  return static_cast<uint64_t>(time(nullptr)) - started_at_;
}

void Proxy::start() {
  // Handlers first: a SIGTERM that arrives once we listen must drain, not
  // kill (libevent delivers it when the loop runs).
  std::signal(SIGPIPE, SIG_IGN);
  for (int sig : {SIGINT, SIGTERM, SIGHUP, SIGTTIN, SIGTTOU}) {
    event* e = evsignal_new(base_, sig, &Proxy::on_signal, this);
    event_add(e, nullptr);
    signal_events_.push_back(e);
  }
  conf::LoadResult loaded = conf::load_config_file(options_.config_file, options_.load);
  if (!loaded.errors.empty()) {
    std::string msg;
    for (const auto& e : loaded.errors) msg += e.to_string() + "\n";
    throw std::runtime_error(msg);
  }
  discovery_ = std::make_unique<Discovery>(
      base_, options_.dns_servers,
      Discovery::Hooks{[this](const std::string& pool) { return apply_discovery(pool); },
                       [this](const std::string& pool) { apply_discovered_addresses(pool); }});
  conf::Config config = *loaded.config;
  std::map<std::string, AddressList> known;
  if (std::string why; !discovery_->fill(config, known, why)) throw std::runtime_error(why);
  for (const auto& w : ring_warnings(config)) log_warn("%s", w.c_str());
  StatsTokenSource token = stats_token_of(config);
  generation_ = 1;
  topology_ = build_topology(config, 1, nullptr, 0, {}, nullptr, &known);
  warn_switch_at_start(config);
  config_ = *loaded.config;
  reload_log_.started(1);

  std::vector<int> cpus = allowed_cpus();
  int threads = options_.threads > 0 ? options_.threads : static_cast<int>(cpus.size());
  if (threads <= 0) threads = 1;
  for (int i = 0; i < threads; ++i)
    workers_.push_back(std::make_unique<Worker>(
        *this, i, options_.park_after_ms,
        options_.batch_writes ? StreamLoop::Writes::batched : StreamLoop::Writes::one_by_one));
  // Said once: every worker's ring is set up alike, so they all batch or none.
  const bool batching = workers_.front()->streams().batching();
  if (options_.batch_writes && !batching)
    log_warn(
        "io_uring is not available (%s): each socket is read and written with its own "
        "system call",
        strerror(workers_.front()->streams().batching_error()));
  health_ = std::make_unique<ServerHealth>(*main_loop_, [this] { install_on_workers(); });
  health_->set_topology(topology_);
  names_ = std::make_unique<NameRefresh>(
      base_, [this](const NameRefresh::Result& r) { apply_resolved(r); });
  names_->set_topology(*topology_);
  discovery_->commit(config);
  main_loop_->on_unreachable = [this](const std::string& pool, const std::string& identity) {
    names_->connect_failed(pool, identity);
  };
  listeners_->open(*topology_);
  for (auto& w : workers_) w->start(topology_);
  active_ =
      std::make_unique<ActiveWorkers>(base_, workers_, std::move(cpus), options_.fixed_threads);

  if (options_.stats_port != 0) {
    try {
      stats_server_ =
          std::make_unique<StatsServer>(main_loop_->streams(), *this, listeners_->reserve(),
                                        options_.stats_address, options_.stats_port);
      log_notice(
          "stats on %s:%u (JSON; HTTP GET /status for the status page, /metrics for "
          "Prometheus)",
          options_.stats_address.c_str(), options_.stats_port);
      use_stats_token(std::move(token), true);
    } catch (const std::exception& e) {
      // Serving traffic matters more than the stats port: run without it.
      log_warn("no stats port: %s", e.what());
    }
  }

  if (options_.watch) {
    watch_ = std::make_unique<ConfigWatch>(base_, options_.config_file, [this] { reload(); });
  }
  listeners_->set_budget(*topology_, workers_.size(), true);
  log_notice("memshard %s started: %zu pool(s), %d worker thread(s)%s, reads and writes %s",
             MEMSHARD_VERSION, topology_->pools.size(), threads,
             active_->adaptive() ? " (as many active as the load needs)" : "",
             batching ? "batched (io_uring)" : "one system call per socket");
}

void Proxy::apply_resolved(const NameRefresh::Result& r) {
  const Pool* pool = topology_->find_pool(r.pool);
  if (pool == nullptr) return;
  size_t index = 0;
  while (index < pool->servers.size() && pool->servers[index].identity != r.identity) ++index;
  if (index == pool->servers.size()) return;  // left with a reload meanwhile
  const ServerInfo& server = pool->servers[index];
  auto key = std::make_pair(r.pool, r.identity);
  if (!r.addresses) {
    dns_failures_.fetch_add(1, std::memory_order_relaxed);
    if (unresolved_.insert(key).second)
      log_warn("pool '%s': server %s: %s; keeping its last address(es) %s", r.pool.c_str(),
               r.identity.c_str(), r.error.c_str(), describe(server.addresses).c_str());
    return;
  }
  if (unresolved_.erase(key))
    log_notice("pool '%s': server %s resolves again", r.pool.c_str(), r.identity.c_str());
  if (*r.addresses == server.addresses) return;
  dns_changes_.fetch_add(1, std::memory_order_relaxed);
  log_notice(
      "pool '%s': server %s now resolves to %s (was %s); new connections go there, open ones "
      "finish what they owe and close; no key changes server",
      r.pool.c_str(), r.identity.c_str(), describe(*r.addresses).c_str(),
      describe(server.addresses).c_str());
  // The same config in a new value: workers switch between two requests,
  // as at a reload, and the ring is the same.
  auto next = std::make_shared<Topology>(*topology_);
  for (Pool& p : next->pools) {
    if (p.config.name == r.pool) p.servers[index].addresses = *r.addresses;
  }
  topology_ = next;
  health_->set_topology(next);
  install_on_workers();
}

void Proxy::apply_discovered_addresses(const std::string& pool_name) {
  const std::map<std::string, AddressList>* found = discovery_->addresses(pool_name);
  if (found == nullptr || topology_->find_pool(pool_name) == nullptr) return;
  // The same config in a new value, as for a server's name that moved
  // (apply_resolved): workers switch between two requests; no ring changes.
  auto next = std::make_shared<Topology>(*topology_);
  const auto update = [&](std::vector<ServerInfo>& servers) {
    for (ServerInfo& s : servers) {
      auto it = found->find(s.identity);
      if (it != found->end() && !it->second.empty()) s.addresses = it->second;
    }
  };
  for (Pool& p : next->pools) {
    if (p.config.name != pool_name) continue;
    update(p.servers);
    if (p.pending) update(p.pending->servers);
  }
  topology_ = next;
  health_->set_topology(next);
  install_on_workers();
}

void Proxy::install_on_workers() {
  std::shared_ptr<const Topology> t = health_->with_ejections();
  for (auto& w : workers_) w->install_topology(t);
}

std::vector<uint64_t> Proxy::worker_connections() const {
  std::vector<uint64_t> out;
  for (const auto& w : workers_) out.push_back(w->stats().curr_connections.get());
  return out;
}

void Proxy::on_signal(evutil_socket_t sig, short, void* arg) {
  auto* self = static_cast<Proxy*>(arg);
  if (sig == SIGTTIN || sig == SIGTTOU) {
    // As nutcracker: TTIN raises the log level, TTOU lowers it.
    int level = static_cast<int>(log_level()) + (sig == SIGTTIN ? 1 : -1);
    level = std::clamp(level, static_cast<int>(LogLevel::error), static_cast<int>(LogLevel::debug));
    log_set_level(static_cast<LogLevel>(level));
    log_always("log level is now %s", log_level_name(log_level()));
    return;
  }
  if (sig == SIGHUP) {
    // Signals that arrive while a reload runs are delivered again after
    // it, so a burst of SIGHUPs always ends with the file's last content.
    log_reopen();
    self->reload();
    return;
  }
  if (self->drain_timer_ != nullptr) {
    log_notice("signal %d again: exiting without waiting", static_cast<int>(sig));
    event_base_loopexit(self->base_, nullptr);
    return;
  }
  log_notice("signal %d: no longer accepting; finishing requests in flight", static_cast<int>(sig));
  self->begin_drain();
}

void Proxy::begin_drain() {
  listeners_->close_all();
  active_->freeze();
  watch_.reset();
  for (auto& w : workers_) w->drain();
  drain_deadline_ms_ = monotonic_ms() + static_cast<uint64_t>(options_.drain_timeout_ms);
  drain_timer_ = std::make_unique<Timer>(
      base_, [this] { on_drain_tick(); }, true);
  drain_timer_->arm_ms(20);
}

void Proxy::on_drain_tick() {
  Proxy* self = this;
  uint64_t open = 0;
  // client_load: a connection on its way between workers counts too.
  for (const auto& w : self->workers_) open += w->client_load();
  if (open == 0) {
    log_notice("all clients answered; exiting");
    event_base_loopexit(self->base_, nullptr);
  } else if (monotonic_ms() >= self->drain_deadline_ms_) {
    log_warn("drain timeout: closing %llu connection(s) with requests in flight",
             static_cast<unsigned long long>(open));
    event_base_loopexit(self->base_, nullptr);
  }
}

StatsSnapshot Proxy::snapshot() const {
  StatsSnapshot snap;
  for (const auto& w : workers_) w->collect(snap);
  return snap;
}

std::vector<std::pair<std::string_view, uint64_t>> Proxy::counter_totals() const {
  std::vector<std::pair<std::string_view, uint64_t>> totals;
  for (const auto& w : workers_) {
    size_t i = 0;
    w->stats().for_each([&](std::string_view name, const Counter& c) {
      if (i == totals.size()) totals.emplace_back(name, 0);
      totals[i++].second += c.get();
    });
  }
  return totals;
}

std::vector<PoolLayout> Proxy::pool_layouts() const {
  // As the workers have it: an ejected server is out of its ring.
  std::shared_ptr<const Topology> t = health_->with_ejections();
  if (!t) return {};
  const ServerHealth& health = *health_;
  return proxy::pool_layouts(
      *t,
      [&health](const std::string& pool, const std::string& identity) {
        if (health.ejected_at(pool, identity) == 0) return ServerState::up;
        return health.probing(pool, identity) ? ServerState::probing : ServerState::ejected;
      },
      monotonic_usec());
}

std::vector<StatsView::TlsCertificate> Proxy::tls_certificates() const {
  std::vector<TlsCertificate> out;
  for (const Pool& pool : topology_->pools) {
    if (pool.client_tls && pool.client_tls->not_after())
      out.push_back({pool.config.name, "client", *pool.client_tls->not_after()});
    if (pool.server_tls && pool.server_tls->not_after())
      out.push_back({pool.config.name, "server", *pool.server_tls->not_after()});
  }
  return out;
}

int Proxy::run() {
  main_loop_->run();
  for (auto& w : workers_) w->stop();
  return 0;
}

}  // namespace memshard::proxy
