#include "proxy/runtime/descriptor_budget.h"

#include <sys/resource.h>

#include <filesystem>
#include <set>
#include <string>
#include <system_error>

namespace memshard::proxy {

uint64_t DescriptorBudget::clients() const {
  uint64_t taken = own + servers + kSpare;
  return limit > taken ? limit - taken : 0;
}

std::string DescriptorBudget::describe() const {
  return "limit " + std::to_string(limit) + ": room for " + std::to_string(clients()) +
         " client connections (" + std::to_string(servers) + " for server connections, " +
         std::to_string(own) + " in use by memshard itself, " + std::to_string(kSpare) + " spare)";
}

uint64_t server_connections_at_most(const Topology& topology, uint64_t workers) {
  uint64_t total = 0;
  for (const Pool& pool : topology.pools) {
    // reload_warmup keeps the servers of past configs connected too: those
    // the current config no longer lists count as well.
    std::set<std::string> servers;
    for (const ServerInfo& s : pool.servers) servers.insert(s.identity);
    for (const PastRing& past : pool.past) {
      for (const ServerInfo& s : past.servers) servers.insert(s.identity);
    }
    // And a scheduled switch's servers, before its moment.
    if (pool.pending) {
      for (const ServerInfo& s : pool.pending->servers) servers.insert(s.identity);
    }
    total += servers.size() * (workers * pool.config.server_connections + 1);
  }
  return total;
}

uint64_t descriptor_limit() {
  rlimit rl{};
  if (getrlimit(RLIMIT_NOFILE, &rl) != 0) return 0;
  return rl.rlim_cur == RLIM_INFINITY ? UINT64_MAX : static_cast<uint64_t>(rl.rlim_cur);
}

uint64_t open_descriptors() {
  std::error_code ec;
  uint64_t n = 0;
  for (std::filesystem::directory_iterator it("/proc/self/fd", ec), end; !ec && it != end;
       it.increment(ec)) {
    ++n;
  }
  // The directory being read held a descriptor of its own.
  return ec ? 0 : n - (n > 0 ? 1 : 0);
}

}  // namespace memshard::proxy
