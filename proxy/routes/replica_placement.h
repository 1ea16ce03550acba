// Where the copies of a key live in a replicated pool (replicas > 1): the
// first R distinct servers clockwise from the key's point on the ring of
// *every* server of the pool, less those that are ejected. Keeping the
// ejected servers on the ring, rather than rebuilding it from the live
// ones as an unreplicated pool does (twemproxy's rule), is what makes an
// ejection change only the lists that held the ejected server: its keys
// lose a copy until it is back, and no other key's copies move.
#pragma once

#include <cstddef>
#include <span>
#include <string_view>
#include <vector>

#include "ketama/ring.h"
#include "proxy/routes/placement.h"

namespace memshard::proxy {

// The most copies a pool may keep of a key: beyond a handful, a cache
// gains nothing but write traffic.
inline constexpr size_t kMaxReplicas = 8;

class ReplicaPlacement {
 public:
  // `live`: per server, false when ejected (empty: all live). The ring and
  // servers must outlive the placement (see RingPlacement).
  ReplicaPlacement(const ketama::Ring& ring, std::vector<bool> live, size_t replicas,
                   std::vector<Server*> servers);
  // The live copies of `key`, first copy first; returns how many (at most
  // replicas(), fewer when some are ejected).
  size_t copies(std::string_view key, std::span<size_t, kMaxReplicas> out) const;
  // The copies of `key` that are ejected (their servers miss its writes
  // until they are back); returns how many.
  size_t ejected_copies(std::string_view key, std::span<size_t, kMaxReplicas> out) const;
  size_t replicas() const { return replicas_; }
  // The counters of the server holding `key`'s copy `copy`; null when the
  // key has no such live copy (or the server keeps none).
  ServerStats* counters(std::string_view key, size_t copy) const;
  size_t size() const { return servers_.size(); }
  Server& server(size_t index) const { return *servers_[index]; }

 private:
  const ketama::Ring& ring_;
  std::vector<bool> live_;
  size_t replicas_;
  std::vector<Server*> servers_;
};

// One copy of every key, as a Placement: routes built over it (a key
// route, a split route) send to the key's i-th live copy, or find no
// server when the key has fewer live copies.
class CopyPlacement final : public Placement {
 public:
  CopyPlacement(const ReplicaPlacement& replicas, size_t copy) : replicas_(replicas), copy_(copy) {}
  size_t place(std::string_view key) const override;
  size_t size() const override { return replicas_.size(); }
  Server& server(size_t index) const override { return replicas_.server(index); }

 private:
  const ReplicaPlacement& replicas_;
  size_t copy_;
};

}  // namespace memshard::proxy
