#include "proxy/runtime/ring_warnings.h"

#include <bit>
#include <optional>

#include "ketama/reach.h"
#include "ketama/ring.h"

namespace memshard::proxy {
namespace {

// A hash whose range is narrower than the ring's points leaves servers
// that no key can reach. Compared with the full 32-bit range rather than
// with every live server, so that a server the weights already leave
// without points is not blamed on the hash.
std::optional<std::string> hash_range_warning(const conf::Config& config,
                                              const conf::PoolConfig& pool) {
  if (pool.servers.empty()) return std::nullopt;  // a routing pool: no ring
  std::vector<ketama::ServerEntry> entries;
  for (const auto& s : pool.servers) entries.push_back(s.entry);
  ketama::Ring ring = ketama::Ring::build(std::move(entries), pool.ring);
  const ketama::HashFunction f = ring.key_hash_function();
  const uint32_t max = ketama::hash_max(f);
  const size_t reached = ketama::reach(ring, max).servers;
  const size_t reachable = ketama::reach(ring, UINT32_MAX).servers;
  if (reached >= reachable) return std::nullopt;

  const bool on_points = pool.ring.distribution == ketama::Distribution::ketama;
  std::string out = config.file;
  if (pool.hash_line > 0) out += ":" + std::to_string(pool.hash_line);
  out += ": warning: hash: pool '" + pool.name + "': " + std::string(ketama::hash_name(f)) +
         " gives only values 0.." + std::to_string(max) + " (" +
         std::to_string(std::bit_width(max)) + " bits), so with distribution " +
         std::string(ketama::distribution_name(pool.ring.distribution)) + " keys can reach only " +
         std::to_string(reached) + " of " + std::to_string(reachable) +
         " servers (the owners of the " + (on_points ? "ring's points" : "slots") + " below " +
         std::to_string(uint64_t{max} + 1) +
         "); `memshard ring load` compares hashes on sample keys";
  return out;
}

}  // namespace

std::vector<std::string> ring_warnings(const conf::Config& config) {
  std::vector<std::string> out;
  for (const conf::PoolConfig& pool : config.pools) {
    if (auto w = hash_range_warning(config, pool)) out.push_back(std::move(*w));
  }
  return out;
}

}  // namespace memshard::proxy
