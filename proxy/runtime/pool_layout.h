// What the status page shows of the config in force (StatsView's
// pool_layouts): per pool its listener and settings, per server its weight,
// its share of the ring and its state. Pure given the topology and who is
// out, so a test builds one from a config.
#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "proxy/admin/stats_view.h"
#include "proxy/routes/topology.h"

namespace memshard::proxy {

// The state of a server of the config in force (up, ejected or probing).
using ServerStateOf =
    std::function<ServerState(const std::string& pool, const std::string& identity)>;

// `topology`: as the workers have it (ejected servers out of the rings of
// unreplicated pools). Servers that only a reload_warmup window still looks
// keys up on are listed after the pool's own, draining, and those only in a
// config that waits for its reload_switch_at, joining.
std::vector<PoolLayout> pool_layouts(const Topology& topology, const ServerStateOf& state_of,
                                     uint64_t now_usec);

// Per server of the ring (by index), the share of all the copies of every
// key that it holds when each key has `replicas` copies on the first
// distinct servers of its preference list. Equals the keyspace share for
// one copy.
std::vector<double> copy_shares(const ketama::Ring& ring, size_t replicas);

}  // namespace memshard::proxy
