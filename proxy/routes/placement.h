// Which server holds a key: the pool's ring, over the worker's servers.
// Split routes group keys by it; key routes send to it.
#pragma once

#include <cstddef>
#include <string_view>
#include <vector>

#include "ketama/ring.h"
#include "proxy/backends/outbox.h"

namespace memshard::proxy {

class Placement {
 public:
  static constexpr size_t npos = ketama::Ring::npos;
  // The server index of `key`, npos when no server is live.
  virtual size_t place(std::string_view key) const = 0;
  virtual size_t size() const = 0;
  virtual Server& server(size_t index) const = 0;
  // Whether place() may give a key another server than its home (the one
  // it has with every server of the pool in): servers are ejected.
  virtual bool moves_keys() const { return false; }
  // The key's home server, npos when place() always gives it.
  virtual size_t home(std::string_view) const { return npos; }

 protected:
  ~Placement() = default;
};

class RingPlacement final : public Placement {
 public:
  // Both must outlive the placement (the topology and the worker's
  // backends, which a worker keeps while its routes point at them).
  // `home_ring`: the ring of every server, when `ring` leaves ejected
  // ones out (null otherwise); it must outlive the placement too.
  RingPlacement(const ketama::Ring& ring, std::vector<Server*> servers,
                const ketama::Ring* home_ring = nullptr)
      : ring_(ring), home_ring_(home_ring), servers_(std::move(servers)) {}
  size_t place(std::string_view key) const override { return ring_.lookup(key); }
  size_t size() const override { return servers_.size(); }
  Server& server(size_t index) const override { return *servers_[index]; }
  bool moves_keys() const override { return home_ring_ != nullptr; }
  size_t home(std::string_view key) const override {
    return home_ring_ != nullptr ? home_ring_->lookup(key) : npos;
  }

 private:
  const ketama::Ring& ring_;
  const ketama::Ring* home_ring_;
  std::vector<Server*> servers_;
};

}  // namespace memshard::proxy
