// One walker per old server for a whole fleet (reload_migrate_rate): every
// instance that reloaded the same change would walk the same old servers
// and copy the same keys, so before walking a server an instance takes a
// lease kept in that server itself. The lease is a key no client uses,
//   memshard:walk:<md5 of the pool's name, its placements and the server>
// taken with an add (memcached's `ms ... ME`) that only one instance wins,
// held for kTtlSeconds and renewed while walking (a compare-and-swap on its
// CAS, so a walker that lost it hears so), and ended with a "done" value
// that lives until the warm-up window ends, so that instances reloading
// later skip that server. A walker that dies stops renewing: its lease
// lapses and the next instance that asks takes the walk over (from the
// start: a copy is an add, so what was copied already is skipped).
//
// The value says who walks and how far: "<state> <instance> <seen> <moved>",
// state "walking" or "done". Blocking I/O with bounded waits: the walk's
// thread only (migration.h).
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <string_view>

#include "proxy/routes/pool_state.h"
#include "proxy/runtime/blocking_conn.h"

namespace memshard::proxy {

class WalkLease {
 public:
  static constexpr int kTtlSeconds = 6;
  // How often a walker renews: a third of the TTL, so one slow renewal
  // does not cost the lease.
  static constexpr uint64_t kRenewUsec = 2'000'000;
  static constexpr std::string_view kKeyPrefix = "memshard:walk:";

  // Who holds a lease, as its value says.
  struct Holder {
    bool done = false;
    std::string instance;
    uint64_t seen = 0, moved = 0;
  };
  enum class Outcome { taken, held, done, unreachable };

  // The lease of `server`'s walk in `pool` (its past rings and ring make
  // the key: instances that made the same change agree on it).
  WalkLease(const Pool& pool, const ServerInfo& server, std::string instance, int timeout_ms);
  ~WalkLease();
  WalkLease(const WalkLease&) = delete;
  WalkLease& operator=(const WalkLease&) = delete;

  // Takes the lease if nobody holds it (or its holder's lapsed).
  Outcome take();
  // While walking: renews it saying how far the walk got; false when it
  // is no longer ours (it lapsed and another took it).
  bool renew(uint64_t seen, uint64_t moved);
  // The walk is done: the lease says so until `ttl_seconds` pass.
  bool finish(uint64_t seen, uint64_t moved, int64_t ttl_seconds);
  // Gives the lease up (the walk stopped before its end), when still ours.
  void release();

  // What the last take() or renew() read of another holder.
  const Holder& holder() const { return holder_; }
  const std::string& key() const { return key_; }

  // The key for `server`'s walk in `pool`.
  static std::string key_for(const Pool& pool, const ServerInfo& server);

 private:
  BlockingConn& conn();
  // mg: the value and its CAS; false on a miss (cas 0) or a failure.
  bool read(Holder& out, uint64_t& cas, bool& missing);
  bool write(const std::string& value, int64_t ttl_seconds, uint64_t cas);
  std::string value(bool done, uint64_t seen, uint64_t moved) const;

  const ServerInfo server_;
  const std::string key_, instance_;
  const int timeout_ms_;
  std::unique_ptr<BlockingConn> conn_;
  Holder holder_;
  bool ours_ = false;
};

}  // namespace memshard::proxy
