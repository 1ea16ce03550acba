// The background half of reload warm-up (reload_migrate_rate): after a
// reload that moved keys, the servers of the past configs are asked which
// keys they hold (memcached 1.6's `lru_crawler metadump all`), and each key
// they held in that config and that now belongs elsewhere is copied to its
// current servers (`mg ... v f t` there, `ms ... ME` here: add, with its
// remaining TTL, so a value written since always wins), at most `rate`
// keys a second, so that the move does not swamp the fleet.
//
// It runs on a thread of its own with blocking sockets (each wait bounded
// by the pool's timeout, 1 s at most): no worker and not the main loop
// ever waits on it. It stops when its window ends, when another reload
// starts one anew, or at shutdown. The reads' guard (warm_guard.h) is
// honoured as the workers' copies honour it: no copy while a write of the
// key is in flight, and a copy that a write overtook is deleted again.
#pragma once

#include <atomic>
#include <cstdint>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "proxy/admin/stats_view.h"
#include "proxy/routes/topology.h"

namespace memshard::proxy {

class Migration {
 public:
  using Progress = MigrationStatus;

  // `pool` (copied: its ring, servers, past rings and guard) must have
  // past rings and a rate.
  explicit Migration(const Pool& pool);
  ~Migration();  // stops and joins
  Migration(const Migration&) = delete;
  Migration& operator=(const Migration&) = delete;

  const std::string& pool_name() const { return pool_.config.name; }
  Progress progress() const;
  // Asks the thread to end; join happens in the destructor.
  void stop() { stop_.store(true); }

  // The most moved keys one walk keeps listed: beyond, they are skipped
  // (and the reads' fallback still finds them).
  static constexpr size_t kMaxListed = 4'000'000;

 private:
  struct Listed {
    std::string key;
    size_t server;  // index into old_servers_
    uint8_t tries = 0;
    uint64_t not_before_usec = 0;  // a try again waits for the write to end
  };
  // A copy that a write of the key (or of one sharing its guard slot) got
  // in the way of is tried again at the end of the walk, a server timeout
  // later (the write has been answered or has timed out by then), up to
  // kMaxTries times: a key dropped for it would stay cold after the
  // window ends.
  enum class Copied { done, again };
  static constexpr uint8_t kMaxTries = 4;
  static uint64_t next_end(const Pool& pool);
  void run();
  void list_keys();
  Copied copy(const Listed& item);
  // Waits for the rate's next token; false when it is time to stop.
  bool pace();
  // Sleeps until `usec` (monotonic); false when it is time to stop.
  bool wait_until(uint64_t usec);
  bool stopping() const;

  Pool pool_;
  uint64_t until_usec_;
  std::vector<ServerInfo> old_servers_;  // every past ring's, once each
  std::vector<Listed> listed_;
  double tokens_ = 0;
  uint64_t refilled_usec_ = 0;
  std::atomic<bool> stop_{false};
  std::atomic<uint64_t> seen_{0}, moved_{0}, skipped_{0}, failed_{0}, pending_{0};
  std::atomic<bool> running_{true};
  std::thread thread_;
};

}  // namespace memshard::proxy
