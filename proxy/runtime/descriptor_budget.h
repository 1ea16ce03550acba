// How many client connections the descriptor limit leaves room for.
//
// Every client holds a descriptor, and so does every connection to a
// server. Left to chance, clients can take the descriptors that the
// workers need to connect to their servers (after a server restarts, say),
// and then requests fail although the servers are well. So, as nutcracker
// does, the proxy sets aside what its servers can need, what it holds
// itself and a few spare, and refuses clients past the rest with
// memcached's "ERROR Too many open connections".
#pragma once

#include <cstdint>
#include <string>

#include "proxy/routes/topology.h"

namespace memshard::proxy {

struct DescriptorBudget {
  // Room for what comes and goes besides clients and server connections:
  // a reload binding new listeners before it closes old ones, a log
  // reopened, the config file read. nutcracker keeps 32 too.
  static constexpr uint64_t kSpare = 32;

  uint64_t limit = 0;    // RLIMIT_NOFILE (soft)
  uint64_t own = 0;      // held by the proxy itself: listeners, event loops, log ...
  uint64_t servers = 0;  // connections to servers, at most (server_connections_at_most)

  // Zero when the limit leaves no room at all.
  uint64_t clients() const;
  // "limit L: room for N client connections (S for server connections, O in
  // use by memshard itself, 32 spare)"
  std::string describe() const;
};

// Every worker may open server_connections to each server of each pool,
// and the health checker one probe to an ejected server.
uint64_t server_connections_at_most(const Topology& topology, uint64_t workers);

// The process's soft RLIMIT_NOFILE; 0 when it cannot be read.
uint64_t descriptor_limit();
// The descriptors the process has open now (from /proc/self/fd); 0 when
// they cannot be counted.
uint64_t open_descriptors();

}  // namespace memshard::proxy
