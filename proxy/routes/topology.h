// The routing view of one loaded config: per pool its ring, its settings and
// its servers' socket addresses. Immutable once built; each worker holds it
// through a shared_ptr, so a reload builds a new one off the request path
// and workers switch between two requests.
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "conf/config.h"
#include "proxy/routes/pool_state.h"

namespace memshard::proxy {

struct Topology {
  uint64_t generation = 0;
  std::vector<Pool> pools;

  const Pool* find_pool(const std::string& name) const;
};

// Resolves every address (getaddrinfo: blocking, so never call it on a
// worker). Throws std::runtime_error naming the address that failed.
// Loads the pool's TLS contexts; throws std::runtime_error naming the file,
// line and directive of what does not load.
void load_pool_tls(const std::string& file, Pool& pool);

// `previous`: the topology in force, whose pools hand their rings on to
// the pools of the same name (carry_past, or a scheduled switch:
// pool_carry.h) at `now_usec`; `unix_usec` is the wall clock then (read
// when not given), which reload_switch_at is read against. What the build
// decided about scheduled switches is added to `notes`, for the log.
// `known`: addresses already looked up (DNS discovery, by the server's
// "host:port"), used instead of resolving those servers again.
std::shared_ptr<const Topology> build_topology(const conf::Config& config, uint64_t generation,
                                               const Topology* previous = nullptr,
                                               uint64_t now_usec = 0,
                                               std::optional<int64_t> unix_usec = {},
                                               std::vector<std::string>* notes = nullptr,
                                               const std::map<std::string, AddressList>* known =
                                                   nullptr);
// The earliest end of a warm-up window or of a scheduled switch's window
// in `t`, 0 when none is open.
uint64_t next_window_end(const Topology& t);

}  // namespace memshard::proxy
