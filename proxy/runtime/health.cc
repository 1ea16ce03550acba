#include "proxy/runtime/health.h"

#include <sys/time.h>
#include <unistd.h>

#include <algorithm>
#include <ctime>

#include "proxy/backends/backend.h"
#include "proxy/backends/repair_log.h"
#include "proxy/backends/reply_slot.h"
#include "proxy/protocol/own_requests.h"
#include "proxy/support/clock.h"
#include "proxy/support/log.h"
#include "proxy/support/timer.h"

namespace memshard::proxy {

// One probe in progress or scheduled for one ejected server: a backend
// connection of its own making one request, `version`. It goes through
// the same BackendServer as live traffic, so it connects as a worker does
// (every address of a name, in turn), times out by the pool's timeout,
// and reads the reply with the same parser.
struct ServerHealth::Probe final : public SlotOwner {
  Probe(ServerHealth& owner_, Key key_)
      : owner(&owner_), key(std::move(key_)), timer(owner_.base_, [this] {
          if (!in_flight) start();  // a re-arm while one is out waits for it
        }) {}
  ~Probe() { server.reset(); }

  ServerHealth* owner;
  Key key;
  Timer timer;     // fires to start the probe
  ReplySlot slot;  // before `server`: its operations point here
  std::unique_ptr<BackendServer> server;
  bool in_flight = false;

  void arm(int ms) { timer.arm_ms(static_cast<uint64_t>(ms)); }

  void start() {
    server->forget_backoff();
    BackendConn* conn = server->connection_for(0);
    if (conn == nullptr) {
      owner->probe_done(key, false);  // refused moments ago: still out
      return;
    }
    slot.reset();
    slot.set_owner(this);
    slot.expect();
    slot.add_fragment();
    std::string version;
    proto::append_version(version);
    evbuffer_add(conn->output(), version.data(), version.size());
    in_flight = true;
    owner->set_probing(key, true);
    conn->enqueue(BackendOp{&slot, 0, ReplyMode::single, owner->loop_.now_usec()});
  }

