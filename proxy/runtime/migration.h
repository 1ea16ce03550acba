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
//
// A fleet of instances that made the same change walks each old server
// once: the walk of a server is taken under a lease kept in that server
// (walk_lease.h). An instance walks the servers whose lease it wins, one
// after the other, starting at a server its name picks (so that instances
// reloading together start on different servers), and then waits for the
// servers others walk until their leases say done, or lapse (it then takes
// the walk over).
#pragma once

#include <atomic>
#include <cstdint>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "proxy/admin/stats_view.h"
#include "proxy/routes/topology.h"
#include "proxy/runtime/walk_lease.h"

namespace memshard::proxy {

class Migration {
 public:
  using Progress = MigrationStatus;

  // `pool` (copied: its ring, servers, past rings and guard) must have
  // past rings and a rate. `instance` names this instance in the leases.
  explicit Migration(const Pool& pool, std::string instance = local_instance());
  ~Migration();  // stops and joins
  Migration(const Migration&) = delete;
  Migration& operator=(const Migration&) = delete;

  const std::string& pool_name() const { return pool_.config.name; }
  Progress progress() const;
  // Asks the thread to end; join happens in the destructor.
  void stop() { stop_.store(true); }

  // The most moved keys one server's walk keeps listed: beyond, they are
  // skipped (and the reads' fallback still finds them).
  static constexpr size_t kMaxListed = 4'000'000;
  // How often the servers other instances walk are asked how far they got.
  static constexpr uint64_t kPollUsec = 1'000'000;

  // "<hostname>:<pid>": how a walker is named in leases and stats.
  static std::string local_instance();

 private:
  struct Listed {
    std::string key;
    uint8_t tries = 0;
    uint64_t not_before_usec = 0;  // a try again waits for the write to end
  };
  // One old server's walk.
  struct Walk {
    ServerInfo server;
    std::unique_ptr<WalkLease> lease;
    bool finished = false;  // walked (here or elsewhere), or not walkable
    uint64_t seen = 0, moved = 0;
    uint64_t renewed_usec = 0;
    MigrationWalk shown;  // guarded by shown_mu_
  };
  enum class Ended { done, lost, stopped };
  // A copy that a write of the key (or of one sharing its guard slot) got
  // in the way of is tried again at the end of the walk, a server timeout
  // later (the write has been answered or has timed out by then), up to
  // kMaxTries times: a key dropped for it would stay cold after the
  // window ends.
  enum class Copied { done, again };
  static constexpr uint8_t kMaxTries = 4;
  static uint64_t next_end(const Pool& pool);
  void run();
  // Takes, walks or asks after each server not finished yet; true when
  // some are walked elsewhere and not done.
  bool round(size_t first);
  Ended walk(Walk& w);
  bool list_keys(Walk& w);
  // Renews w's lease when due; false when it is lost.
  bool keep_lease(Walk& w);
  void show(Walk& w, const std::string& walker, const char* state, uint64_t seen, uint64_t moved);
  Copied copy(Walk& w, const Listed& item);
  // Waits for the rate's next token; false when it is time to stop.
  bool pace();
  // Sleeps until `usec` (monotonic); false when it is time to stop.
  bool wait_until(uint64_t usec);
  bool stopping() const;

  Pool pool_;
  const std::string instance_;
  uint64_t until_usec_;
  std::vector<Walk> walks_;     // every past ring's servers, once each
  std::vector<Listed> listed_;  // the walked server's moved keys
  mutable std::mutex shown_mu_;
  double tokens_ = 0;
  uint64_t refilled_usec_ = 0;
  std::atomic<bool> stop_{false};
  std::atomic<uint64_t> seen_{0}, moved_{0}, skipped_{0}, failed_{0}, pending_{0};
  std::atomic<bool> running_{true};
  std::thread thread_;
};

}  // namespace memshard::proxy
