// What one server may hold stale: the keys written through this proxy that
// the server did not take (it was out, refused, timed out, or the write went
// to another server in its place), and whether it missed a flush_all.
//
// A cache may miss, but must never answer with a value that an
// acknowledged write has since replaced (docs/failures.md). So:
//   - every write that does not reach a key's home server records the key
//     in that server's log (routes: key_route.cc, gutter_route.cc,
//     replicated_key_route.cc; backends: a write whose reply failed);
//   - a read of a recorded key on that server first deletes it there, on
//     the same connection, so the server answers a miss (the read gate);
//   - the repairer (runtime/repairer.h) deletes recorded keys in the
//     background, and all of a returning server's before it is re-admitted.
// A write that went to another server in the home's place leaves a guest
// copy there; the entry names that server (a fallback), whose copy turns
// stale-capable once the key is read from its home again, and is recorded
// there then.
//
// One log per (pool, server identity) in the process, shared by every
// worker's BackendServer of it (RepairLog::of). Thread-safe. The request
// path reads one atomic when nothing is recorded.
#pragma once

#include <array>
#include <atomic>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <mutex>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

namespace memshard::proxy {

class RepairLog {
 public:
  // Memory accounted per entry besides its key (the node, the map slot).
  static constexpr size_t kEntryOverhead = 96;

  struct Item {
    std::string key;
    uint64_t seq = 0;  // of the entry's last record
    uint64_t recorded_usec = 0;
    std::vector<RepairLog*> fallbacks;  // where guest copies were written
  };

  RepairLog(std::string pool, std::string identity);
  RepairLog(const RepairLog&) = delete;
  RepairLog& operator=(const RepairLog&) = delete;

  // The process's log of that server, made on first use; it lives as long
  // as the process (a server that leaves the config and comes back finds
  // what was recorded for it).
  static RepairLog& of(const std::string& pool, const std::string& identity);
  // Every log made so far (for the stats and the repairer).
  static std::vector<RepairLog*> all();
  // The server's log if one was made, else null.
  static const RepairLog* find(const std::string& pool, const std::string& identity);

  const std::string& pool() const { return pool_; }
  const std::string& identity() const { return identity_; }

  // --- Request path -------------------------------------------------------

  // Nothing recorded and no flush owed: the read gate has nothing to do.
  bool clear() const { return state_.load(std::memory_order_acquire) == 0; }
  // Whether a read of `key` here must delete it first: recorded, or a
  // flush is owed (the log overflowed, or a flush_all was missed), which
  // makes every key suspect until the server is flushed.
  bool gates(std::string_view key) const;
  // The server missed a write of `key`; `fallback`: where the write went
  // instead (a guest copy), if anywhere.
  void record(std::string_view key, RepairLog* fallback = nullptr);
  // The server missed a flush_all: it must be flushed before it serves.
  void record_flush();
  // The sequence now: stamped on a replacing write sent here (set, delete),
  // so that its success can forget what was recorded before it.
  uint64_t sequence() const { return seq_.load(std::memory_order_acquire); }
  // A write that replaces `key`'s value (set, ms, delete, md) sent at
  // sequence `sent_seq` succeeded here: entries recorded before it are moot.
  void replaced(std::string_view key, uint64_t sent_seq);

  // --- Repairer -----------------------------------------------------------

  // Copies up to `max` entries recorded after sequence `after_seq` and at
  // or before `before_usec`, skipping those with fallbacks when
  // `with_fallbacks` is false.
  void take(size_t max, uint64_t after_seq, uint64_t before_usec, bool with_fallbacks,
            std::vector<Item>& out) const;
  // `item`'s key was deleted on the server: the entry goes unless it was
  // recorded again since, or it has fallbacks and `release_guests` is
  // false (its guest copies still serve: the server is not back yet).
  // Returns its fallbacks when it went with them (for the caller to
  // record the guest copies there), empty otherwise.
  std::vector<RepairLog*> repaired(const Item& item, bool release_guests);
  // Moves every entry's fallbacks out (the home serves the key again, so
  // the guest copies are stale-capable): each fallback records the key.
  // Returns how many keys were recorded on fallbacks.
  size_t release_fallbacks();
  // A flush is owed, and the sequence to hand flushed() once it is made.
  bool flush_owed() const { return flush_owed_.load(std::memory_order_acquire); }
  // The server was flushed (flush_all answered OK) after the sequence
  // `seq_before` was read: entries recorded up to it go, and the flush is
  // no longer owed unless one was recorded since.
  void flushed(uint64_t seq_before);
  // The most memory the entries may take; past it the log drops them all
  // and owes a flush (counted in overflows()).
  void set_limit(size_t bytes) { limit_.store(bytes, std::memory_order_relaxed); }
  // Whether the server is ejected now (set by the health check): the
  // repairer leaves it for the repair before re-admission.
  void set_out(bool out) { out_.store(out, std::memory_order_relaxed); }
  bool out() const { return out_.load(std::memory_order_relaxed); }

  // --- Counters -----------------------------------------------------------
  uint64_t keys() const { return entries_.load(std::memory_order_relaxed); }
  uint64_t bytes() const { return bytes_.load(std::memory_order_relaxed); }
  uint64_t recorded() const { return recorded_.load(std::memory_order_relaxed); }
  uint64_t repairs() const { return repairs_.load(std::memory_order_relaxed); }
  uint64_t overflows() const { return overflows_.load(std::memory_order_relaxed); }
  uint64_t flushes() const { return flushes_.load(std::memory_order_relaxed); }

 private:
  struct Entry {
    uint64_t seq = 0;
    uint64_t recorded_usec = 0;
    std::vector<RepairLog*> fallbacks;
    // Deleted on the server since its last record, kept for its guests
    // (repaired before re-admission): goes when they are released.
    bool home_clean = false;
  };
  struct Hash {
    using is_transparent = void;
    size_t operator()(std::string_view s) const { return std::hash<std::string_view>{}(s); }
  };
  struct Shard {
    mutable std::mutex mu;
    std::unordered_map<std::string, Entry, Hash, std::equal_to<>> entries;
  };
  static constexpr size_t kShards = 16;

  Shard& shard_of(std::string_view key) const;
  void update_state();
  void owe_flush();
  void overflow();
  // Erases `it` from `shard` (locked), keeping the counts.
  void erase_locked(Shard& shard,
                    std::unordered_map<std::string, Entry, Hash, std::equal_to<>>::iterator it);

  const std::string pool_;
  const std::string identity_;
  mutable std::array<Shard, kShards> shards_;
  // entries_ + (flush owed ? 1 << 62 : 0): one load tells the request path
  // whether anything is recorded.
  std::atomic<uint64_t> state_{0};
  std::atomic<uint64_t> entries_{0};
  std::atomic<uint64_t> bytes_{0};
  std::atomic<uint64_t> seq_{0};
  std::atomic<size_t> limit_{size_t{64} << 20};
  std::atomic<bool> flush_owed_{false};
  std::atomic<uint64_t> flush_seq_{0};  // the sequence of the last flush recorded
  std::atomic<bool> out_{false};
  std::atomic<uint64_t> recorded_{0}, repairs_{0}, overflows_{0}, flushes_{0};
};

}  // namespace memshard::proxy