  void on_slot_complete() override {
    in_flight = false;
    owner->set_probing(key, false);
    owner->probe_done(key, slot.status() == proto::ReplyStatus::version);  // may destroy it, later
  }
};

ServerHealth::ServerHealth(MainLoop& loop, std::function<void()> on_change)
    : base_(loop.base()),
      loop_(loop),
      on_change_(std::move(on_change)),
      mailbox_(base_),
      free_answered_(base_, [this] { answered_.clear(); }),
      repairer_(loop) {
  repairer_.pool_has_ejections = [this](const std::string& pool) {
    return ejected_count(pool) != 0;
  };
}

ServerHealth::~ServerHealth() {
  probes_.clear();
}

void ServerHealth::report_failing(const std::string& pool, const std::string& identity) {
  mailbox_.post([this, key = Key(pool, identity)] { on_report(key); });
}

// Several workers may report one server: the first report ejects it.
void ServerHealth::on_report(const Key& key) {
  const Pool* pool = pool_of(key);
  if (pool == nullptr || !pool->config.auto_eject_hosts) return;
  {
    std::lock_guard<std::mutex> lock(state_mu_);
    if (ejected_.contains(key)) return;
    if (!within_cap(*pool)) {
      auto [it, fresh] = capped_.try_emplace(key, 0);
      it->second = monotonic_usec();
      if (fresh) {
        log_warn(
            "pool '%s': server %s keeps failing, but %zu of its %zu servers are out "
            "already (auto_eject_max %.0f%%): it stays in the ring, and its keys fail fast",
            key.first.c_str(), key.second.c_str(), ejected_count_locked(key.first),
            pool->servers.size(), pool->config.auto_eject_max * 100);
      }
      return;
    }
    capped_.erase(key);
  }
  eject(key);
  on_change_();
}

size_t ServerHealth::ejected_count_locked(const std::string& pool) const {
  size_t n = 0;
  for (const auto& [key, at] : ejected_) n += key.first == pool;
  return n;
}

size_t ServerHealth::ejected_count(const std::string& pool) const {
  std::lock_guard<std::mutex> lock(state_mu_);
  return ejected_count_locked(pool);
}

bool ServerHealth::within_cap(const Pool& pool) const {
  const size_t allowed = static_cast<size_t>(
      static_cast<double>(pool.servers.size()) * pool.config.auto_eject_max + 1e-9);
  return ejected_count_locked(pool.config.name) + 1 <= allowed;
}

uint64_t ServerHealth::held_by_cap(const std::string& pool) const {
  std::lock_guard<std::mutex> lock(state_mu_);
  const Pool* p = base_topology_ ? base_topology_->find_pool(pool) : nullptr;
  // Reported in the last two probe intervals (workers report a failing
  // server at every streak of server_failure_limit failures).
  const uint64_t window =
      p == nullptr ? 0 : uint64_t(std::max(1000, 2 * p->config.server_retry_timeout_ms)) * 1000;
  const uint64_t now = monotonic_usec();
  uint64_t n = 0;
  for (const auto& [key, at] : capped_) n += key.first == pool && now - at <= window;
  return n;
}

const Pool* ServerHealth::pool_of(const Key& key) const {
  if (!base_topology_) return nullptr;
  const Pool* pool = base_topology_->find_pool(key.first);
  if (pool == nullptr) return nullptr;
  for (const ServerInfo& s : pool->servers) {
    if (s.identity == key.second) return pool;
  }
  return nullptr;
}

void ServerHealth::eject(const Key& key) {
  {
    std::lock_guard<std::mutex> lock(state_mu_);
    // Microseconds since the epoch, as twemproxy's server_ejected_at.
    timeval tv;
    gettimeofday(&tv, nullptr);
    ejected_[key] =
        static_cast<uint64_t>(tv.tv_sec) * 1'000'000 + static_cast<uint64_t>(tv.tv_usec);
    ++pool_ejections_[key.first];
  }
  ++ejections_;
  const conf::PoolConfig& config = pool_of(key)->config;
  Flaps& f = flaps_[key];
  const uint64_t now = monotonic_usec();
  const bool flapped = f.readmitted_usec != 0 &&
                       now - f.readmitted_usec < uint64_t(config.server_flap_time_ms) * 1000;
  f.count = flapped ? f.count + 1 : 0;
  RepairLog::of(key.first, key.second).set_out(true);
  log_warn("pool '%s': server %s ejected after %u consecutive failures; probing it every %d ms%s",
           key.first.c_str(), key.second.c_str(), config.server_failure_limit,
           probe_interval_ms(key),
           flapped ? " (it flaps: failed again soon after its return)" : "");
  schedule_probe(key);
}

void ServerHealth::schedule_probe(const Key& key) {
  const Pool* pool = pool_of(key);
  auto& probe = probes_[key];
  if (!probe) probe = std::make_unique<Probe>(*this, key);
  const ServerSettings settings = own_connection_settings(*pool);
  for (const ServerInfo& s : pool->servers) {
    if (s.identity != key.second) continue;
    if (!probe->server) {
      probe->server = std::make_unique<BackendServer>(loop_, s.identity, s.addresses, settings,
                                                      std::make_shared<ServerStats>(),
                                                      std::make_shared<PoolStats>());
    } else {
      probe->server->update_settings(settings, std::make_shared<PoolStats>());
      probe->server->update_addresses(s.addresses);
    }
  }
  probe->arm(probe_interval_ms(key));
}

// server_retry_timeout, doubled for each flap in a row, up to
// server_flap_backoff_max (and never below server_retry_timeout).
int ServerHealth::probe_interval_ms(const Key& key) const {
  const conf::PoolConfig& config = pool_of(key)->config;
  const int64_t base = std::max(1, config.server_retry_timeout_ms);
  auto it = flaps_.find(key);
  const uint32_t n = it == flaps_.end() ? 0 : std::min<uint32_t>(it->second.count, 30);
  const int64_t damped = std::min<int64_t>(base << n, config.server_flap_backoff_max_ms);
  return static_cast<int>(std::max(base, damped));
}

void ServerHealth::probe_done(const Key& key, bool healthy) {
  if (!healthy) {
    if (pool_of(key) != nullptr) schedule_probe(key);
    return;
  }
  // Repaired first: it takes reads only once it holds nothing stale.
  repairer_.repair_before_readmission(key.first, key.second, [this, key](bool repaired) {
    if (pool_of(key) == nullptr) return;
    std::lock_guard<std::mutex> lock(state_mu_);
    const bool still_out = ejected_.contains(key);
    if (!still_out) return;
    if (!repaired) return schedule_probe(key);
    mailbox_.post([this, key] { readmit(key); });  // out of the repairer's callback
  });
}

void ServerHealth::readmit(const Key& key) {
  {
    std::lock_guard<std::mutex> lock(state_mu_);
    if (!ejected_.contains(key)) return;
    ejected_.erase(key);
    probing_.erase(key);
  }
  ++readmissions_;
  flaps_[key].readmitted_usec = monotonic_usec();
  log_notice("pool '%s': server %s answered a probe and is repaired; back in the ring",
             key.first.c_str(), key.second.c_str());
  auto it = probes_.find(key);
  if (it != probes_.end()) {
    answered_.push_back(std::move(it->second));
    probes_.erase(it);
    free_answered_.fire_soon();
  }
  on_change_();
  // It serves its keys again: the guest copies written elsewhere in its
  // place are stale-capable now, and are recorded where they are. With no
  // server of the pool out any more, so are the keys a rebuilt ring had
  // moved between the others.
  RepairLog& log = RepairLog::of(key.first, key.second);
  log.set_out(false);
  size_t guests = log.release_fallbacks();
  if (const Pool* pool = pool_of(key); pool != nullptr && ejected_count(key.first) == 0) {
    for (const ServerInfo& s : pool->servers)
      guests += RepairLog::of(key.first, s.identity).release_fallbacks();
  }
  if (guests != 0) {
    log_notice("pool '%s': %zu guest cop(ies) of server %s's keys recorded for repair",
               key.first.c_str(), guests, key.second.c_str());
  }
}

void ServerHealth::set_topology(std::shared_ptr<const Topology> base) {
  std::lock_guard<std::mutex> lock(state_mu_);
  base_topology_ = std::move(base);
  repairer_.set_topology(base_topology_);
  for (auto it = ejected_.begin(); it != ejected_.end();) {
    const Key& key = it->first;
    if (pool_of(key) == nullptr || !pool_of(key)->config.auto_eject_hosts) {
      probes_.erase(key);
      probing_.erase(key);
      RepairLog::of(key.first, key.second).set_out(false);
      it = ejected_.erase(it);
    } else {
      schedule_probe(key);  // settings or address may have changed
      ++it;
    }
  }
}

uint64_t ServerHealth::ejected_at(const std::string& pool, const std::string& identity) const {
  std::lock_guard<std::mutex> lock(state_mu_);
  auto it = ejected_.find(Key{pool, identity});
  return it == ejected_.end() ? 0 : it->second;
}

void ServerHealth::set_probing(const Key& key, bool out) {
  std::lock_guard<std::mutex> lock(state_mu_);
  if (out) {
    probing_.insert(key);
  } else {
    probing_.erase(key);
  }
}

bool ServerHealth::probing(const std::string& pool, const std::string& identity) const {
  std::lock_guard<std::mutex> lock(state_mu_);
  return probing_.contains(Key{pool, identity});
}

uint64_t ServerHealth::pool_ejections(const std::string& pool) const {
  std::lock_guard<std::mutex> lock(state_mu_);
  auto it = pool_ejections_.find(pool);
  return it == pool_ejections_.end() ? 0 : it->second;
}

// A scheduled switch's placement leaves ejected servers out as the one in
// force does: a key that switches goes where the rest of the pool sends it.
void ServerHealth::eject_pending(PendingSwitch& pending, const std::string& pool) const {
  std::vector<bool> live(pending.servers.size(), true);
  bool any = false;
  for (size_t i = 0; i < pending.servers.size(); ++i) {
    if (ejected_.contains(Key{pool, pending.servers[i].identity})) {
      live[i] = false;
      any = true;
    }
  }
  if (!any) return;
  if (pending.config.replicas > 1) {
    pending.live = std::move(live);
    return;
  }
  pending.ring = ketama::Ring::build(pending.ring.servers(), pending.config.ring, std::move(live));
}

std::shared_ptr<const Topology> ServerHealth::with_ejections() const {
  std::lock_guard<std::mutex> lock(state_mu_);
  if (ejected_.empty()) return base_topology_;
  auto t = std::make_shared<Topology>(*base_topology_);
  for (Pool& pool : t->pools) {
    std::vector<bool> live(pool.servers.size(), true);
    bool any = false;
    for (size_t i = 0; i < pool.servers.size(); ++i) {
      if (ejected_.contains(Key{pool.config.name, pool.servers[i].identity})) {
        live[i] = false;
        any = true;
      }
    }
    // A past ring's server that is ejected now is not looked up either.
    for (PastRing& past : pool.past) {
      past.live.assign(past.servers.size(), true);
      for (size_t i = 0; i < past.servers.size(); ++i) {
        if (ejected_.contains(Key{pool.config.name, past.servers[i].identity}))
          past.live[i] = false;
      }
    }
    if (pool.pending) eject_pending(*pool.pending, pool.config.name);
    if (!any) continue;
    // A replicated pool reads the server's keys from their other copies,
    // a pool with a gutter from the gutter: their rings keep every server.
    if (pool.config.replicas > 1 || !pool.config.gutter.empty()) {
      pool.live = std::move(live);
      continue;
    }
    // The ring is rebuilt from the live servers only (W and N change), as
    // twemproxy does, so keys of the ejected server spread over the rest.
    pool.home_ring = std::make_shared<const ketama::Ring>(pool.ring);
    pool.ring = ketama::Ring::build(pool.ring.servers(), pool.config.ring, std::move(live));
  }
  return t;
}

}  // namespace memshard::proxy
