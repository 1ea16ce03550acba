#include "proxy/runtime/proxy.h"

#include <netinet/in.h>
#include <netinet/tcp.h>
#include <sched.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <csignal>
#include <cstring>
#include <ctime>
#include <stdexcept>

#include "proxy/routes/pool_carry.h"
#include "proxy/runtime/pool_layout.h"
#include "proxy/runtime/ring_warnings.h"
#include "proxy/runtime/thread_busy.h"
#include "proxy/support/clock.h"
#include "proxy/support/log.h"
#include "proxy/transport/socket_address.h"

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

// The CPUs this process may run on, ascending: a cpuset or taskset limits
// them below the machine's.
std::vector<int> allowed_cpus() {
  std::vector<int> cpus;
  cpu_set_t set;
  CPU_ZERO(&set);
  if (sched_getaffinity(0, sizeof(set), &set) == 0) {
    for (int cpu = 0; cpu < CPU_SETSIZE; ++cpu) {
      if (CPU_ISSET(cpu, &set)) cpus.push_back(cpu);
    }
  }
  return cpus;
}
}  // namespace

Proxy::Proxy(ProxyOptions options) : options_(std::move(options)) {
  base_ = event_base_new();
  main_loop_ = std::make_unique<MainLoop>(base_);
  started_at_ = static_cast<uint64_t>(time(nullptr));
  over_budget_warning_ = std::make_unique<WarningThrottle>(base_, [this] {
    const std::string_view said = proto::reply::kTooManyConnections;
    log_warn(
        "%llu client(s) refused with \"%.*s\": %u client connections open, all the descriptor "
        "limit leaves room for (see \"descriptor limit\" above; raise it with ulimit -n or "
        "LimitNOFILE=)",
        static_cast<unsigned long long>(refused_over_budget_), static_cast<int>(said.size() - 2),
        said.data(), open_when_refused_);
    refused_over_budget_ = 0;
  });
}

Proxy::~Proxy() {
  std::vector<std::unique_ptr<Migration>> walks;
  {
    std::lock_guard<std::mutex> lock(migrations_mu_);
    walks.swap(migrations_);
  }
  for (auto& m : walks) m->stop();
  walks.clear();
  for (auto& l : listeners_) close_listener(*l);
  stats_server_.reset();
  workers_.clear();
  names_.reset();
  health_.reset();
  watch_.reset();
  drain_timer_.reset();
  warmup_timer_.reset();
  governor_timer_.reset();
  for (event* e : signal_events_) event_free(e);
  over_budget_warning_.reset();
  main_loop_.reset();
  event_base_free(base_);
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
  conf::LoadResult loaded = conf::load_config_file(options_.config_file);
  if (!loaded.errors.empty()) {
    std::string msg;
    for (const auto& e : loaded.errors) msg += e.to_string() + "\n";
    throw std::runtime_error(msg);
  }
  for (const auto& w : ring_warnings(*loaded.config)) log_warn("%s", w.c_str());
  generation_ = 1;
  topology_ = build_topology(*loaded.config, 1);
  warn_switch_at_start(*loaded.config);
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
  cpus_ = cpus;
  picker_ = std::make_unique<WorkerPicker>(workers_.size(), std::move(cpus));
  health_ = std::make_unique<ServerHealth>(*main_loop_, [this] { install_on_workers(); });
  health_->set_topology(topology_);
  names_ = std::make_unique<NameRefresh>(
      base_, [this](const NameRefresh::Result& r) { apply_resolved(r); });
  names_->set_topology(*topology_);
  main_loop_->on_unreachable = [this](const std::string& pool, const std::string& identity) {
    names_->connect_failed(pool, identity);
  };
  for (const Pool& pool : topology_->pools) {
    if (!pool.config.has_listen()) continue;  // reached only by routes
    std::unique_ptr<Listener> l = open_listener(pool);
    if (!l) {
      throw std::runtime_error("pool '" + pool.config.name + "': cannot listen on " +
                               pool.config.listen.text + ": " + strerror(errno));
    }
    listeners_.push_back(std::move(l));
  }
  for (auto& w : workers_) w->start(topology_);
  set_active_workers(options_.fixed_threads ? workers_.size() : 1);
  if (!options_.fixed_threads && workers_.size() > 1) {
    WorkerGovernor::Settings settings;
    settings.max_workers = workers_.size();
    governor_ = std::make_unique<WorkerGovernor>(settings);
    governor_timer_ = std::make_unique<Timer>(
        base_, [this] { on_governor_tick(); }, true);
    governor_timer_->arm_usec(settings.tick_usec);
  }

  if (options_.stats_port != 0) {
    try {
      stats_server_ = std::make_unique<StatsServer>(main_loop_->streams(), *this,
                                                    descriptor_reserve_, options_.stats_address,
                                                    options_.stats_port, options_.stats_token);
      log_notice(
          "stats on %s:%u (JSON; HTTP GET /status for the status page, /metrics for "
          "Prometheus)%s",
          options_.stats_address.c_str(), options_.stats_port,
          options_.stats_token.empty() ? "" : "; HTTP requests must carry the stats token");
      const std::string& a = options_.stats_address;
      if (options_.stats_token.empty() && !a.starts_with("127.") && a != "::1" && a != "localhost")
        log_warn(
            "the stats port listens on %s with no stats token: whoever reaches it reads the "
            "stats and the status page (--stats-token-file)",
            a.c_str());
    } catch (const std::exception& e) {
      // Serving traffic matters more than the stats port: run without it.
      log_warn("no stats port: %s", e.what());
    }
  }

  if (options_.watch) {
    watch_ = std::make_unique<ConfigWatch>(base_, options_.config_file, [this] { reload(); });
  }
  set_descriptor_budget(true);
  log_notice("memshard %s started: %zu pool(s), %d worker thread(s)%s, reads and writes %s",
             MEMSHARD_VERSION, topology_->pools.size(), threads,
             governor_ ? " (as many active as the load needs)" : "",
             batching ? "batched (io_uring)" : "one system call per socket");
}

