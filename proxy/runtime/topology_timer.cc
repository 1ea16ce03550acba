// What changes the topology in force with time rather than with a reload:
// reload_warmup windows that end (the past rings' servers, those the config
// dropped, are closed then, and reads stop looking up old servers even
// where no request checked the time), and scheduled switches
// (reload_switch_at) whose window ends: the waiting placement becomes the
// pool's own. The switch itself needs no topology change (the routes
// compare each key's moment with their clock, switch_routes.h); the one at
// the window's end makes the routes plain warm-up routes again, and starts
// the background migration of the switch's moved keys.
#include <algorithm>
#include <set>

#include "proxy/routes/pool_carry.h"
#include "proxy/runtime/proxy.h"
#include "proxy/support/clock.h"
#include "proxy/support/log.h"

namespace memshard::proxy {

namespace {
// While a switch waits, the wall clock is read again this often: a step
// of it (an NTP correction) moves the switch's monotonic moment.
constexpr uint64_t kWallClockCheckUsec = 1'000'000;
}  // namespace

void Proxy::arm_warmup_timer() {
  uint64_t end = next_window_end(*topology_);
  const uint64_t now = monotonic_usec();
  const bool waiting = std::any_of(topology_->pools.begin(), topology_->pools.end(),
                                   [](const Pool& p) { return p.pending.has_value(); });
  if (waiting)
    end = end == 0 ? now + kWallClockCheckUsec : std::min(end, now + kWallClockCheckUsec);
  if (warmup_timer_ == nullptr) {
    warmup_timer_ = std::make_unique<Timer>(base_, [this] { on_warmup_end(); });
  }
  warmup_timer_->cancel();
  if (end == 0) return;
  // The coarse clock may fire a few ms early: on_warmup_end re-arms.
  warmup_timer_->arm_usec(end > now ? end - now : 0);
}

void Proxy::on_warmup_end() {
  const uint64_t now = monotonic_usec();
  const WallClock clock{now, wall_clock_at(now)};
  auto next = std::make_shared<Topology>(*topology_);
  bool changed = false;
  std::set<std::string> switched;
  for (Pool& pool : next->pools) {
    const std::string& name = pool.config.name;
    if (pool.pending) {
      const uint64_t was = pool.pending->at_usec;
      if (retime(pool, clock)) {
        changed = true;
        log_warn(
            "pool '%s': the wall clock stepped by %+.3f s: the switch at %s moves with it "
            "(instances must agree on the time: run NTP)",
            name.c_str(),
            (static_cast<double>(pool.pending->at_usec) - static_cast<double>(was)) / 1e6,
            utc_text(pool.pending->at_unix_ms).c_str());
      }
      const PendingSwitch p = *pool.pending;
      if (promote_due(pool, now)) {
        changed = true;
        switched.insert(name);
        log_notice(
            "pool '%s': switched to the servers of generation %llu (reload_switch_at %s, window "
            "%llu ms); the servers it replaced are looked up after a miss for %d ms more",
            name.c_str(), static_cast<unsigned long long>(p.generation),
            utc_text(p.at_unix_ms).c_str(), static_cast<unsigned long long>(p.window_usec / 1000),
            pool.config.reload_warmup_ms);
      }
    }
    const size_t before = pool.past.size();
    if (!drop_expired(pool, now)) continue;
    changed = true;
    log_notice("pool '%s': %zu reload warm-up window(s) ended; %zu still open", name.c_str(),
               before - pool.past.size(), pool.past.size());
  }
  if (changed) {
    topology_ = next;
    health_->set_topology(next);
    install_on_workers();
  }
  if (!switched.empty()) {
    {
      std::lock_guard<std::mutex> lock(switches_mu_);
      for (const std::string& name : switched) {
        SwitchStatus& s = switches_[name];
        s.pending = false;
        ++s.switches;
      }
    }
    start_migrations(&switched);
  }
  arm_warmup_timer();
}

void Proxy::note_switches(const Topology& before, uint64_t now_usec) {
  const int64_t now_ms = wall_clock_at(now_usec) / 1000;
  std::lock_guard<std::mutex> lock(switches_mu_);
  for (const Pool& pool : topology_->pools) {
    const std::string& name = pool.config.name;
    const Pool* old = before.find_pool(name);
    if (pool.pending) {
      SwitchStatus& s = switches_[name];
      // A reload that keeps the same switch keeps what was said of it.
      if (!s.pending || s.at_unix_ms != pool.pending->at_unix_ms) {
        s.late_ms = std::max<int64_t>(0, now_ms - pool.pending->at_unix_ms);
      }
      s.pending = true;
      s.at_unix_ms = pool.pending->at_unix_ms;
      s.window_ms = pool.pending->window_usec / 1000;
      s.generation = pool.pending->generation;
      continue;
    }
    auto it = switches_.find(name);
    if (it != switches_.end() && it->second.pending) {
      // Replaced by a config that switches at once, or promoted by the reload.
      it->second.pending = false;
    }
    // A config so late that its whole window had passed switched at once.
    const int64_t at = pool.config.reload_switch_at_ms;
    if (at != 0 && old != nullptr && !same_placement(*old, pool) && now_ms >= at) {
      SwitchStatus& s = switches_[name];
      s.at_unix_ms = at;
      s.window_ms = static_cast<uint64_t>(pool.config.reload_switch_window_ms);
      s.generation = topology_->generation;
      s.late_ms = now_ms - at;
      ++s.switches;
    }
  }
}

std::map<std::string, SwitchStatus> Proxy::switches() const {
  std::lock_guard<std::mutex> lock(switches_mu_);
  return switches_;
}

}  // namespace memshard::proxy
