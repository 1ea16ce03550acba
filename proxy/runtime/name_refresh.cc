#include "proxy/runtime/name_refresh.h"

#include <stdexcept>

#include "proxy/support/clock.h"

namespace memshard::proxy {

namespace {

// A server that keeps refusing connections asks for a lookup on every
// failed attempt; once a second is enough to follow a move.
constexpr uint64_t kMinFailureLookupMs = 1000;

}  // namespace

NameRefresh::NameRefresh(event_base* base, std::function<void(const Result&)> on_result)
    : base_(base), on_result_(std::move(on_result)), mailbox_(base), thread_([this] { run(); }) {}

NameRefresh::~NameRefresh() {
  {
    std::lock_guard<std::mutex> lock(mu_);
    stopping_ = true;
    queue_.clear();
  }
  wake_.notify_one();
  thread_.join();  // after a lookup in progress, if any
  timers_.clear();
}

void NameRefresh::set_topology(const Topology& topology) {
  timers_.clear();
  std::map<Key, Name> names;
  for (const Pool& pool : topology.pools) {
    // DNS discovery looks its own servers' names up (discovery.h).
    if (pool.config.discovery.enabled()) continue;
    bool any = false;
    for (const ServerInfo& s : pool.servers) {
      if (!s.named) continue;
      any = true;
      names[{pool.config.name, s.identity}] = Name{pool.config.name, s.identity, s.host, s.port};
    }
    int every = pool.config.dns_refresh_ms;
    if (!any || every <= 0) continue;
    auto t = std::make_unique<Timer>(
        base_, [this, name = pool.config.name] { refresh_pool(name); }, true);
    t->arm_ms(static_cast<uint64_t>(every));
    timers_.push_back(std::move(t));
  }
  std::lock_guard<std::mutex> lock(mu_);
  // A name queued under the old topology is still looked up; its result is
  // matched against the topology in force when it comes back.
  for (auto& [key, name] : names) {
    auto old = names_.find(key);
    if (old != names_.end()) {
      name.requested_ms = old->second.requested_ms;
      name.queued = old->second.queued;
    }
  }
  names_ = std::move(names);
}

void NameRefresh::refresh_pool(const std::string& pool) {
  {
    std::lock_guard<std::mutex> lock(mu_);
    for (auto& [key, name] : names_) {
      if (key.first == pool) queue_locked(name);
    }
  }
  wake_.notify_one();
}

void NameRefresh::connect_failed(const std::string& pool, const std::string& identity) {
  {
    std::lock_guard<std::mutex> lock(mu_);
    auto it = names_.find({pool, identity});
    if (it == names_.end()) return;  // an address, not a name
    uint64_t now = monotonic_ms();
    if (it->second.requested_ms != 0 && now - it->second.requested_ms < kMinFailureLookupMs) return;
    it->second.requested_ms = now;
    queue_locked(it->second);
  }
  wake_.notify_one();
}

void NameRefresh::queue_locked(Name& name) {
  if (name.queued || stopping_) return;
  name.queued = true;
  queue_.emplace_back(name.pool, name.identity);
}

void NameRefresh::run() {
  std::unique_lock<std::mutex> lock(mu_);
  while (true) {
    wake_.wait(lock, [this] { return stopping_ || !queue_.empty(); });
    if (stopping_) return;
    Key key = queue_.front();
    queue_.pop_front();
    auto it = names_.find(key);
    if (it == names_.end()) continue;  // gone with a reload meanwhile
    it->second.queued = false;
    std::string host = it->second.host;
    uint16_t port = it->second.port;
    lock.unlock();
    // getaddrinfo blocks for as long as the resolver takes: here, never on
    // an event loop.
    Result r{key.first, key.second, std::nullopt, {}};
    try {
      r.addresses = resolve_addresses(host, port, false);
    } catch (const std::exception& e) {
      r.error = e.what();
    }
    mailbox_.post([this, r = std::move(r)] { on_result_(r); });
    lock.lock();
  }
}

}  // namespace memshard::proxy
