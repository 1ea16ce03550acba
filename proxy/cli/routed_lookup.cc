#include "proxy/cli/routed_lookup.h"

#include <algorithm>
#include <map>
#include <memory>
#include <span>
#include <vector>

#include "proxy/routes/prefix_route.h"
#include "proxy/routes/shadow.h"

namespace memshard::proxy {

ketama::Ring ring_of(const conf::PoolConfig& pool) {
  std::vector<ketama::ServerEntry> entries;
  for (const auto& s : pool.servers) entries.push_back(s.entry);
  // A pool whose servers come from DNS lists none in the file.
  if (entries.empty()) return ketama::Ring::none(pool.ring);
  return ketama::Ring::build(std::move(entries), pool.ring);
}

std::string servers_of(const ketama::Ring& ring, size_t replicas, const std::string& key,
                       bool all) {
  // "-": no server in the file (servers from DNS).
  if (ring.servers().empty()) return "-";
  if (!all) return ring.servers()[ring.lookup(key)].address();
  std::vector<size_t> list(std::max<size_t>(replicas, 1));
  const size_t n = ring.preference_list(key, std::span<size_t>(list));
  std::string out;
  for (size_t i = 0; i < n; ++i) out += (i > 0 ? " " : "") + ring.servers()[list[i]].address();
  return out;
}

std::function<void(const std::string&)> routed_printer(const conf::Config& config,
                                                       const conf::PoolConfig& front, bool all,
                                                       std::ostream& out) {
  std::vector<std::string> prefixes;
  size_t default_route = PrefixTable::npos;
  auto rings = std::make_shared<std::map<std::string, ketama::Ring>>();
  for (const conf::RouteConfig& r : front.routes) {
    if (r.is_default) default_route = prefixes.size();
    prefixes.push_back(r.prefix);
    for (const std::string& p : r.pools) rings->emplace(p, ring_of(*config.find_pool(p)));
    if (!r.shadow.empty()) rings->emplace(r.shadow, ring_of(*config.find_pool(r.shadow)));
    if (!r.warm_from.empty()) rings->emplace(r.warm_from, ring_of(*config.find_pool(r.warm_from)));
  }
  auto table = std::make_shared<PrefixTable>(prefixes, default_route);
  return [&config, &front, all, &out, rings, table](const std::string& key) {
    const size_t r = table->find(key);
    if (r == PrefixTable::npos) {
      out << key << "\t-\tno route\n";
      return;
    }
    const conf::RouteConfig& route = front.routes[r];
    if (route.blackhole) {
      out << key << '\t' << route.name() << "\t-\tblackhole\n";
      return;
    }
    std::string pools, servers;
    for (const std::string& p : route.pools) {
      pools += (pools.empty() ? "" : ",") + p;
      servers += (servers.empty() ? "" : ",") +
                 servers_of(rings->at(p), config.find_pool(p)->replicas, key, all);
    }
    out << key << '\t' << route.name() << '\t' << pools << '\t' << servers;
    // A key the route's shadow takes: where its copies go.
    if (!route.shadow.empty() && shadow_takes(key, route.shadow_share)) {
      out << "\tshadow " << route.shadow << '\t'
          << servers_of(rings->at(route.shadow), config.find_pool(route.shadow)->replicas, key,
                        all);
    }
    // warm_from: where a read that misses looks the key up.
    if (!route.warm_from.empty()) {
      out << "\twarm " << route.warm_from << '\t'
          << servers_of(rings->at(route.warm_from), config.find_pool(route.warm_from)->replicas,
                        key, all);
    }
    out << '\n';
  };
}

}  // namespace memshard::proxy
