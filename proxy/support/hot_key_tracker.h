// Hot-key detection for one pool on one worker: a sampled Space-Saving
// summary of the keys the worker forwards (hot_key_sketch.h), aged so that
// it follows recent traffic, read by other threads for stats, and the
// worker's own list of the keys it now counts as hot (for the hot-key
// cache). Only the sampled requests take the summary's lock, so the
// per-request cost is one random number.
#pragma once

#include <cstdint>
#include <mutex>
#include <string>
#include <string_view>
#include <vector>

#include "proxy/support/hot_key_sketch.h"

namespace memshard::proxy {

class HotKeyTracker {
 public:
  // One request in kSampleEvery is counted.
  static constexpr uint32_t kSampleEvery = 8;
  static constexpr size_t kCapacity = 128;
  // The hot list is remade (and hot keys logged) this often; counts halve
  // every kHalveEvery such ticks.
  static constexpr uint64_t kTickUsec = 1'000'000;
  static constexpr uint32_t kHalveEvery = 4;
  // Fewer samples than this say nothing about shares.
  static constexpr uint64_t kMinSamples = 64;

  HotKeyTracker() : sketch_(kCapacity) {}

  // Worker thread. `share`: a key is hot once its share of the pool's
  // requests is at least this (hot_key_log_share); `pool` names it in logs.
  void configure(std::string_view pool, double share);
  // Worker thread, per key forwarded: whether to count this one.
  bool sample() {
    rng_ ^= rng_ << 13;
    rng_ ^= rng_ >> 7;
    rng_ ^= rng_ << 17;
    return (rng_ & (kSampleEvery - 1)) == 0;
  }
  // Worker thread: counts a sampled key; `server_of(key)` names where it
  // goes, asked only when the key is new to the summary.
  template <typename ServerOf>
  void record(std::string_view key, uint64_t now_usec, ServerOf&& server_of) {
    {
      std::lock_guard<std::mutex> lock(mu_);
      HotKeyCounter& c = sketch_.add(key);
      if (c.server.empty()) c.server.assign(server_of(key));
    }
    tick_if_due(now_usec);
  }
  void record(std::string_view key, std::string_view server, uint64_t now_usec) {
    record(key, now_usec, [server](std::string_view) { return server; });
  }
  // Worker thread, also once a second from its housekeeping: so that the
  // summary ages while the pool sees no traffic too.
  void tick_if_due(uint64_t now_usec) {
    if (now_usec >= next_tick_usec_) tick(now_usec);
  }
  // Worker thread: the key is in this worker's hot list.
  bool is_hot(std::string_view key) const;
  bool any_hot() const { return !hot_.empty(); }

  // Any thread.
  HotKeySummary summary() const;
  double threshold() const;

 private:
  void tick(uint64_t now_usec);

  uint64_t rng_ = 0x9e3779b97f4a7c15ull;
  mutable std::mutex mu_;  // sketch_, share_, pool_
  HotKeySketch sketch_;
  double share_ = 0.01;
  std::string pool_;
  uint64_t next_tick_usec_ = 0;
  uint32_t ticks_ = 0;
  std::vector<std::string> hot_;  // worker thread only
};

}  // namespace memshard::proxy
