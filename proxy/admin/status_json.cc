#include "proxy/admin/status_json.h"

#include <unistd.h>

#include <ctime>
#include <iterator>
#include <map>
#include <set>
#include <string_view>
#include <utility>
#include <vector>

#include "proxy/admin/hot_keys_render.h"
#include "proxy/admin/json_writer.h"
#include "proxy/support/clock.h"
#include "proxy/support/stats.h"

namespace memshard::proxy {

namespace {

// A counter of a summed list, by name (0 when the list is short: a fake
// view, or a pool no worker has counted for yet).
template <size_t N>
uint64_t named(const std::string_view (&names)[N], const std::vector<uint64_t>& values,
               std::string_view name) {
  for (size_t i = 0; i < N && i < values.size(); ++i) {
    if (names[i] == name) return values[i];
  }
  return 0;
}

uint64_t pool_counter(const StatsSnapshot::PoolTotals* t, std::string_view name) {
  return t == nullptr ? 0 : named(kPoolCounterNames, t->counters, name);
}

uint64_t server_counter(const StatsSnapshot::Server* s, std::string_view name) {
  return s == nullptr ? 0 : named(kServerCounterNames, s->counters, name);
}

uint64_t worker_total(const std::vector<std::pair<std::string_view, uint64_t>>& totals,
                      std::string_view name) {
  for (const auto& [n, v] : totals) {
    if (n == name) return v;
  }
  return 0;
}

std::string host_name() {
  char buf[256] = {};
  gethostname(buf, sizeof(buf) - 1);
  return buf;
}

void write_process(JsonWriter& w, const StatsView& v) {
  const auto totals = v.counter_totals();
  w.key("process");
  w.begin_object();
  w.field("threads", static_cast<uint64_t>(v.thread_count()));
  w.field("active_threads", static_cast<uint64_t>(v.active_threads()));
  w.field("connections", worker_total(totals, "curr_connections"));
  w.field("parked_connections", worker_total(totals, "parked_connections"));
  w.field("total_connections", worker_total(totals, "total_connections"));
  w.field("max_connections", v.max_connections());
  w.field("rejected_connections", v.rejected_connections());
  w.field("client_errors", worker_total(totals, "client_errors"));
  w.field("server_timeouts", worker_total(totals, "server_timeouts"));
  w.field("server_ejections", v.ejections());
  w.field("server_readmissions", v.readmissions());
  w.field("dns_failures", v.dns_failures());
  w.end_object();
}

void write_config(JsonWriter& w, const StatsView& v) {
  w.key("config");
  w.begin_object();
  w.field("generation", v.generation());
  w.field("reloads", v.reloads());
  w.field("reload_failures", v.reload_failures());
  // Switches to another placement scheduled for later (reload_switch_at),
  // per pool: null when none waits or runs its window.
  w.key("pending_switch");
  const std::map<std::string, SwitchStatus> switches = v.switches();
  const int64_t now_ms = static_cast<int64_t>(time(nullptr)) * 1000;
  bool any = false;
  for (const auto& [pool, sw] : switches) {
    if (!sw.pending) continue;
    if (!any) w.begin_object();
    any = true;
    w.key(pool);
    w.begin_object();
    w.field("at", sw.at_unix_ms / 1000);
    w.field("window_ms", sw.window_ms);
    w.field("generation", sw.generation);
    const int64_t end_ms = sw.at_unix_ms + static_cast<int64_t>(sw.window_ms);
    w.field("seconds_left", end_ms > now_ms ? (end_ms - now_ms + 999) / 1000 : int64_t{0});
    w.end_object();
  }
  if (any) {
    w.end_object();
  } else {
    w.null();
  }
  // Pools whose servers come from DNS (servers_srv, servers_dns): the name
  // looked up, when the servers last changed and what waits; null when none.
  w.key("discovery");
  const std::map<std::string, DiscoveryStatus> discoveries = v.discoveries();
  if (discoveries.empty()) {
    w.null();
  } else {
    w.begin_object();
    for (const auto& [pool, d] : discoveries) {
      w.key(pool);
      w.begin_object();
      w.field("source", d.source);
      w.field("servers", d.servers);
      w.field("last_change", d.last_change_ms / 1000);
      w.field("lookups", d.lookups);
      w.field("failures", d.failures);
      w.field("changes", d.changes);
      w.field("held", d.held);
      w.field("failing", static_cast<uint64_t>(d.failing));
      w.field("pending_since", d.pending_since_ms / 1000);
      w.field("pending", d.pending);
      w.end_object();
    }
    w.end_object();
  }
  w.key("history");
  w.begin_array();
  for (const ReloadRecord& r : v.reload_history()) {
    w.begin_object();
    w.field("at", r.at);
    w.field("generation", r.generation);
    w.field("outcome", reload_outcome_name(r.outcome));
    w.field("reason", r.reason);
    w.key("moved");
    w.begin_object();
    for (const auto& [pool, share] : r.moved) w.field(pool, share);
    w.end_object();
    w.end_object();
  }
  w.end_array();
  w.end_object();
}

// The servers of a pool: those of the config in force, in its order, then
// those that still have counters and are not in it (a reload removed them
// and their connections finish what they owe).
void write_servers(JsonWriter& w, const StatsView& v, const PoolLayout& layout,
                   const StatsSnapshot::PoolTotals* totals) {
  std::map<std::string, const StatsSnapshot::Server*> by_address;
  if (totals != nullptr) {
    for (const auto& [name, s] : totals->servers) by_address[s.identity] = &s;
  }
  std::vector<ServerLayout> rows = layout.servers;
  std::set<std::string> listed;
  for (const ServerLayout& s : rows) listed.insert(s.address);
  if (totals != nullptr) {
    for (const auto& [name, s] : totals->servers) {
      if (listed.contains(s.identity)) continue;
      ServerLayout gone;
      gone.address = s.identity;
      gone.name = name;
      gone.state = ServerState::draining;
      rows.push_back(gone);
      listed.insert(s.identity);
    }
  }
  w.key("servers");
  w.begin_array();
  for (const ServerLayout& s : rows) {
    auto it = by_address.find(s.address);
    const StatsSnapshot::Server* c = it == by_address.end() ? nullptr : it->second;
    w.begin_object();
    w.field("address", s.address);
    w.field("name", s.name);
    w.field("state", server_state_name(s.state));
    w.field("weight", static_cast<uint64_t>(s.weight));
    w.field("share", s.share);
    w.field("copies", s.copies);
    w.field("requests", server_counter(c, "requests"));
    w.field("errors", server_counter(c, "server_eof") + server_counter(c, "server_err") +
                          server_counter(c, "server_timedout"));
    w.field("timeouts", server_counter(c, "server_timedout"));
    w.field("requests_shed", server_counter(c, "requests_shed"));
    w.field("error_replies", server_counter(c, "replies_error"));
    w.field("hits", server_counter(c, "replies_hit"));
    w.field("misses", server_counter(c, "replies_miss"));
    w.field("connections", server_counter(c, "server_connections"));
    w.field("in_flight", server_counter(c, "out_queue"));
    w.field("replica_writes", server_counter(c, "replica_writes"));
    w.field("replica_write_failures", server_counter(c, "replica_write_failures"));
    w.field("read_failovers", server_counter(c, "read_failovers"));
    w.field("ejected_at", v.ejected_at(layout.name, s.address));
    const RepairCounts r = v.repair_counts(layout.name, s.address);
    w.field("repair_keys", r.keys);
    w.field("repairs", r.repairs);
    w.field("repair_overflow_flushes", r.overflow_flushes);
    w.field("repair_flushes", r.flushes);
    w.end_object();
  }
  w.end_array();
}

void write_hot_keys(JsonWriter& w, const StatsSnapshot::PoolTotals* totals, bool show) {
  w.key("hot_keys");
  if (!show) {
    w.null();
    return;
  }
  w.begin_array();
  if (totals != nullptr) {
    for (const HotKeyReport& r : shown_hot_keys(*totals)) {
      w.begin_object();
      w.field("key", escaped_hot_key(r.key));
      w.field("share", r.share);
      w.field("error", r.error);
      w.field("server", escaped_hot_key(r.server));
      w.end_object();
    }
  }
  w.end_array();
}

// A routing pool's routes (routes:), each by its name (prefix, or
// "(default)") with its counters; empty for a pool with servers.
void write_routes(JsonWriter& w, const StatsSnapshot::PoolTotals* t) {
  w.key("routes");
  w.begin_array();
  if (t != nullptr) {
    for (const auto& [name, counters] : t->routes) {
      w.begin_object();
      w.field("name", name);
      for (std::string_view c : kRouteCounterNames)
        w.field(c, named(kRouteCounterNames, counters, c));
      w.end_object();
    }
  }
  w.end_array();
}

void write_pool(JsonWriter& w, const StatsView& v, const PoolLayout& layout, bool in_config,
                const StatsSnapshot::PoolTotals* t, const MigrationStatus* migration,
                bool show_hot_keys) {
  w.begin_object();
  w.field("name", layout.name);
  w.field_bool("in_config", in_config);
  w.field("listen", layout.listen);
  w.field_bool("tls", layout.tls);
  w.field("distribution", layout.distribution);
  w.field("hash", layout.hash);
  w.field("replicas", static_cast<uint64_t>(layout.replicas));
  w.field("write_policy", layout.write_policy);
  w.field_bool("auto_eject_hosts", layout.auto_eject_hosts);
  w.field("client_connections", pool_counter(t, "client_connections"));
  w.field("requests", pool_counter(t, "requests"));
  w.field("fragments", pool_counter(t, "fragments"));
  w.field("forward_errors", pool_counter(t, "forward_error"));
  w.field("client_errors", pool_counter(t, "client_err"));
  // Reads answered with a value, by a server or from the hot-key cache,
  // and keys a server did not have: the hit ratio's parts.
  uint64_t hits = pool_counter(t, "hot_key_hits"), misses = 0;
  if (t != nullptr) {
    for (const auto& [name, s] : t->servers) {
      hits += server_counter(&s, "replies_hit");
      misses += server_counter(&s, "replies_miss");
    }
  }
  w.field("hits", hits);
  w.field("misses", misses);
  w.field("hot_key_hits", pool_counter(t, "hot_key_hits"));
  w.field("server_ejections", v.pool_ejections(layout.name));
  w.field("servers_held_by_cap", v.held_by_cap(layout.name));
  w.key("latency");
  w.begin_array();
  for (size_t b = 0; b < kLatencyBuckets; ++b)
    w.number(t != nullptr && b < t->latency.size() ? t->latency[b] : uint64_t{0});
  w.end_array();
  w.field("latency_sum_usec", t != nullptr ? t->latency_sum_usec : uint64_t{0});
  w.key("replication");
  w.begin_object();
  for (std::string_view c :
       {"replica_writes", "replica_write_failures", "read_failovers", "read_repairs"}) {
    w.field(c, pool_counter(t, c));
  }
  w.end_object();
  w.key("warmup");
  w.begin_object();
  w.field("windows", layout.warmup_windows);
  w.field("seconds_left", layout.warmup_seconds_left);
  for (std::string_view c : {"warmup_lookups", "warmup_hits", "warmup_copies"}) {
    w.field(c.substr(7), pool_counter(t, c));
  }
  w.end_object();
  w.key("migration");
  if (migration == nullptr) {
    w.null();
  } else {
    w.begin_object();
    w.field_bool("running", migration->running);
    w.field("seen", migration->seen);
    w.field("moved", migration->moved);
    w.field("skipped", migration->skipped);
    w.field("failed", migration->failed);
    w.field("pending", migration->pending);
    w.field("seconds_left", migration->seconds_left);
    w.end_object();
  }
  write_routes(w, t);
  write_hot_keys(w, t, show_hot_keys);
  write_servers(w, v, layout, t);
  w.end_object();
}

}  // namespace

void render_status_json(const StatsView& v, bool show_hot_keys, std::string& out) {
  const StatsSnapshot snap = v.snapshot();
  const std::map<std::string, MigrationStatus> migrations = v.migrations();
  JsonWriter w(out);
  w.begin_object();
  w.field("service", std::string_view("memshard"));
  w.field("version", std::string_view(MEMSHARD_VERSION));
  w.field("source", host_name());
  w.field("time", static_cast<int64_t>(time(nullptr)));
  w.field("clock_ms", monotonic_ms());
  w.field("uptime", v.uptime_seconds());
  write_process(w, v);
  write_config(w, v);
  w.key("latency_bounds_usec");
  w.begin_array();
  for (uint64_t bound : kLatencyBucketsUsec) w.number(bound);
  w.end_array();
  w.field_bool("hot_keys_hidden", !show_hot_keys);

  w.key("pools");
  w.begin_array();
  std::set<std::string> shown;
  auto totals_of = [&](const std::string& pool) -> const StatsSnapshot::PoolTotals* {
    auto it = snap.pools.find(pool);
    return it == snap.pools.end() ? nullptr : &it->second;
  };
  auto migration_of = [&](const std::string& pool) -> const MigrationStatus* {
    auto it = migrations.find(pool);
    return it == migrations.end() ? nullptr : &it->second;
  };
  for (const PoolLayout& layout : v.pool_layouts()) {
    shown.insert(layout.name);
    write_pool(w, v, layout, true, totals_of(layout.name), migration_of(layout.name),
               show_hot_keys);
  }
  // Pools a reload removed whose clients are still finishing.
  for (const auto& [name, t] : snap.pools) {
    if (shown.contains(name)) continue;
    PoolLayout gone;
    gone.name = name;
    write_pool(w, v, gone, false, &t, migration_of(name), show_hot_keys);
  }
  w.end_array();

  w.key("tls_certificates");
  w.begin_array();
  const int64_t now = static_cast<int64_t>(time(nullptr));
  for (const StatsView::TlsCertificate& c : v.tls_certificates()) {
    w.begin_object();
    w.field("pool", c.pool);
    w.field("side", c.side);
    w.field("not_after", c.not_after);
    w.field("seconds_left", c.not_after - now);
    w.end_object();
  }
  w.end_array();
  w.end_object();
  out.push_back('\n');
}

}  // namespace memshard::proxy