void Proxy::set_descriptor_budget(bool starting) {
  if (starting) {
    // Nothing but the proxy's own descriptors is open yet: servers are
    // connected on first use.
    own_descriptors_ = open_descriptors();
    listeners_at_start_ = listeners_.size();
  }
  DescriptorBudget budget;
  budget.limit = descriptor_limit();
  // Since then, the proxy's own descriptors change only by the listeners
  // that reloads bound or closed.
  uint64_t own = own_descriptors_ + listeners_.size();
  budget.own = own > listeners_at_start_ ? own - listeners_at_start_ : 0;
  budget.servers = server_connections_at_most(*topology_, workers_.size());
  uint64_t room = budget.clients();
  if (starting && room == 0) {
    throw std::runtime_error("descriptor " + budget.describe() +
                             ": raise the limit (ulimit -n; LimitNOFILE= under systemd)");
  }
  uint64_t was = max_clients_.exchange(room, std::memory_order_relaxed);
  if (room == was) return;
  log_notice("descriptor %s", budget.describe().c_str());
  uint32_t open = open_clients_->load(std::memory_order_relaxed);
  if (open > room) {
    log_warn(
        "%u client connections are open, more than there is now room for: new clients are "
        "refused until they are fewer",
        open);
  }
}

void Proxy::refuse_over_budget(int fd, uint32_t open) {
  refuse_client(fd, proto::reply::kTooManyConnections);
  rejected_connections_.fetch_add(1, std::memory_order_relaxed);
  ++refused_over_budget_;
  open_when_refused_ = open;
  over_budget_warning_->note();
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

void Proxy::install_on_workers() {
  std::shared_ptr<const Topology> t = health_->with_ejections();
  for (auto& w : workers_) w->install_topology(t);
}

std::unique_ptr<Proxy::Listener> Proxy::open_listener(const Pool& pool) {
  auto l = std::make_unique<Listener>();
  l->proxy = this;
  l->pool = pool.config.name;
  l->client_limit = pool.config.client_connections;
  l->clients = std::make_shared<ClientCount>(open_clients_);
  l->address = pool.config.listen;
  if (l->address.is_unix) unlink(l->address.path.c_str());  // a stale socket from a past run
  unsigned flags = LEV_OPT_CLOSE_ON_FREE | LEV_OPT_REUSEABLE | LEV_OPT_CLOSE_ON_EXEC;
  l->listener =
      evconnlistener_new_bind(base_, &Proxy::on_accept, l.get(), flags, pool.config.backlog,
                              pool.listen.get(), static_cast<int>(pool.listen.length));
  if (l->listener == nullptr) return nullptr;
  l->guard = std::make_unique<AcceptGuard>(
      base_, l->listener, &Proxy::on_accept, l.get(), descriptor_reserve_, "pool '" + l->pool + "'",
      [this] { rejected_connections_.fetch_add(1, std::memory_order_relaxed); });
  if (l->address.is_unix && l->address.perm) {
    chmod(l->address.path.c_str(), static_cast<mode_t>(*l->address.perm));
  }
  log_notice("pool '%s' listening on %s%s", pool.config.name.c_str(),
             pool.config.listen.text.c_str(),
             pool.client_tls ? " (TLS: OpenSSL records, written in the io_uring batches)" : "");
  return l;
}

void Proxy::on_accept(evconnlistener*, evutil_socket_t fd, sockaddr* addr, int, void* arg) {
  auto* l = static_cast<Listener*>(arg);
  if (addr->sa_family != AF_UNIX) {
    int one = 1;
    setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
  }
  evutil_make_socket_nonblocking(fd);
  Proxy& proxy = *l->proxy;
  uint32_t open = proxy.open_clients_->load(std::memory_order_relaxed);
  if (open >= proxy.max_clients_.load(std::memory_order_relaxed)) {
    proxy.refuse_over_budget(fd, open);
    return;
  }
  if (l->client_limit != 0 && l->clients->open() >= l->client_limit) {
    refuse_client(fd,
                  proto::reply::kTooManyConnections);  // as memcached does when out of connections
    proxy.rejected_connections_.fetch_add(1, std::memory_order_relaxed);
    return;
  }
  l->clients->add();
  proxy.worker_for(addr->sa_family == AF_UNIX ? -1 : incoming_cpu(fd))
      .adopt_client(fd, l->pool, l->clients);
}

std::vector<uint64_t> Proxy::worker_connections() const {
  std::vector<uint64_t> out;
  for (const auto& w : workers_) out.push_back(w->stats().curr_connections.get());
  return out;
}

Worker& Proxy::worker_for(int cpu) {
  const size_t active = static_cast<size_t>(active_.load(std::memory_order_relaxed));
  loads_.resize(active);
  for (size_t i = 0; i < active; ++i) loads_[i] = workers_[i]->client_load();
  return *workers_[picker_->pick(cpu, loads_)];
}

void Proxy::on_governor_tick() {
  Proxy* p = this;
  if (p->drain_timer_ != nullptr) return;  // draining: nothing moves any more
  p->figures_.resize(p->workers_.size());
  for (size_t i = 0; i < p->workers_.size(); ++i) {
    const Worker& w = *p->workers_[i];
    p->figures_[i] = {thread_busy_usec(w.thread_id()), w.requests(), w.wakeups(),
                      w.stats().curr_connections.get()};
  }
  const size_t was = static_cast<size_t>(p->active_.load(std::memory_order_relaxed));
  const uint64_t decided = p->governor_->decisions();
  const size_t now = p->governor_->tick(monotonic_usec(), p->figures_);
  // A trial's verdict is said even when it keeps the count.
  if (now == was && p->governor_->decisions() == decided) return;
  log_info("workers: %zu of %zu active (%s)", now, p->workers_.size(),
           p->governor_->reason().c_str());
  if (now != was) p->set_active_workers(now);
}

// Connections are counted by worker (parked ones aside: they cost no
// worker time, and one that wakes on a worker no longer active moves then).
// Each active worker above an even share sends its excess to those below.
void Proxy::set_active_workers(size_t n) {
  n = std::clamp<size_t>(n, 1, workers_.size());
  active_.store(static_cast<int>(n), std::memory_order_relaxed);
  picker_ = std::make_unique<WorkerPicker>(n, cpus_);
  std::vector<uint64_t> load(workers_.size());
  uint64_t total = 0;
  for (size_t i = 0; i < workers_.size(); ++i) {
    const WorkerStats& st = workers_[i]->stats();
    const uint64_t open = st.curr_connections.get(), parked = st.parked_connections.get();
    load[i] = open > parked ? open - parked : 0;
    total += load[i];
  }
  const uint64_t share = (total + n - 1) / n;
  std::vector<int> worker_of_cpu = picker_->first_worker_by_cpu();
  for (size_t i = 0; i < workers_.size(); ++i) {
    Worker::Placement p;
    p.active = n;
    p.worker_of_cpu = worker_of_cpu;
    p.send.assign(workers_.size(), 0);
    if (i < n && load[i] > share) {
      uint64_t excess = load[i] - share;
      for (size_t j = 0; j < n && excess > 0; ++j) {
        if (j == i || load[j] >= share) continue;
        const uint64_t give = std::min(excess, share - load[j]);
        p.send[j] = give;
        load[j] += give;
        excess -= give;
      }
    }
    workers_[i]->place(std::move(p));
  }
}

void Proxy::close_listener(Listener& l) {
  if (l.listener == nullptr) return;
  l.guard.reset();
  evconnlistener_free(l.listener);
  l.listener = nullptr;
  if (l.address.is_unix) unlink(l.address.path.c_str());
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
  for (auto& l : listeners_) close_listener(*l);
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
