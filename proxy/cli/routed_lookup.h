// What `memshard ring lookup` prints of a key: a pool's ring built from its
// config, a key's server(s) in it, and for a routing pool (routes) each
// key's route, pool(s), server(s) and shadow.
#pragma once

#include <functional>
#include <ostream>
#include <string>

#include "conf/config.h"
#include "ketama/ring.h"

namespace memshard::proxy {

ketama::Ring ring_of(const conf::PoolConfig& pool);

// The servers of `key` in `ring`: its first, or with `all` every copy
// (replicas), space-separated.
std::string servers_of(const ketama::Ring& ring, size_t replicas, const std::string& key, bool all);

// A routing pool's lookup: per key, its route, the pool (or zone copies,
// comma-separated) it goes to, and the server(s) there; then, for a key
// that a shadow takes, "shadow POOL" and its server(s). `config` and
// `front` must outlive the printer.
std::function<void(const std::string&)> routed_printer(const conf::Config& config,
                                                       const conf::PoolConfig& front, bool all,
                                                       std::ostream& out);

}  // namespace memshard::proxy
