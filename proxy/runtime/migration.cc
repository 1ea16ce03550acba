#include "proxy/runtime/migration.h"

#include <time.h>
#include <unistd.h>

#include <algorithm>
#include <array>
#include <chrono>
#include <functional>
#include <map>
#include <thread>

#include "proxy/protocol/metadump.h"
#include "proxy/protocol/own_requests.h"
#include "proxy/protocol/reply_parser.h"
#include "proxy/protocol/reply_status.h"
#include "proxy/protocol/retrieval_reply.h"
#include "proxy/routes/replica_placement.h"
#include "proxy/runtime/blocking_conn.h"
#include "proxy/support/clock.h"
#include "proxy/support/log.h"

namespace memshard::proxy {

namespace {

int wait_ms(const Pool& pool) {
  return std::clamp(pool.config.timeout_ms.value_or(1000), 50, 1000);
}

}  // namespace

Migration::Migration(const Pool& pool, std::string instance)
    : pool_(pool), instance_(std::move(instance)), until_usec_(next_end(pool)) {
  const int timeout = wait_ms(pool_);
  for (const PastRing& past : pool_.past) {
    for (const ServerInfo& s : past.servers) {
      const bool known = std::any_of(walks_.begin(), walks_.end(), [&](const Walk& w) {
        return w.server.identity == s.identity;
      });
      if (known) continue;
      Walk& w = walks_.emplace_back();
      w.server = s;
      w.lease = std::make_unique<WalkLease>(pool_, s, instance_, timeout);
      w.shown.server = s.identity;
      w.shown.state = "waiting";
    }
  }
  refilled_usec_ = monotonic_usec();
  thread_ = std::thread([this] { run(); });
}

std::string Migration::local_instance() {
  char host[256] = {};
  gethostname(host, sizeof(host) - 1);
  return std::string(host) + ":" + std::to_string(getpid());
}

uint64_t Migration::next_end(const Pool& pool) {
  uint64_t end = 0;
  for (const PastRing& p : pool.past) end = std::max(end, p.until_usec);
  return end;
}

Migration::~Migration() {
  stop();
  if (thread_.joinable()) thread_.join();
}

Migration::Progress Migration::progress() const {
  Progress p;
  p.seen = seen_.load();
  p.moved = moved_.load();
  p.skipped = skipped_.load();
  p.failed = failed_.load();
  p.pending = pending_.load();
  p.running = running_.load();
  const uint64_t now = monotonic_usec();
  p.seconds_left = until_usec_ > now ? (until_usec_ - now) / 1'000'000 : 0;
  p.instance = instance_;
  std::lock_guard<std::mutex> lock(shown_mu_);
  for (const Walk& w : walks_) p.walks.push_back(w.shown);
  return p;
}

bool Migration::stopping() const {
  return stop_.load() || monotonic_usec() >= until_usec_;
}

void Migration::show(Walk& w, const std::string& walker, const char* state, uint64_t seen,
                     uint64_t moved) {
  std::lock_guard<std::mutex> lock(shown_mu_);
  w.shown.walker = walker;
  w.shown.state = state;
  w.shown.seen = seen;
  w.shown.moved = moved;
}

void Migration::run() {
  const std::string& name = pool_.config.name;
  log_notice(
      "pool '%s': migrating moved keys from %zu server(s) at most %u keys/s, each server walked "
      "by one instance of the fleet (this one is %s)",
      name.c_str(), walks_.size(), pool_.config.reload_migrate_rate, instance_.c_str());
  // Instances that reload together start on different servers.
  const size_t first = walks_.empty() ? 0 : std::hash<std::string>{}(instance_) % walks_.size();
  while (!stopping() && round(first)) {
    if (!wait_until(monotonic_usec() + kPollUsec)) break;
  }
  const Progress p = progress();
  size_t elsewhere = 0;
  for (const MigrationWalk& w : p.walks) elsewhere += w.walker != instance_ && w.state == "done";
  log_notice(
      "pool '%s': migration %s: %llu seen, %llu moved, %llu skipped, %llu failed, %llu not "
      "reached; %zu server(s) walked by other instances",
      name.c_str(), stopping() ? "stopped" : "done", static_cast<unsigned long long>(p.seen),
      static_cast<unsigned long long>(p.moved), static_cast<unsigned long long>(p.skipped),
      static_cast<unsigned long long>(p.failed), static_cast<unsigned long long>(p.pending),
      elsewhere);
  listed_.clear();
  listed_.shrink_to_fit();
  running_.store(false);
}

bool Migration::round(size_t first) {
  bool elsewhere = false;
  for (size_t n = 0; n < walks_.size() && !stopping(); ++n) {
    Walk& w = walks_[(first + n) % walks_.size()];
    if (w.finished) continue;
    switch (w.lease->take()) {
      case WalkLease::Outcome::taken:
        show(w, instance_, "walking", 0, 0);
        switch (walk(w)) {
          case Ended::done:
            w.finished = true;
            break;
          case Ended::lost:
            elsewhere = true;
            break;
          case Ended::stopped:
            break;
        }
        break;
      case WalkLease::Outcome::done: {
        const WalkLease::Holder& h = w.lease->holder();
        w.finished = true;
        show(w, h.instance, "done", h.seen, h.moved);
        break;
      }
      case WalkLease::Outcome::held: {
        const WalkLease::Holder& h = w.lease->holder();
        elsewhere = true;
        show(w, h.instance, "walking", h.seen, h.moved);
        break;
      }
      case WalkLease::Outcome::unreachable:
        w.finished = true;
        failed_.fetch_add(1);
        show(w, "", "failed", 0, 0);
        log_warn("pool '%s': migration cannot reach %s to take its walk", pool_.config.name.c_str(),
                 w.server.identity.c_str());
        break;
    }
  }
  return elsewhere;
}

bool Migration::keep_lease(Walk& w) {
  const uint64_t now = monotonic_usec();
  if (now - w.renewed_usec < WalkLease::kRenewUsec) return true;
  w.renewed_usec = now;
  if (w.lease->renew(w.seen, w.moved)) {
    show(w, instance_, "walking", w.seen, w.moved);
    return true;
  }
  const WalkLease::Holder& h = w.lease->holder();
  log_warn("pool '%s': migration lost the walk of %s to %s (its lease lapsed)",
           pool_.config.name.c_str(), w.server.identity.c_str(),
           h.instance.empty() ? "another instance" : h.instance.c_str());
  show(w, h.instance, "walking", h.seen, h.moved);
  return false;
}

// One server's walk under its lease: its moved keys listed, then copied
// at the rate; the lease renewed all along, and marked done at the end.
Migration::Ended Migration::walk(Walk& w) {
  const std::string& name = pool_.config.name;
  w.seen = w.moved = 0;
  w.renewed_usec = monotonic_usec();
  listed_.clear();
  const bool kept = list_keys(w);
  if (stopping()) {
    w.lease->release();
    return Ended::stopped;
  }
  if (!kept) return Ended::lost;
  pending_.fetch_add(listed_.size());
  uint64_t last_log = monotonic_usec();
  // By index: a copy tried again goes to the end of the list.
  size_t at = 0;
  for (; at < listed_.size(); ++at) {
    if (!keep_lease(w)) {
      pending_.fetch_sub(listed_.size() - at);
      return Ended::lost;
    }
    if (!wait_until(listed_[at].not_before_usec) || !pace()) break;
    if (copy(w, listed_[at]) == Copied::done) {
      pending_.fetch_sub(1);
    } else if (listed_[at].tries + 1 < kMaxTries) {
      const uint64_t later_usec = monotonic_usec() + static_cast<uint64_t>(wait_ms(pool_)) * 1000;
      Listed later{std::move(listed_[at].key), static_cast<uint8_t>(listed_[at].tries + 1),
                   later_usec};
      listed_.push_back(std::move(later));  // still pending
    } else {
      skipped_.fetch_add(1);
      pending_.fetch_sub(1);
    }
    if (monotonic_usec() - last_log >= 10'000'000) {
      last_log = monotonic_usec();
      const Progress p = progress();
      log_info(
          "pool '%s': migration of %s: %llu seen, %llu moved, %llu skipped, %llu failed, %llu "
          "to go",
          name.c_str(), w.server.identity.c_str(), static_cast<unsigned long long>(p.seen),
          static_cast<unsigned long long>(p.moved), static_cast<unsigned long long>(p.skipped),
          static_cast<unsigned long long>(p.failed), static_cast<unsigned long long>(p.pending));
    }
  }
  if (at < listed_.size()) {  // stopped
    w.lease->release();
    show(w, instance_, "waiting", w.seen, w.moved);
    return Ended::stopped;
  }
  const uint64_t now = monotonic_usec();
  const int64_t left_s =
      until_usec_ > now ? static_cast<int64_t>((until_usec_ - now) / 1'000'000) + 1 : 1;
  w.lease->finish(w.seen, w.moved, left_s);
  show(w, instance_, "done", w.seen, w.moved);
  return Ended::done;
}

// The keys the server holds that it held in a past config and that belong
// to other servers now. False when the walk's lease was lost meanwhile.
bool Migration::list_keys(Walk& w) {
  const int timeout = wait_ms(pool_);
  std::string line;
  const ServerInfo& server = w.server;
  BlockingConn conn(server, timeout);
  std::string request;
  proto::append_metadump(request);
  if (!conn.send(request)) {
    failed_.fetch_add(1);
    log_warn("pool '%s': migration cannot list the keys of %s", pool_.config.name.c_str(),
             server.identity.c_str());
    return true;
  }
  const int64_t now = static_cast<int64_t>(time(nullptr));
  bool ended = false;
  while (!stopping() && conn.read_line(line)) {
    if (!keep_lease(w)) return false;
    if (proto::parse_reply_line(line).kind == proto::ReplyKind::end) {
      ended = true;
      break;
    }
    auto item = proto::parse_metadump_line(line);
    if (!item) {
      // BUSY, ERROR, CLIENT_ERROR: no listing from this server.
      if (!line.starts_with("key=")) {
        failed_.fetch_add(1);
        log_warn("pool '%s': migration: %s answered the listing with \"%s\"",
                 pool_.config.name.c_str(), server.identity.c_str(), line.c_str());
        break;
      }
      continue;
    }
    if (item->key.starts_with(WalkLease::kKeyPrefix)) continue;  // a lease, not a client's key
    seen_.fetch_add(1);
    ++w.seen;
    if (item->exp >= 0 && item->exp <= now) continue;
    bool held_here = false;
    for (const PastRing& past : pool_.past) {
      std::array<size_t, kMaxReplicas> idx;
      const size_t n = past.ring.preference_list(
          item->key,
          std::span<size_t>(idx.data(), std::clamp<size_t>(past.replicas, 1, kMaxReplicas)));
      for (size_t c = 0; c < n; ++c) {
        held_here = held_here || past.servers[idx[c]].identity == server.identity;
      }
    }
    if (!held_here) continue;
    std::array<size_t, kMaxReplicas> now_idx;
    const size_t n = pool_.ring.preference_list(
        item->key, std::span<size_t>(now_idx.data(),
                                     std::clamp<size_t>(pool_.config.replicas, 1, kMaxReplicas)));
    bool still_here = false;
    for (size_t c = 0; c < n; ++c) {
      still_here = still_here || pool_.servers[now_idx[c]].identity == server.identity;
    }
    if (still_here) continue;
    if (listed_.size() >= kMaxListed) {
      skipped_.fetch_add(1);
      continue;
    }
    listed_.push_back(Listed{std::move(item->key)});
  }
  if (!ended && !stopping()) {
    failed_.fetch_add(1);
    log_warn("pool '%s': migration: the listing of %s broke off", pool_.config.name.c_str(),
             server.identity.c_str());
  }
  return true;
}

Migration::Copied Migration::copy(Walk& w, const Listed& item) {
  static thread_local std::map<std::string, std::unique_ptr<BlockingConn>> conns;
  const int timeout = wait_ms(pool_);
  const auto conn_to = [&](const ServerInfo& s) -> BlockingConn& {
    auto& c = conns[s.identity];
    if (!c || !c->ok()) c = std::make_unique<BlockingConn>(s, timeout);
    return *c;
  };
  WarmGuard* guard = pool_.guard.get();
  const WarmGuard::Sample sample = guard != nullptr ? guard->sample(item.key) : WarmGuard::Sample{};
  if (sample.poisoned) {
    skipped_.fetch_add(1);  // an old copy may be stale: only a write brings it back
    return Copied::done;
  }
  if (sample.writing) return Copied::again;
  std::string reply;
  proto::MetaValue value;
  switch (conn_to(w.server).meta_get(item.key, false, 64 * 1024 * 1024, reply, value)) {
    case BlockingConn::Lookup::hit:
      break;
    case BlockingConn::Lookup::miss:        // gone since the listing
    case BlockingConn::Lookup::unsendable:  // no meta form: no copy through memshard either
      skipped_.fetch_add(1);
      return Copied::done;
    case BlockingConn::Lookup::failed:
      failed_.fetch_add(1);
      return Copied::done;
  }
  std::string ms, md, line;
  if (!proto::append_copy_request(item.key, value, false, ms) ||
      !proto::append_delete(item.key, false, md)) {
    skipped_.fetch_add(1);
    return Copied::done;
  }
  std::array<size_t, kMaxReplicas> idx;
  const size_t n = pool_.ring.preference_list(
      item.key,
      std::span<size_t>(idx.data(), std::clamp<size_t>(pool_.config.replicas, 1, kMaxReplicas)));
  bool stored = false, refused = false, broken = false, overtaken = false;
  for (size_t c = 0; c < n; ++c) {
    BlockingConn& to = conn_to(pool_.servers[idx[c]]);
    if (!to.send(ms) || !to.read_line(line)) {
      broken = true;
      continue;
    }
    const proto::ReplyStatus status = proto::classify_reply_line(line);
    if (status == proto::ReplyStatus::done) {
      stored = true;
      if (guard != nullptr && guard->changed(item.key, sample)) {
        // A write of the key overtook the copy (warm_guard.h): the copy
        // goes, and is tried again (it finds the write's value in place,
        // or the old copy deleted by it, or copies what a write of
        // another key in the slot did not touch).
        // Only the copy goes (its CAS): a set that landed after it stays.
        std::string undo;
        const std::optional<uint64_t> cas = proto::copied_cas(line);
        if (!cas || !proto::append_delete_if(item.key, *cas, false, undo)) undo = md;
        if (to.send(undo)) to.read_line(line);
        overtaken = true;
      }
    } else if (status == proto::ReplyStatus::not_stored) {
      refused = true;
    } else {
      broken = true;
    }
  }
  if (overtaken) return Copied::again;
  if (stored) {
    moved_.fetch_add(1);
    ++w.moved;
  } else if (broken) {
    failed_.fetch_add(1);
  } else if (refused) {
    skipped_.fetch_add(1);  // already there: written since the reload
  }
  return Copied::done;
}

// A token bucket holding 50 ms of the rate: bursts stay small, and a
// slow server does not let the walk catch up in a rush afterwards.
bool Migration::pace() {
  const double rate = pool_.config.reload_migrate_rate;
  const double burst = std::max(1.0, rate / 20);
  while (true) {
    if (stopping()) return false;
    const uint64_t now = monotonic_usec();
    tokens_ = std::min(burst, tokens_ + static_cast<double>(now - refilled_usec_) * rate / 1e6);
    refilled_usec_ = now;
    if (tokens_ >= 1) {
      tokens_ -= 1;
      return true;
    }
    const double wait_usec = (1 - tokens_) * 1e6 / rate;
    std::this_thread::sleep_for(
        std::chrono::microseconds(static_cast<int64_t>(std::min(wait_usec, 50'000.0)) + 1));
  }
}

bool Migration::wait_until(uint64_t usec) {
  while (true) {
    if (stopping()) return false;
    const uint64_t now = monotonic_usec();
    if (now >= usec) return true;
    std::this_thread::sleep_for(std::chrono::microseconds(std::min<uint64_t>(usec - now, 50'000)));
  }
}

}  // namespace memshard::proxy
