#include "proxy/admin/stats_fields.h"

#include <algorithm>
#include <ctime>
#include <iterator>

namespace memshard::proxy::stats_fields {

std::vector<std::pair<std::string_view, uint64_t>> migration_fields(const MigrationStatus& m) {
  return {{"migrate_running", static_cast<uint64_t>(m.running)},
          {"migrate_seen", m.seen},
          {"migrate_moved", m.moved},
          {"migrate_skipped", m.skipped},
          {"migrate_failed", m.failed},
          {"migrate_pending", m.pending},
          {"migrate_seconds_left", m.seconds_left}};
}

std::vector<std::pair<std::string_view, uint64_t>> switch_fields(const SwitchStatus& s) {
  const int64_t now_ms = static_cast<int64_t>(time(nullptr)) * 1000;
  const int64_t end_ms = s.at_unix_ms + static_cast<int64_t>(s.window_ms);
  const uint64_t left =
      s.pending && end_ms > now_ms ? static_cast<uint64_t>(end_ms - now_ms + 999) / 1000 : 0;
  return {{"switch_pending", static_cast<uint64_t>(s.pending)},
          {"switch_at", static_cast<uint64_t>(std::max<int64_t>(0, s.at_unix_ms / 1000))},
          {"switch_window_ms", s.window_ms},
          {"switch_generation", s.generation},
          {"switch_seconds_left", left},
          {"switches", s.switches},
          {"switch_late_ms", static_cast<uint64_t>(std::max<int64_t>(0, s.late_ms))}};
}

std::vector<std::pair<std::string_view, uint64_t>> repair_fields(const RepairCounts& r) {
  return {{"repair_keys", r.keys},
          {"repair_recorded", r.recorded},
          {"repairs", r.repairs},
          {"repair_overflow_flushes", r.overflow_flushes},
          {"repair_flushes", r.flushes}};
}

std::vector<std::pair<std::string_view, uint64_t>> discovery_fields(const DiscoveryStatus& d) {
  const auto seconds = [](int64_t ms) {
    return static_cast<uint64_t>(std::max<int64_t>(0, ms / 1000));
  };
  return {{"discovery_servers", d.servers},
          {"discovery_lookups", d.lookups},
          {"discovery_failures", d.failures},
          {"discovery_changes", d.changes},
          {"discovery_held", d.held},
          {"discovery_last_change", seconds(d.last_change_ms)},
          {"discovery_pending", static_cast<uint64_t>(d.pending_since_ms != 0)},
          {"discovery_pending_since", seconds(d.pending_since_ms)},
          {"discovery_failing", static_cast<uint64_t>(d.failing)}};
}

uint64_t counter(const std::vector<uint64_t>& values, size_t i) {
  return i < values.size() ? values[i] : 0;
}

size_t index_of(const std::string_view* names, size_t n, std::string_view name) {
  for (size_t i = 0; i < n; ++i) {
    if (names[i] == name) return i;
  }
  return n;
}

uint64_t server_counter(const StatsSnapshot::Server& s, std::string_view name) {
  return counter(s.counters, index_of(kServerCounterNames, std::size(kServerCounterNames), name));
}

}  // namespace memshard::proxy::stats_fields
