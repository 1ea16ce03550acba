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

 protected:
  ~Placement() = default;
};

class RingPlacement final : public Placement {
 public:
  // Both must outlive the placement (the topology and the worker's
  // backends, which a worker keeps while its routes point at them).
  RingPlacement(const ketama::Ring& ring, std::vector<Server*> servers)
      : ring_(ring), servers_(std::move(servers)) {}
  size_t place(std::string_view key) const override { return ring_.lookup(key); }
  size_t size() const override { return servers_.size(); }
  Server& server(size_t index) const override { return *servers_[index]; }

 private:
  const ketama::Ring& ring_;
  std::vector<Server*> servers_;
};

}  // namespace memshard::proxy
