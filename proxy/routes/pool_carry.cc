#include "proxy/routes/pool_carry.h"

#include <algorithm>
#include <cinttypes>
#include <cstdio>
#include <ctime>
#include <optional>
#include <utility>

#include "proxy/support/clock.h"

namespace memshard::proxy {

std::string utc_text(int64_t unix_ms) {
  const time_t seconds = static_cast<time_t>(unix_ms / 1000);
  tm t{};
  gmtime_r(&seconds, &t);
  char buf[64];
  const size_t n = strftime(buf, sizeof(buf), "%Y-%m-%dT%H:%M:%S", &t);
  std::string out(buf, n);
  if (unix_ms % 1000 != 0) {
    snprintf(buf, sizeof(buf), ".%03" PRId64, unix_ms % 1000);
    out += buf;
  }
  return out + "Z";
}

namespace {

std::string seconds(int64_t ms) {
  char buf[64];
  snprintf(buf, sizeof(buf), "%.3f s", static_cast<double>(ms) / 1000.0);
  return buf;
}

void note(std::vector<std::string>* notes, const std::string& pool, const std::string& text) {
  if (notes != nullptr) notes->push_back("pool '" + pool + "': " + text);
}

// The past rings of `old` still open at `now_usec`, newest first.
std::vector<PastRing> open_past(const Pool& old, uint64_t now_usec) {
  std::vector<PastRing> past;
  for (const PastRing& p : old.past) {
    if (p.until_usec > now_usec && past.size() < kMaxPastRings) past.push_back(p);
  }
  return past;
}

// `next` waits for its switch: its placement goes into next.pending, and
// it keeps routing by the placement `old` has in force.
void schedule(const Pool& old, Pool& next, uint64_t generation, const WallClock& now, bool kept,
              std::vector<std::string>* notes) {
  const std::string& name = next.config.name;
  const int64_t at_unix_ms = next.config.reload_switch_at_ms;
  PendingSwitch p{next.config,
                  std::move(next.ring),
                  std::move(next.servers),
                  {},
                  generation,
                  monotonic_moment(at_unix_ms, now),
                  static_cast<uint64_t>(next.config.reload_switch_window_ms) * 1000,
                  at_unix_ms};
  if (kept && old.pending->at_unix_ms != p.at_unix_ms) {
    note(notes, name,
         "the switch waiting for " + utc_text(old.pending->at_unix_ms) + " is rescheduled for " +
             utc_text(p.at_unix_ms));
  }
  // The settings are the new config's at once; the placement stays.
  next.ring = old.ring;
  next.servers = old.servers;
  next.live = old.live;
  next.config.servers = old.config.servers;
  next.config.ring = old.config.ring;
  next.config.replicas = old.config.replicas;
  next.past = open_past(old, now.mono_usec);
  next.guard = old.guard ? old.guard : std::make_shared<WarmGuard>();
  next.pending = std::move(p);
  const int64_t late_ms = now.unix_usec / 1000 - next.pending->at_unix_ms;
  const std::string window = next.config.reload_switch_window_ms > 0
                                 ? ", each key at its moment in the " +
                                       std::to_string(next.config.reload_switch_window_ms) +
                                       " ms after it"
                                 : "";
  if (late_ms < 0) {
    if (!kept) {
      note(notes, name,
           "generation " + std::to_string(generation) + " switches servers at " +
               utc_text(next.pending->at_unix_ms) + " (in " + seconds(-late_ms) + ")" + window +
               "; until then keys stay where they are, and writes of keys that will move also "
               "delete them on their future servers");
    }
  } else if (!kept) {
    note(notes, name,
         "generation " + std::to_string(generation) + " is late for its switch at " +
             utc_text(next.pending->at_unix_ms) + " by " + seconds(late_ms) +
             ": keys whose moment has passed switch at once" + window);
  }
  if (now.mono_usec >= next.pending->ends_usec()) promote(next, now.mono_usec);
}

}  // namespace

namespace {
bool same_placement(const conf::PoolConfig& ca, const ketama::Ring& ra,
                    const std::vector<ServerInfo>& sa, const conf::PoolConfig& cb,
                    const ketama::Ring& rb, const std::vector<ServerInfo>& sb) {
  const ketama::RingOptions& oa = ca.ring;
  const ketama::RingOptions& ob = cb.ring;
  if (oa.mode != ob.mode || oa.distribution != ob.distribution || oa.hash != ob.hash ||
      oa.hash_tag != ob.hash_tag || oa.hash_salt != ob.hash_salt) {
    return false;
  }
  // Distributions without points place keys by the slots (and wch3 by
  // the servers' weights too).
  if (ra.slots() != rb.slots()) return false;
  if (oa.distribution == ketama::Distribution::wch3) {
    for (size_t i = 0; i < ra.servers().size() && i < rb.servers().size(); ++i) {
      if (ra.servers()[i].fraction != rb.servers()[i].fraction) return false;
    }
  }
  if (ca.replicas != cb.replicas || sa.size() != sb.size()) return false;
  for (size_t i = 0; i < sa.size(); ++i) {
    if (sa[i].identity != sb[i].identity) return false;
  }
  const auto& pa = ra.points();
  const auto& pb = rb.points();
  if (pa.size() != pb.size()) return false;
  for (size_t i = 0; i < pa.size(); ++i) {
    if (pa[i].value != pb[i].value || pa[i].server != pb[i].server) return false;
  }
  return true;
}
}  // namespace

bool same_placement(const Pool& a, const Pool& b) {
  return same_placement(a.config, a.ring, a.servers, b.config, b.ring, b.servers);
}

bool same_placement(const Pool& a, const PendingSwitch& b) {
  return same_placement(a.config, a.ring, a.servers, b.config, b.ring, b.servers);
}

void carry_past(const Pool& old, uint64_t old_generation, Pool& next, uint64_t now_usec) {
  const int window_ms = next.config.reload_warmup_ms;
  if (window_ms <= 0) return;
  std::vector<PastRing> past;
  if (!same_placement(old, next)) {
    past.push_back(PastRing{old.ring,
                            old.servers,
                            {},
                            now_usec + static_cast<uint64_t>(window_ms) * 1000,
                            old_generation,
                            old.config.replicas});
  }
  for (const PastRing& p : old.past) {
    if (p.until_usec > now_usec && past.size() < kMaxPastRings) past.push_back(p);
  }
  next.past = std::move(past);
  if (next.past.empty()) return;
  next.guard = old.guard ? old.guard : std::make_shared<WarmGuard>();
}

bool drop_expired(Pool& pool, uint64_t now_usec) {
  const size_t before = pool.past.size();
  std::erase_if(pool.past, [&](const PastRing& p) { return p.until_usec <= now_usec; });
  if (pool.past.empty() && !pool.pending) pool.guard.reset();
  return pool.past.size() != before;
}

int64_t wall_clock_at(uint64_t mono_usec) {
  // The wall clock read between two close readings of the monotonic one:
  // a thread preempted between the readings would put this instance's
  // switch off by as long, against instances that were not. The closest
  // of a few tries.
  int64_t offset = 0;
  uint64_t best = UINT64_MAX;
  for (int attempt = 0; attempt < 5 && best > 20; ++attempt) {
    const uint64_t before = monotonic_usec();
    const int64_t wall = wall_clock_usec();
    const uint64_t after = monotonic_usec();
    if (after - before >= best) continue;
    best = after - before;
    offset = wall - static_cast<int64_t>(before + best / 2);
  }
  return static_cast<int64_t>(mono_usec) + offset;
}

uint64_t monotonic_moment(int64_t unix_ms, const WallClock& now) {
  const int64_t moment = static_cast<int64_t>(now.mono_usec) + (unix_ms * 1000 - now.unix_usec);
  return moment < 0 ? 0 : static_cast<uint64_t>(moment);
}

void carry_pool(const Pool& old_in, uint64_t old_generation, Pool& next, uint64_t generation,
                const WallClock& now, std::vector<std::string>* notes) {
  const std::string& name = next.config.name;
  const bool scheduled = next.config.reload_switch_at_ms != 0;
  const Pool* old = &old_in;
  std::optional<Pool> begun;
  if (old->pending) {
    const PendingSwitch& p = *old->pending;
    if (scheduled && same_placement(next, p)) {
      schedule(*old, next, generation, now, true, notes);
      return;
    }
    if (now.mono_usec >= p.at_usec) {
      // Keys have begun to switch: the switch completes, and the new
      // config is planned against the placement it brought.
      note(notes, name,
           "the switch to generation " + std::to_string(p.generation) + " had begun at " +
               utc_text(p.at_unix_ms) + "; it completes now, before generation " +
               std::to_string(generation) + " applies");
      begun.emplace(old_in);
      promote(*begun, now.mono_usec);
      old = &*begun;
    } else {
      note(notes, name,
           "the switch to generation " + std::to_string(p.generation) + " waiting for " +
               utc_text(p.at_unix_ms) + " is dropped: generation " + std::to_string(generation) +
               " replaces it, planned against the servers in force");
    }
  }
  if (scheduled && !same_placement(*old, next)) {
    schedule(*old, next, generation, now, false, notes);
    return;
  }
  carry_past(*old, old_generation, next, now.mono_usec);
}

void promote(Pool& pool, uint64_t now_usec) {
  if (!pool.pending) return;
  PendingSwitch p = std::move(*pool.pending);
  pool.pending.reset();
  const uint64_t warmup_usec = static_cast<uint64_t>(p.config.reload_warmup_ms) * 1000;
  std::vector<PastRing> past;
  past.push_back(PastRing{std::move(pool.ring),
                          std::move(pool.servers),
                          {},
                          std::max(now_usec, p.ends_usec()) + warmup_usec,
                          0,
                          pool.config.replicas,
                          false,
                          true});
  for (PastRing& r : pool.past) {
    if (r.until_usec > now_usec && past.size() < kMaxPastRings) past.push_back(std::move(r));
  }
  pool.past = std::move(past);
  pool.config = std::move(p.config);
  pool.ring = std::move(p.ring);
  pool.servers = std::move(p.servers);
  pool.live = std::move(p.live);
  if (!pool.guard) pool.guard = std::make_shared<WarmGuard>();
}

bool promote_due(Pool& pool, uint64_t now_usec) {
  if (!pool.pending || now_usec < pool.pending->ends_usec()) return false;
  promote(pool, now_usec);
  return true;
}

bool retime(Pool& pool, const WallClock& now) {
  if (!pool.pending) return false;
  const uint64_t moment = monotonic_moment(pool.pending->at_unix_ms, now);
  const uint64_t was = pool.pending->at_usec;
  if ((moment > was ? moment - was : was - moment) <= 1000) return false;
  pool.pending->at_usec = moment;
  return true;
}

}  // namespace memshard::proxy
