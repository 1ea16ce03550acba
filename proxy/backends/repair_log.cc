#include "proxy/backends/repair_log.h"

#include <algorithm>
#include <map>
#include <utility>

#include "proxy/support/clock.h"

namespace memshard::proxy {

namespace {

constexpr uint64_t kFlushBit = uint64_t{1} << 62;

struct Registry {
  std::mutex mu;
  std::map<std::pair<std::string, std::string>, std::unique_ptr<RepairLog>> logs;
};

Registry& registry() {
  static Registry* r = new Registry;  // never destroyed: workers may outlive statics
  return *r;
}

}  // namespace

RepairLog::RepairLog(std::string pool, std::string identity)
    : pool_(std::move(pool)), identity_(std::move(identity)) {}

RepairLog& RepairLog::of(const std::string& pool, const std::string& identity) {
  Registry& r = registry();
  std::lock_guard<std::mutex> lock(r.mu);
  auto& log = r.logs[{pool, identity}];
  if (!log) log = std::make_unique<RepairLog>(pool, identity);
  return *log;
}

const RepairLog* RepairLog::find(const std::string& pool, const std::string& identity) {
  Registry& r = registry();
  std::lock_guard<std::mutex> lock(r.mu);
  auto it = r.logs.find({pool, identity});
  return it == r.logs.end() ? nullptr : it->second.get();
}

std::vector<RepairLog*> RepairLog::all() {
  Registry& r = registry();
  std::lock_guard<std::mutex> lock(r.mu);
  std::vector<RepairLog*> out;
  for (auto& [key, log] : r.logs) out.push_back(log.get());
  return out;
}

RepairLog::Shard& RepairLog::shard_of(std::string_view key) const {
  return shards_[Hash{}(key) % kShards];
}

void RepairLog::update_state() {
  state_.store(entries_.load(std::memory_order_relaxed) +
                   (flush_owed_.load(std::memory_order_relaxed) ? kFlushBit : 0),
               std::memory_order_release);
}

bool RepairLog::gates(std::string_view key) const {
  const uint64_t state = state_.load(std::memory_order_acquire);
  if (state == 0) return false;
  if (state & kFlushBit) return true;
  Shard& shard = shard_of(key);
  std::lock_guard<std::mutex> lock(shard.mu);
  return shard.entries.find(key) != shard.entries.end();
}

void RepairLog::record(std::string_view key, RepairLog* fallback) {
  recorded_.fetch_add(1, std::memory_order_relaxed);
  if (flush_owed_.load(std::memory_order_acquire)) {
    // The flush owed will remove this key's value too, if it comes after.
    owe_flush();
    return;
  }
  Shard& shard = shard_of(key);
  bool over = false;
  {
    std::lock_guard<std::mutex> lock(shard.mu);
    auto [it, fresh] = shard.entries.try_emplace(std::string(key));
    Entry& e = it->second;
    // Stamped under the shard's lock: a repair of this key that copied the
    // entry before sees a newer sequence and leaves it.
    e.seq = seq_.fetch_add(1, std::memory_order_acq_rel) + 1;
    e.recorded_usec = monotonic_usec();
    e.home_clean = false;
    if (fallback != nullptr && fallback != this &&
        std::find(e.fallbacks.begin(), e.fallbacks.end(), fallback) == e.fallbacks.end()) {
      e.fallbacks.push_back(fallback);
    }
    if (fresh) {
      entries_.fetch_add(1, std::memory_order_relaxed);
      const uint64_t b =
          bytes_.fetch_add(key.size() + kEntryOverhead) + key.size() + kEntryOverhead;
      over = b > limit_.load(std::memory_order_relaxed);
    }
  }
  if (over) {
    overflow();
  } else {
    update_state();
  }
}

// Past its limit the log cannot say which keys are stale any more: it
// drops them all and owes a flush instead, which the repairer makes before
// the server serves again (or at once, if it is serving).
void RepairLog::overflow() {
  owe_flush();
  overflows_.fetch_add(1, std::memory_order_relaxed);
  // Guest copies are not reached by this server's flush: they are recorded
  // on their own servers now (where a read of them deletes them first,
  // a miss while their home is out, rather than a stale value later).
  std::vector<std::pair<std::string, std::vector<RepairLog*>>> guests;
  for (Shard& shard : shards_) {
    std::lock_guard<std::mutex> lock(shard.mu);
    for (auto& [key, e] : shard.entries) {
      if (!e.fallbacks.empty()) guests.emplace_back(key, std::move(e.fallbacks));
    }
    entries_.fetch_sub(shard.entries.size(), std::memory_order_relaxed);
    shard.entries.clear();
  }
  bytes_.store(0, std::memory_order_relaxed);
  update_state();
  for (auto& [key, logs] : guests) {
    for (RepairLog* f : logs) f->record(key);
  }
}

void RepairLog::record_flush() {
  recorded_.fetch_add(1, std::memory_order_relaxed);
  owe_flush();
  update_state();
}

// Only a flush made after this sequence pays what is owed (flushed()).
void RepairLog::owe_flush() {
  flush_owed_.store(true, std::memory_order_release);
  flush_seq_.store(seq_.fetch_add(1) + 1, std::memory_order_release);
}

void RepairLog::erase_locked(
    Shard& shard, std::unordered_map<std::string, Entry, Hash, std::equal_to<>>::iterator it) {
  bytes_.fetch_sub(it->first.size() + kEntryOverhead, std::memory_order_relaxed);
  entries_.fetch_sub(1, std::memory_order_relaxed);
  shard.entries.erase(it);
}

void RepairLog::replaced(std::string_view key, uint64_t sent_seq) {
  if (state_.load(std::memory_order_acquire) == 0) return;
  Shard& shard = shard_of(key);
  {
    std::lock_guard<std::mutex> lock(shard.mu);
    auto it = shard.entries.find(key);
    // A guest copy elsewhere stays recorded on its entry: only the home's
    // value was replaced.
    if (it == shard.entries.end() || it->second.seq > sent_seq || !it->second.fallbacks.empty())
      return;
    erase_locked(shard, it);
  }
  update_state();
}

void RepairLog::take(size_t max, uint64_t after_seq, uint64_t before_usec, bool with_fallbacks,
                     std::vector<Item>& out) const {
  for (Shard& shard : shards_) {
    std::lock_guard<std::mutex> lock(shard.mu);
    for (const auto& [key, e] : shard.entries) {
      if (out.size() >= max) return;
      if (e.seq <= after_seq || e.recorded_usec > before_usec || e.home_clean) continue;
      if (!with_fallbacks && !e.fallbacks.empty()) continue;
      out.push_back(Item{key, e.seq, e.recorded_usec, e.fallbacks});
    }
  }
}

std::vector<RepairLog*> RepairLog::repaired(const Item& item, bool release_guests) {
  Shard& shard = shard_of(item.key);
  std::vector<RepairLog*> fallbacks;
  {
    std::lock_guard<std::mutex> lock(shard.mu);
    auto it = shard.entries.find(item.key);
    if (it == shard.entries.end() || it->second.seq != item.seq) return {};
    if (!release_guests && !it->second.fallbacks.empty()) {
      it->second.home_clean = true;
      repairs_.fetch_add(1, std::memory_order_relaxed);
      return {};
    }
    fallbacks = std::move(it->second.fallbacks);
    erase_locked(shard, it);
  }
  repairs_.fetch_add(1, std::memory_order_relaxed);
  update_state();
  return fallbacks;
}

size_t RepairLog::release_fallbacks() {
  std::vector<std::pair<std::string, std::vector<RepairLog*>>> moved;
  for (Shard& shard : shards_) {
    std::lock_guard<std::mutex> lock(shard.mu);
    for (auto it = shard.entries.begin(); it != shard.entries.end();) {
      auto next = std::next(it);
      Entry& e = it->second;
      if (!e.fallbacks.empty()) moved.emplace_back(it->first, std::move(e.fallbacks));
      e.fallbacks.clear();
      if (e.home_clean) erase_locked(shard, it);  // nothing left to do here
      it = next;
    }
  }
  update_state();
  size_t n = 0;
  for (auto& [key, logs] : moved) {
    for (RepairLog* f : logs) {
      f->record(key);
      ++n;
    }
  }
  return n;
}

void RepairLog::flushed(uint64_t seq_before) {
  flushes_.fetch_add(1, std::memory_order_relaxed);
  if (flush_seq_.load(std::memory_order_acquire) <= seq_before)
    flush_owed_.store(false, std::memory_order_release);
  for (Shard& shard : shards_) {
    std::lock_guard<std::mutex> lock(shard.mu);
    for (auto it = shard.entries.begin(); it != shard.entries.end();) {
      auto next = std::next(it);
      // Guest copies elsewhere still need recording: their entries stay.
      if (it->second.seq <= seq_before && it->second.fallbacks.empty()) erase_locked(shard, it);
      it = next;
    }
  }
  update_state();
}

}  // namespace memshard::proxy
