// Figures that more than one of the stats formats prints (stats_render.cc,
// prometheus_render.cc): a migration's, a scheduled switch's, a discovery's
// and a server's repair fields by name, counters looked up by name, the
// workers' totals.
#pragma once

#include <cstdint>
#include <string_view>
#include <utility>
#include <vector>

#include "proxy/admin/stats_view.h"
#include "proxy/support/stats.h"

namespace memshard::proxy::stats_fields {

// A migration's figures as named in `stats` and the JSON stats.
std::vector<std::pair<std::string_view, uint64_t>> migration_fields(const MigrationStatus& m);
// A scheduled switch's figures as named in `stats` and the JSON stats:
// the one that waits (or runs its window), else the last one.
std::vector<std::pair<std::string_view, uint64_t>> switch_fields(const SwitchStatus& s);
// A discovery pool's figures (servers_srv, servers_dns) as named in
// `stats` and the JSON stats; times in unix seconds (0: never).
std::vector<std::pair<std::string_view, uint64_t>> discovery_fields(const DiscoveryStatus& d);
// A server's repair record (docs/failures.md) as named in `stats servers`
// and the JSON stats.
std::vector<std::pair<std::string_view, uint64_t>> repair_fields(const RepairCounts& r);

// values[i], 0 past the end (a counter a snapshot does not carry).
uint64_t counter(const std::vector<uint64_t>& values, size_t i);
// The index of `name` among n names; n when absent.
size_t index_of(const std::string_view* names, size_t n, std::string_view name);
uint64_t server_counter(const StatsSnapshot::Server& s, std::string_view name);

// The workers' counters summed, looked up by name (both renderers print a
// few of them among their own fields).
class WorkerTotals {
 public:
  explicit WorkerTotals(const StatsView& p) : totals_(p.counter_totals()) {}
  uint64_t operator()(std::string_view name) const {
    for (const auto& [n, v] : totals_) {
      if (n == name) return v;
    }
    return 0;
  }

 private:
  std::vector<std::pair<std::string_view, uint64_t>> totals_;
};

}  // namespace memshard::proxy::stats_fields
