#include "proxy/runtime/pool_layout.h"

#include <algorithm>
#include <set>

#include "ketama/hash.h"

namespace memshard::proxy {

namespace {
constexpr double kKeyspace = 4294967296.0;  // 2^32 hash values
}  // namespace

std::vector<double> copy_shares(const ketama::Ring& ring, size_t replicas) {
  const size_t n = ring.servers().size();
  std::vector<double> held(n, 0.0);
  if (replicas <= 1 || ring.options().distribution == ketama::Distribution::random) {
    // random places each copy anywhere: every server holds its share of
    // each copy alike.
    const std::vector<uint64_t> owned = ring.owned_hashes();
    for (size_t i = 0; i < n; ++i) held[i] = static_cast<double>(owned[i]) / kKeyspace;
    return held;
  }
  std::vector<size_t> list(replicas);
  double total = 0;
  auto count = [&](uint32_t hash, double values) {
    const size_t got = ring.preference_list_for_hash(hash, list);
    for (size_t i = 0; i < got; ++i) held[list[i]] += values;
    total += values * static_cast<double>(got);
  };
  if (ring.options().distribution == ketama::Distribution::ketama) {
    // Every value of an arc has the arc's list.
    uint64_t previous_end = 0;
    for (const ketama::Arc& arc : ring.arcs()) {
      count(arc.last, static_cast<double>(uint64_t{arc.last} + 1 - previous_end));
      previous_end = uint64_t{arc.last} + 1;
    }
  } else if (ketama::is_mcrouter_distribution(ring.options().distribution)) {
    // mcrouter's hashes: the hash is the slot, each taking the keys its
    // server is expected to own.
    const std::vector<uint64_t> owned = ring.owned_hashes();
    const std::vector<uint32_t>& slots = ring.slots();
    for (size_t r = 0; r < slots.size(); ++r) {
      count(static_cast<uint32_t>(r), static_cast<double>(owned[slots[r]]));
    }
  } else {
    // modula: the list depends on hash % slots only, and each residue
    // takes (almost exactly) as many values as the others.
    const size_t slots = ring.slots().size();
    for (size_t r = 0; r < slots; ++r) count(static_cast<uint32_t>(r), 1.0);
  }
  if (total > 0) {
    for (double& h : held) h /= total;
  }
  return held;
}

std::vector<PoolLayout> pool_layouts(const Topology& topology, const ServerStateOf& state_of,
                                     uint64_t now_usec) {
  std::vector<PoolLayout> out;
  for (const Pool& pool : topology.pools) {
    const conf::PoolConfig& c = pool.config;
    PoolLayout l;
    l.name = c.name;
    l.listen = c.listen.text;
    l.distribution = std::string(ketama::distribution_name(c.ring.distribution));
    l.hash = std::string(pool.ring.key_hash_name());
    l.replicas = c.replicas;
    if (c.replicas > 1) l.write_policy = std::string(conf::write_policy_name(c.write_policy));
    l.auto_eject_hosts = c.auto_eject_hosts;
    l.tls = pool.client_tls != nullptr;
    l.warmup_windows = pool.past.size();
    for (const PastRing& past : pool.past) {
      if (past.until_usec > now_usec)
        l.warmup_seconds_left =
            std::max(l.warmup_seconds_left, (past.until_usec - now_usec + 999'999) / 1'000'000);
    }
    const std::vector<uint64_t> owned = pool.ring.owned_hashes();
    const std::vector<double> copies = copy_shares(pool.ring, c.replicas);
    std::set<std::string> listed;
    for (size_t i = 0; i < pool.servers.size(); ++i) {
      const ServerInfo& s = pool.servers[i];
      ServerLayout row;
      row.address = s.identity;
      row.name = s.stats_name;
      row.weight = i < pool.ring.servers().size() ? pool.ring.servers()[i].weight : 0;
      row.share = i < owned.size() ? static_cast<double>(owned[i]) / kKeyspace : 0.0;
      row.copies = i < copies.size() ? copies[i] : 0.0;
      row.state = state_of(c.name, s.identity);
      listed.insert(s.identity);
      l.servers.push_back(std::move(row));
    }
    // Servers beyond the config in force, each listed once: with no share
    // of the ring in force.
    auto list_beyond = [&](const std::vector<ServerInfo>& servers, const ketama::Ring& ring,
                           ServerState state) {
      for (size_t i = 0; i < servers.size(); ++i) {
        if (!listed.insert(servers[i].identity).second) continue;
        ServerLayout row;
        row.address = servers[i].identity;
        row.name = servers[i].stats_name;
        row.weight = i < ring.servers().size() ? ring.servers()[i].weight : 0;
        row.state = state;
        l.servers.push_back(std::move(row));
      }
    };
    for (const PastRing& past : pool.past)
      list_beyond(past.servers, past.ring, ServerState::draining);
    // A scheduled switch's waiting placement: its new servers take no share
    // until the switch, but writes already delete keys there (and their
    // connections have counters), so they are shown as arriving, not as
    // leaving.
    if (pool.pending) list_beyond(pool.pending->servers, pool.pending->ring, ServerState::joining);
    out.push_back(std::move(l));
  }
  return out;
}

}  // namespace memshard::proxy
