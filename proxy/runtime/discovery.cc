#include "proxy/runtime/discovery.h"

#include <arpa/inet.h>

#include <algorithm>
#include <utility>

#include "proxy/routes/pool_carry.h"
#include "proxy/support/clock.h"
#include "proxy/support/log.h"

namespace memshard::proxy {

namespace {

// A start or a reload waits this long at most for a new name's answer
// (c-ares' own timeouts end a lookup sooner).
constexpr int kBlockingLookupMs = 8000;

std::string address_text(const SocketAddress& a) {
  char buf[INET6_ADDRSTRLEN] = {};
  if (a.family() == AF_INET) {
    inet_ntop(AF_INET, &reinterpret_cast<const sockaddr_in*>(&a.storage)->sin_addr, buf,
              sizeof(buf));
  } else if (a.family() == AF_INET6) {
    inet_ntop(AF_INET6, &reinterpret_cast<const sockaddr_in6*>(&a.storage)->sin6_addr, buf,
              sizeof(buf));
  }
  return buf;
}

int64_t wall_ms() {
  return wall_clock_usec() / 1000;
}

std::string join(const std::vector<std::string>& items) {
  std::string out;
  for (const auto& i : items) out += (out.empty() ? "" : ", ") + i;
  return out;
}

}  // namespace

std::string entry_address(const DiscoveredMember& m) {
  ketama::ServerEntry e;
  e.host = m.host;
  e.port = m.port;
  return e.address();
}

Members srv_members(const std::vector<SrvRecord>& records, std::vector<std::string>* notes) {
  if (records.empty()) return {};
  uint16_t lowest = UINT16_MAX;
  for (const SrvRecord& r : records) lowest = std::min(lowest, r.priority);
  bool all_zero = true;
  for (const SrvRecord& r : records) {
    if (r.priority == lowest && r.weight != 0) all_zero = false;
  }
  Members out;
  for (const SrvRecord& r : records) {
    const std::string id = r.target + ":" + std::to_string(r.port);
    if (r.target.empty() || r.target == "." || r.port == 0) {
      if (notes != nullptr) notes->push_back(id + ": no target or port, left out");
      continue;
    }
    if (r.priority != lowest) {
      if (notes != nullptr)
        notes->push_back(id + ": priority " + std::to_string(r.priority) +
                         ", a backup of priority " + std::to_string(lowest) + ": left out");
      continue;
    }
    if (r.weight == 0 && !all_zero) {
      if (notes != nullptr) notes->push_back(id + ": weight 0, left out (drained)");
      continue;
    }
    out.push_back(DiscoveredMember{r.target, r.port, all_zero ? 1u : r.weight});
  }
  return normalized(std::move(out));
}

Discovery::Discovery(event_base* base, std::vector<std::string> dns_servers, Hooks hooks)
    : base_(base),
      dns_servers_(std::move(dns_servers)),
      hooks_(std::move(hooks)),
      client_(std::make_unique<DnsClient>(base, dns_servers_)) {}

Discovery::~Discovery() {
  // First: lookups in flight end without calling back into the pools.
  client_.reset();
}

DiscoveryMembership::Settings Discovery::settings_of(const conf::PoolConfig& pc) {
  const conf::DiscoveryConfig& d = pc.discovery;
  DiscoveryMembership::Settings s;
  const int64_t period = std::max(d.refresh_ms, 1);
  // A whole number of lookup periods: the lookup that confirms a change is
  // the one at the end of its hold, on every instance.
  s.hold_ms = (d.hold_ms + period - 1) / period * period;
  s.max_change = d.max_change;
  // With reload_warmup the change is a fleet switch (reload_switch_at) one
  // period after it is confirmed: every instance has confirmed it by then.
  s.lead_ms = pc.reload_warmup_ms > 0 ? period : 0;
  s.window_ms = pc.reload_warmup_ms > 0 ? pc.reload_switch_window_ms : 0;
  return s;
}

void Discovery::lookup(DnsClient& client, const conf::DiscoveryConfig& source,
                       std::function<void(DiscoveryAnswer)> done) {
  if (source.kind == conf::DiscoveryConfig::Kind::dns) {
    const uint16_t port = source.port;
    client.addresses(
        source.name, port,
        [done = std::move(done), port](std::optional<AddressList> found, const std::string& error) {
          DiscoveryAnswer a;
          a.error = error;
          if (found) {
            Members ms;
            for (const SocketAddress& addr : *found) {
              DiscoveredMember m{address_text(addr), port, 1};
              a.addresses[entry_address(m)] = AddressList{addr};
              ms.push_back(std::move(m));
            }
            a.members = normalized(std::move(ms));
          }
          done(std::move(a));
        });
    return;
  }
  client.srv(source.name, [this, &client, done = std::move(done)](
                              std::optional<std::vector<SrvRecord>> records,
                              const std::string& error) mutable {
    (void)this;
    auto answer = std::make_shared<DiscoveryAnswer>();
    answer->error = error;
    if (!records) return done(std::move(*answer));
    Members members = srv_members(*records, &answer->notes);
    if (members.empty()) {
      answer->members = Members{};
      if (answer->error.empty()) answer->error = "no usable SRV records";
      return done(std::move(*answer));
    }
    // Each target's addresses, then the answer.
    auto left = std::make_shared<size_t>(members.size());
    auto all = std::make_shared<Members>(std::move(members));
    auto finish = std::make_shared<std::function<void(DiscoveryAnswer)>>(std::move(done));
    for (const DiscoveredMember& m : *all) {
      // An SRV target is a whole name: looked up as it is, never under the
      // search list.
      client.addresses(
          m.host + ".", m.port,
          [answer, left, all, finish, m](std::optional<AddressList> found, const std::string& err) {
            if (found && !found->empty()) {
              answer->addresses[entry_address(m)] = std::move(*found);
            } else {
              answer->notes.push_back(m.identity() + ": " + (err.empty() ? "no address" : err) +
                                      "; left out of this lookup");
            }
            if (--*left > 0) return;
            Members resolved;
            for (const DiscoveredMember& x : *all) {
              if (answer->addresses.contains(entry_address(x))) resolved.push_back(x);
            }
            answer->members = std::move(resolved);
            if (answer->members->empty() && answer->error.empty())
              answer->error = "no SRV target has an address";
            (*finish)(std::move(*answer));
          });
    }
  });
}

bool Discovery::fill(conf::Config& config, std::map<std::string, AddressList>& known,
                     std::string& error) {
  staged_.clear();
  for (conf::PoolConfig& pc : config.pools) {
    if (!pc.discovery.enabled()) continue;
    PoolState* state = nullptr;
    auto it = pools_.find(pc.name);
    if (it != pools_.end() && it->second->source.same_source(pc.discovery)) {
      state = it->second.get();
    } else {
      // A name not looked up yet: now, blocking (a start, or a reload that
      // brings the name), without a loop.
      DnsClient blocking(nullptr, dns_servers_);
      std::optional<DiscoveryAnswer> got;
      lookup(blocking, pc.discovery, [&got](DiscoveryAnswer a) { got = std::move(a); });
      blocking.run(kBlockingLookupMs);
      const std::string what = "pool '" + pc.name + "': " + pc.discovery.describe();
      if (!got) {
        error = what + ": no answer from " + blocking.servers_text();
        return false;
      }
      for (const std::string& n : got->notes) log_notice("%s: %s", what.c_str(), n.c_str());
      if (!got->members || got->members->empty()) {
        error = what + ": " + (got->error.empty() ? "no records" : got->error) + " (asked " +
                blocking.servers_text() + "); a pool needs at least one server to start from";
        return false;
      }
      auto s = std::make_unique<PoolState>();
      s->source = pc.discovery;
      s->membership = std::make_unique<DiscoveryMembership>(settings_of(pc), *got->members);
      s->addresses = std::move(got->addresses);
      s->lookups = 1;
      s->last_change_ms = wall_ms();
      std::vector<std::string> ids;
      for (const auto& m : s->membership->current()) ids.push_back(m.identity());
      log_notice("%s: %zu server(s): %s", what.c_str(), ids.size(), join(ids).c_str());
      state = s.get();
      staged_[pc.name] = std::move(s);
    }
    pc.servers.clear();
    for (const DiscoveredMember& m : state->membership->current()) {
      conf::ServerConfig sc;
      sc.entry.host = m.host;
      sc.entry.port = m.port;
      sc.entry.weight = m.weight;
      sc.text = entry_address(m) + ":" + std::to_string(m.weight);
      sc.line = pc.discovery.line;
      const auto a = state->addresses.find(entry_address(m));
      if (a != state->addresses.end()) known[entry_address(m)] = a->second;
      pc.servers.push_back(std::move(sc));
    }
    // A change waiting for its fleet switch keeps its moment through any
    // reload of the file.
    // Once it has ended, the file's own reload_switch_at applies again.
    const int64_t ends = state->switch_at_ms + pc.reload_switch_window_ms;
    if (state->switch_at_ms != 0 && pc.reload_warmup_ms > 0 && ends > wall_ms()) {
      pc.reload_switch_at_ms = state->switch_at_ms;
    }
  }
  return true;
}

void Discovery::commit(const conf::Config& config) {
  std::map<std::string, std::unique_ptr<PoolState>> next;
  for (const conf::PoolConfig& pc : config.pools) {
    if (!pc.discovery.enabled()) continue;
    std::unique_ptr<PoolState> s;
    if (auto st = staged_.find(pc.name); st != staged_.end()) {
      s = std::move(st->second);
    } else if (auto it = pools_.find(pc.name); it != pools_.end()) {
      s = std::move(it->second);
    }
    if (!s) continue;  // not filled: cannot happen
    s->source = pc.discovery;
    s->membership->set_settings(settings_of(pc));
    s->lead_ms = settings_of(pc).lead_ms;
    s->hold_ms = settings_of(pc).hold_ms;
    s->window_ms = settings_of(pc).window_ms;
    s->max_change = pc.discovery.max_change;
    // The period may have changed: arm() sets the timer anew (the timer is
    // kept: this may run inside its own callback, through a lookup that
    // answered at once).
    next[pc.name] = std::move(s);
  }
  staged_.clear();
  pools_ = std::move(next);
  {
    std::lock_guard<std::mutex> lock(status_mu_);
    status_.clear();
  }
  for (auto& [name, s] : pools_) {
    arm(name, *s);
    publish(name, *s);
  }
}

void Discovery::arm(const std::string& pool, PoolState& s, bool fired) {
  if (base_ == nullptr) return;
  if (!s.timer) s.timer = std::make_unique<Timer>(base_, [this, pool] { on_tick(pool); });
  const int64_t period = std::max(s.source.refresh_ms, 1);
  const int64_t now = wall_ms();
  int64_t next = (now / period + 1) * period;
  // A timer that fired a hair early by the wall clock (NTP slews it) would
  // find the same instant again.
  if (fired && next <= s.next_ms) next = s.next_ms + period;
  s.next_ms = next;
  s.timer->arm_ms(static_cast<uint64_t>(s.next_ms - now));
}

void Discovery::on_tick(const std::string& pool) {
  auto it = pools_.find(pool);
  if (it == pools_.end()) return;
  PoolState& s = *it->second;
  const int64_t at = s.next_ms;
  arm(pool, s, true);
  if (s.in_flight) return;  // the last lookup still runs: this one is skipped
  s.in_flight = true;
  PoolState* const tag = &s;
  lookup(*client_, s.source, [this, pool, at, tag](DiscoveryAnswer a) {
    auto found = pools_.find(pool);
    // A reload that changed the pool's source meanwhile: not its answer.
    if (found == pools_.end() || found->second.get() != tag) return;
    found->second->in_flight = false;
    on_answer(pool, at, std::move(a));
  });
}

void Discovery::on_answer(const std::string& pool, int64_t at_ms, DiscoveryAnswer answer) {
  PoolState& s = *pools_.at(pool);
  const std::string what = "pool '" + pool + "': " + s.source.describe();
  ++s.lookups;
  for (const std::string& n : answer.notes) log_info("%s: %s", what.c_str(), n.c_str());
  const Members before = s.membership->current();
  if (!answer.members || answer.members->empty()) {
    s.membership->observe(at_ms, std::nullopt);
    const std::string why = answer.error.empty() ? "no records" : answer.error;
    // Said once a streak, and again when the reason changes.
    if (!s.failing || why != s.last_error) {
      log_warn("%s: %s; keeping its %zu server(s) until a lookup finds records again", what.c_str(),
               why.c_str(), before.size());
    }
    s.failing = true;
    s.last_error = why;
    publish(pool, s);
    return;
  }
  if (s.failing) log_notice("%s: lookups find records again", what.c_str());
  s.failing = false;
  // New addresses of members in force: their place on the ring stays.
  std::map<std::string, AddressList> moved;
  for (const DiscoveredMember& m : before) {
    const std::string key = entry_address(m);
    auto found = answer.addresses.find(key);
    if (found == answer.addresses.end()) continue;
    auto old = s.addresses.find(key);
    if (old != s.addresses.end() && old->second == found->second) continue;
    if (old != s.addresses.end()) {
      log_notice("%s: server %s now at %s (was %s); no key changes server", what.c_str(),
                 key.c_str(), describe(found->second).c_str(), describe(old->second).c_str());
    }
    moved[key] = found->second;
  }
  for (auto& [key, addrs] : answer.addresses) s.addresses[key] = addrs;
  if (!moved.empty() && hooks_.addresses_changed) hooks_.addresses_changed(pool);

  const DiscoveryMembership::Event ev = s.membership->observe(at_ms, answer.members);
  const int64_t hold = s.hold_ms;
  switch (ev) {
    case DiscoveryMembership::Event::seen:
    case DiscoveryMembership::Event::replaced: {
      std::vector<std::string> j, l, r;
      diff_members(before, s.membership->candidate(), j, l, r);
      s.pending_since_ms = at_ms;
      s.pending_text = describe_change(j, l, r);
      log_notice("%s: %s a change (%s), applied once seen for %lld ms (discovery_hold)",
                 what.c_str(),
                 ev == DiscoveryMembership::Event::seen ? "lists" : "lists yet another",
                 s.pending_text.c_str(), static_cast<long long>(hold));
      break;
    }
    case DiscoveryMembership::Event::dropped:
      log_notice(
          "%s: lists the servers in force again; the change seen at %s (%s) is dropped, as it "
          "lasted less than discovery_hold",
          what.c_str(), utc_text(s.pending_since_ms).c_str(), s.pending_text.c_str());
      s.pending_since_ms = 0;
      s.pending_text.clear();
      break;
    case DiscoveryMembership::Event::step:
      apply(pool, s, before);
      break;
    default:
      break;
  }
  publish(pool, s);
}

void Discovery::apply(const std::string& pool, PoolState& s, const Members& before) {
  const DiscoveryMembership::Step step = s.membership->step();
  const std::string what = "pool '" + pool + "': " + s.source.describe();
  const int64_t previous_switch = s.switch_at_ms;
  s.switch_at_ms = s.lead_ms > 0 ? step.moment_ms : 0;
  const std::string when =
      s.switch_at_ms != 0
          ? "; every instance switches at " + utc_text(s.switch_at_ms) + " (reload_switch_at)"
          : "";
  log_notice("%s: the servers change (%s), as seen since %s%s", what.c_str(),
             describe_change(step.joined, step.left, step.reweighted).c_str(),
             utc_text(step.seen_ms).c_str(), when.c_str());
  if (step.waiting > 0) {
    log_warn(
        "%s: the change is larger than discovery_max_change (%.0f%% of %zu server(s)): this "
        "step takes part of it, and %zu more join or leave in later steps, each once the last "
        "has switched and discovery_hold has passed",
        what.c_str(), s.max_change * 100.0, before.size(), step.waiting);
  }
  if (hooks_.apply_step && !hooks_.apply_step(pool)) {
    log_error("%s: the change was refused (said above); the servers in force stay", what.c_str());
    s.membership->reset(before);
    s.switch_at_ms = previous_switch;
    s.pending_since_ms = 0;
    s.pending_text.clear();
    return;
  }
  s.last_change_ms = wall_ms();
  if (step.waiting == 0 || !s.membership->has_candidate()) {
    s.pending_since_ms = 0;
    s.pending_text.clear();
    return;
  }
  std::vector<std::string> j, l, r;
  diff_members(s.membership->current(), s.membership->candidate(), j, l, r);
  s.pending_since_ms = s.membership->candidate_since_ms();
  s.pending_text = describe_change(j, l, r);
}

void Discovery::publish(const std::string& pool, const PoolState& s) {
  DiscoveryStatus st;
  st.source = s.source.describe();
  st.servers = s.membership->current().size();
  st.lookups = s.lookups;
  st.failures = s.membership->failures();
  st.changes = s.membership->applied();
  st.held = s.membership->held();
  st.last_change_ms = s.last_change_ms;
  st.pending_since_ms = s.pending_since_ms;
  st.pending = s.pending_text;
  st.failing = s.failing;
  std::lock_guard<std::mutex> lock(status_mu_);
  status_[pool] = std::move(st);
}

std::map<std::string, DiscoveryStatus> Discovery::status() const {
  std::lock_guard<std::mutex> lock(status_mu_);
  return status_;
}

}  // namespace memshard::proxy
