// The values of a pool's hot keys, kept in the proxy for at most a TTL
// and shared by every worker (hot_key_cache: SIZE_MB, hot_key_ttl: MS).
//
// Why it can never answer a value older than a write made through this
// memshard: every write, delete, touch and flush invalidates the key (or
// everything) under the cache's lock both when it is sent and when its
// reply comes back, before the client sees that reply, and each time it
// also bumps the key's epoch. A fill records the epoch before its read is
// sent and is refused if the epoch moved meanwhile: a read that might have
// seen the value from before a write cannot store it after that write
// completed. As the cache is one structure under one lock, no worker can
// still hold an entry another has dropped. Writes that bypass this
// memshard (another proxy, a client on the server itself) are seen once
// the entry expires: staleness at most hot_key_ttl.
#pragma once

#include <array>
#include <atomic>
#include <cstdint>
#include <memory>
#include <mutex>
#include <string>
#include <string_view>
#include <unordered_map>

namespace memshard::proxy {

class HotKeyCache {
 public:
  HotKeyCache(size_t max_bytes, uint64_t ttl_usec) : max_bytes_(max_bytes), ttl_usec_(ttl_usec) {}

  // The one cache of a pool, by name, shared by every worker and kept
  // across reloads (the limits are those of the latest call).
  static std::shared_ptr<HotKeyCache> for_pool(const std::string& pool, size_t max_bytes,
                                               uint64_t ttl_usec);

  // Appends the key's reply block (VALUE line and data) to `out`; false
  // when the key is not cached or its entry is older than the TTL. With
  // `cas` (a gets), the block must carry the CAS unique, which a fill by
  // `gets` stores; without, a stored CAS is left out of the VALUE line.
  bool lookup(std::string_view key, uint64_t now_usec, std::string& out, bool cas = false);
  // Before a fill's read is sent.
  uint64_t epoch(std::string_view key);
  // Stores `block` for `key` unless the key's epoch is no longer `epoch`
  // or the block does not fit.
  void fill(std::string_view key, std::string_view block, uint64_t epoch, uint64_t now_usec);
  // A write of `key` (sent, or answered).
  void invalidate(std::string_view key);
  // flush_all (sent, or answered).
  void clear();

  size_t bytes() const;
  size_t entries() const;

 private:
  static constexpr size_t kSlots = 1024;
  struct Entry {
    std::string block;
    uint64_t filled_usec;
    size_t cas_at = 0;    // the space before the CAS in the VALUE line; 0: none
    size_t line_end = 0;  // the VALUE line's "\r\n"
  };
  static size_t slot_of(std::string_view key);
  static size_t cost(std::string_view key, std::string_view block) {
    return key.size() + block.size() + 64;
  }
  void erase(std::unordered_map<std::string, Entry>::iterator it);
  void set_limits(size_t max_bytes, uint64_t ttl_usec);

  mutable std::mutex mu_;
  std::unordered_map<std::string, Entry> entries_;
  size_t bytes_ = 0;
  size_t max_bytes_;
  uint64_t ttl_usec_;
  std::array<uint64_t, kSlots> epochs_{};
  // Per slot, how many entries it holds, readable without the lock: a read
  // of a key whose slot holds none misses at once. A stale reading costs
  // only a lock taken for nothing, or a read sent to the server.
  std::array<std::atomic<uint32_t>, kSlots> present_{};
};

}  // namespace memshard::proxy
