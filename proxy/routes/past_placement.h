// Where a key was before the reloads still inside their warm-up window
// (reload_warmup): for each past config, newest first, the servers that
// held the key then and do not hold it now. Reads that miss on the key's
// current servers ask these; writes delete the key on them, so that no
// later fallback finds a value older than the write.
//
// While a scheduled switch waits (reload_switch_at), the routes of the
// placement in force see the waiting placement as the newest ring, marked
// `future`: its servers are asked after a miss (an instance whose clock is
// ahead may have switched and written there) and a write deletes the key
// on them (so that no older copy waits there for the switch), but a value
// found there is not copied back.
#pragma once

#include <array>
#include <cstddef>
#include <span>
#include <string_view>
#include <vector>

#include "proxy/routes/placement.h"
#include "proxy/routes/replica_placement.h"
#include "proxy/routes/topology.h"

namespace memshard::proxy {

// A read of a moved key asks at most this many old servers.
inline constexpr size_t kMaxPastOwners = kMaxPastRings * kMaxReplicas;

class PastPlacement {
 public:
  // `servers[p][i]`: the worker's server for past[p]'s server i. The
  // key's current servers come from `current` (an unreplicated pool) or
  // `replicas` (replicated); everything must outlive this.
  PastPlacement(const std::vector<PastRing>& past, std::vector<std::vector<Server*>> servers,
                const Placement* current, const ReplicaPlacement* replicas);

  // The key's current servers (its copies), first copy first.
  size_t current(std::string_view key, std::span<Server*, kMaxReplicas> out) const;
  // What the owners() of a key are: the first `future` are servers of a
  // placement that waits for its switch (no copy of what they hold);
  // `switching` when any is of a scheduled switch, future or replaced.
  struct Kinds {
    size_t future = 0;
    bool switching = false;
  };
  // Its old servers, newest config first, none twice and none of the
  // current ones; only configs whose window is still open at `now_usec`,
  // and only live servers (an ejected one is never waited on).
  size_t owners(std::string_view key, uint64_t now_usec, std::span<Server*, kMaxPastOwners> out,
                Kinds* kinds = nullptr) const;
  // Whether any window is still open: when not, nothing moved.
  bool open(uint64_t now_usec) const;

 private:
  const std::vector<PastRing>& past_;
  std::vector<std::vector<Server*>> servers_;
  const Placement* current_;
  const ReplicaPlacement* replicas_;
};

}  // namespace memshard::proxy
