#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <ctime>
#include <string_view>
#include <utility>
#include <vector>

#include "proxy/admin/hot_keys_render.h"
#include "proxy/admin/stats_fields.h"
#include "proxy/admin/stats_render.h"  // render_prometheus
#include "proxy/admin/stats_view.h"
#include "proxy/protocol/replies.h"
#include "proxy/support/stats.h"

namespace memshard::proxy {

using namespace stats_fields;

namespace {

// Prometheus label values escape backslash, quote and newline.
std::string label(std::string_view s) {
  std::string out;
  for (char c : s) {
    if (c == '\\' || c == '"') {
      out.push_back('\\');
      out.push_back(c);
    } else if (c == '\n') {
      out.append("\\n");
    } else {
      out.push_back(c);
    }
  }
  return out;
}

struct Family {
  std::string& out;
  void header(std::string_view name, std::string_view type, std::string_view help) {
    out.append("# HELP ").append(name).append(" ").append(help).append("\n");
    out.append("# TYPE ").append(name).append(" ").append(type).append("\n");
  }
  void sample(std::string_view name, std::string_view labels, uint64_t value) {
    out.append(name);
    if (!labels.empty()) out.append("{").append(labels).append("}");
    out.append(" ").append(std::to_string(value)).append("\n");
  }
  void sample(std::string_view name, std::string_view labels, double value) {
    char buf[64];
    snprintf(buf, sizeof(buf), "%.6f", value);
    out.append(name);
    if (!labels.empty()) out.append("{").append(labels).append("}");
    out.append(" ").append(buf).append("\n");
  }
};

std::string pool_label(const std::string& pool) {
  return "pool=\"" + label(pool) + "\"";
}

std::string server_labels(const std::string& pool, const std::string& name,
                          const StatsSnapshot::Server& s) {
  return pool_label(pool) + ",server=\"" + label(name) + "\",address=\"" + label(s.identity) + "\"";
}

}  // namespace

void render_prometheus(const StatsView& p, std::string& out) {
  StatsSnapshot snap = p.snapshot();
  Family f{out};
  WorkerTotals total(p);
  f.header("memshard_uptime_seconds", "gauge", "Seconds since memshard started.");
  f.sample("memshard_uptime_seconds", "", p.uptime_seconds());
  f.header("memshard_config_generation", "gauge", "Generation of the configuration in force.");
  f.sample("memshard_config_generation", "", p.generation());
  f.header("memshard_config_reloads_total", "counter", "Configuration reloads that took effect.");
  f.sample("memshard_config_reloads_total", "", p.reloads());
  f.header("memshard_config_reload_failures_total", "counter",
           "Reloads refused because the configuration did not load, resolve or bind.");
  f.sample("memshard_config_reload_failures_total", "", p.reload_failures());
  f.header("memshard_dns_address_changes_total", "counter",
           "Lookups of a server's name that found other addresses than before.");
  f.sample("memshard_dns_address_changes_total", "", p.dns_address_changes());
  f.header("memshard_dns_failures_total", "counter",
           "Lookups of a server's name that failed; the server keeps its last addresses.");
  f.sample("memshard_dns_failures_total", "", p.dns_failures());
  f.header("memshard_connections_total", "counter", "Client connections accepted.");
  f.sample("memshard_connections_total", "", total("total_connections"));
  f.header("memshard_connections", "gauge", "Client connections open.");
  f.sample("memshard_connections", "", total("curr_connections"));
  f.header("memshard_parked_connections", "gauge",
           "Of the client connections open, idle ones held as a bare socket.");
  f.sample("memshard_parked_connections", "", total("parked_connections"));
  f.header("memshard_protocol_connections", "gauge",
           "Client connections open, by the protocol they speak (binary: their first byte was "
           "0x80).");
  const uint64_t binary_connections = total("binary_connections");
  f.sample("memshard_protocol_connections", "protocol=\"text\"",
           total("curr_connections") - binary_connections);
  f.sample("memshard_protocol_connections", "protocol=\"binary\"", binary_connections);
  f.header("memshard_commands_total", "counter",
           "Requests forwarded, by kind: get (keys of get-family and mg requests), set (storage "
           "commands), other. Binary-protocol requests count as the text ones they become.");
  f.sample("memshard_commands_total", "command=\"get\"", total("cmd_get"));
  f.sample("memshard_commands_total", "command=\"set\"", total("cmd_set"));
  f.sample("memshard_commands_total", "command=\"other\"", total("cmd_other"));
  f.header("memshard_binary_requests_total", "counter", "Binary-protocol request frames received.");
  f.sample("memshard_binary_requests_total", "", total("binary_requests"));
  f.header("memshard_active_workers", "gauge",
           "Worker threads taking connections now, of memshard_worker_connections' workers "
           "(--threads): as few as keep up with the load.");
  f.sample("memshard_active_workers", "", static_cast<uint64_t>(p.active_threads()));
  f.header("memshard_worker_connections", "gauge",
           "Client connections open, per worker thread (parked ones included).");
  std::vector<uint64_t> per_worker = p.worker_connections();
  for (size_t i = 0; i < per_worker.size(); ++i)
    f.sample("memshard_worker_connections", "worker=\"" + std::to_string(i) + "\"", per_worker[i]);
  f.header("memshard_max_connections", "gauge",
           "Client connections the descriptor limit leaves room for.");
  f.sample("memshard_max_connections", "", p.max_connections());
  f.header("memshard_rejected_connections_total", "counter",
           "Client connections refused: past a pool's client_connections, the room the "
           "descriptor limit leaves, or with no descriptor left.");
  f.sample("memshard_rejected_connections_total", "", p.rejected_connections());
  f.header("memshard_client_errors_total", "counter",
           "Requests answered with an error by the proxy itself.");
  f.sample("memshard_client_errors_total", "", total("client_errors"));

  // Per pool.
  struct PoolMetric {
    std::string_view counter, name, type, help;
  };
  static constexpr PoolMetric kPool[] = {
      {"client_connections", "memshard_pool_client_connections", "gauge",
       "Client connections open, per pool."},
      {"client_eof", "memshard_pool_client_eof_total", "counter", "Clients that closed."},
      {"client_err", "memshard_pool_client_errors_total", "counter",
       "Client connections closed on an error."},
      {"client_foreign", "memshard_pool_client_foreign_total", "counter",
       "Client connections closed for speaking another protocol: an HTTP request line, or a "
       "TLS handshake to a listener without TLS."},
      {"requests", "memshard_pool_requests_total", "counter", "Client requests answered."},
      {"fragments", "memshard_pool_fragments_total", "counter", "Backend operations sent."},
      {"forward_error", "memshard_pool_forward_errors_total", "counter",
       "Backend operations failed (unreachable, timeout, invalid reply)."},
      {"replica_writes", "memshard_pool_replica_writes_total", "counter",
       "Replicated pools: writes sent to the copies after a key's first."},
      {"replica_write_failures", "memshard_pool_replica_write_failures_total", "counter",
       "Replicated pools: writes to the copies after the first that failed."},
      {"read_failovers", "memshard_pool_read_failovers_total", "counter",
       "Replicated pools: reads tried again on a key's next copy (an error, or a miss with "
       "read_failover_on_miss)."},
      {"read_repairs", "memshard_pool_read_repairs_total", "counter",
       "Replicated pools: values written back to a copy that missed them (read_repair)."},
      {"warmup_lookups", "memshard_pool_warmup_lookups_total", "counter",
       "reload_warmup: misses of moved keys looked for on the server that held them before."},
      {"warmup_hits", "memshard_pool_warmup_hits_total", "counter",
       "reload_warmup: of those, found there and answered."},
      {"warmup_copies", "memshard_pool_warmup_copies_total", "counter",
       "reload_warmup: values a read found on an old server and copied to the new one."},
      {"warmup_invalidations", "memshard_pool_warmup_invalidations_total", "counter",
       "reload_warmup: old copies deleted by a write of a moved key."},
      {"switch_fallback_reads", "memshard_pool_switch_fallback_reads_total", "counter",
       "reload_switch_at: reads of moved keys that missed and were looked up on the key's other "
       "servers: before its switch where it will be, after it where it was."},
      {"switch_future_deletes", "memshard_pool_switch_future_deletes_total", "counter",
       "reload_switch_at: deletes a write of a moved key sent to its future server before the "
       "key's switch."},
      {"hot_key_hits", "memshard_pool_hot_key_hits_total", "counter",
       "Reads answered from the hot-key cache (hot_key_cache)."},
      {"gutter_requests", "memshard_pool_gutter_requests_total", "counter",
       "gutter: requests of a down server's keys sent to the gutter pool."},
      {"gutter_sets", "memshard_pool_gutter_sets_total", "counter",
       "gutter: of those, writes (kept there gutter_ttl seconds at most)."},
      {"tls_handshakes", "memshard_pool_tls_handshakes_total", "counter",
       "TLS client handshakes completed."},
      {"tls_resumed", "memshard_pool_tls_resumed_total", "counter",
       "TLS client handshakes that resumed an earlier session."},
  };
  for (const PoolMetric& m : kPool) {
    f.header(m.name, m.type, m.help);
    size_t i = index_of(kPoolCounterNames, std::size(kPoolCounterNames), m.counter);
    for (const auto& [pool, t] : snap.pools)
      f.sample(m.name, pool_label(pool), counter(t.counters, i));
  }
  const std::map<std::string, MigrationStatus> migrations = p.migrations();
  f.header("memshard_pool_migrate_keys", "gauge",
           "reload_migrate_rate: keys of the last background migration, by state "
           "(seen, moved, skipped, failed, pending).");
  for (const auto& [pool, m] : migrations) {
    for (const auto& [name, value] : migration_fields(m)) {
      if (name == "migrate_running" || name == "migrate_seconds_left") continue;
      f.sample("memshard_pool_migrate_keys",
               pool_label(pool) + ",state=\"" + std::string(name.substr(8)) + "\"", value);
    }
  }
  f.header("memshard_pool_migrate_walk_keys", "gauge",
           "reload_migrate_rate: per old server, the keys its walk listed (seen) and copied "
           "(moved), by the instance that walks it (one per fleet), as this instance knows "
           "them.");
  for (const auto& [pool, m] : migrations) {
    for (const MigrationWalk& w : m.walks) {
      const std::string labels = pool_label(pool) + ",server=\"" + label(w.server) +
                                 "\",walker=\"" + label(w.walker) + "\",state=\"" + label(w.state) +
                                 "\"";
      f.sample("memshard_pool_migrate_walk_keys", labels + ",kind=\"seen\"", w.seen);
      f.sample("memshard_pool_migrate_walk_keys", labels + ",kind=\"moved\"", w.moved);
    }
  }
  f.header("memshard_pool_migrate_seconds_left", "gauge",
           "reload_migrate_rate: seconds left of the warm-up window the migration runs in.");
  for (const auto& [pool, m] : migrations) {
    f.sample("memshard_pool_migrate_seconds_left", pool_label(pool), m.seconds_left);
  }
  f.header("memshard_pool_migrate_running", "gauge",
           "reload_migrate_rate: 1 while a background migration is running.");
  for (const auto& [pool, m] : migrations) {
    f.sample("memshard_pool_migrate_running", pool_label(pool), static_cast<uint64_t>(m.running));
  }
  const std::map<std::string, SwitchStatus> switches = p.switches();
  // Named by the fields switch_fields gives, as kPool's by counter names.
  static constexpr PoolMetric kSwitch[] = {
      {"switch_pending", "memshard_pool_switch_pending", "gauge",
       "reload_switch_at: 1 while a switch of servers waits for its moment or runs its window."},
      {"switch_at", "memshard_pool_switch_at_seconds", "gauge",
       "reload_switch_at: when the waiting (else the last) switch begins, unix seconds."},
      {"switch_generation", "memshard_pool_switch_generation", "gauge",
       "reload_switch_at: the config generation that waits for its switch (else switched last)."},
      {"switch_seconds_left", "memshard_pool_switch_seconds_left", "gauge",
       "reload_switch_at: seconds until the waiting switch's window ends."},
      {"switches", "memshard_pool_switches_total", "counter",
       "reload_switch_at: switches of servers completed."},
      {"switch_late_ms", "memshard_pool_switch_late_milliseconds", "gauge",
       "reload_switch_at: how late this instance loaded the config of the last switch."},
  };
  for (const PoolMetric& g : kSwitch) {
    f.header(g.name, g.type, g.help);
    for (const auto& [pool, sw] : switches) {
      for (const auto& [name, value] : switch_fields(sw)) {
        if (name == g.counter) f.sample(g.name, pool_label(pool), value);
      }
    }
  }
  const std::map<std::string, DiscoveryStatus> discoveries = p.discoveries();
  static constexpr PoolMetric kDiscovery[] = {
      {"discovery_servers", "memshard_pool_discovery_servers", "gauge",
       "servers_srv/servers_dns: the servers DNS discovery has in force."},
      {"discovery_lookups", "memshard_pool_discovery_lookups_total", "counter",
       "servers_srv/servers_dns: DNS lookups made."},
      {"discovery_failures", "memshard_pool_discovery_failures_total", "counter",
       "servers_srv/servers_dns: lookups that failed or found no records (nothing changed)."},
      {"discovery_changes", "memshard_pool_discovery_changes_total", "counter",
       "servers_srv/servers_dns: changes of servers applied (each step of a capped change one)."},
      {"discovery_held", "memshard_pool_discovery_held_total", "counter",
       "servers_srv/servers_dns: changes held back (shorter than discovery_hold, or cut by "
       "discovery_max_change)."},
      {"discovery_last_change", "memshard_pool_discovery_last_change_seconds", "gauge",
       "servers_srv/servers_dns: when the servers last changed, unix seconds."},
      {"discovery_pending", "memshard_pool_discovery_pending", "gauge",
       "servers_srv/servers_dns: 1 while a change waits for discovery_hold."},
  };
  for (const PoolMetric& g : kDiscovery) {
    f.header(g.name, g.type, g.help);
    for (const auto& [pool, d] : discoveries) {
      for (const auto& [name, value] : discovery_fields(d)) {
        if (name == g.counter) f.sample(g.name, pool_label(pool), value);
      }
    }
  }
  // TLS, per pool: handshakes by version, failures by cause, and how long
  // each certificate of our own has left (an alert fires before it lapses).
  auto labelled = [&](std::string_view name, std::string_view help, std::string_view key,
                      std::initializer_list<std::pair<std::string_view, std::string_view>> rows) {
    f.header(name, "counter", help);
    for (const auto& [pool, t] : snap.pools) {
      for (const auto& [value, counter_name] : rows) {
        size_t i = index_of(kPoolCounterNames, std::size(kPoolCounterNames), counter_name);
        f.sample(name,
                 pool_label(pool) + "," + std::string(key) + "=\"" + std::string(value) + "\"",
                 counter(t.counters, i));
      }
    }
  };
  labelled("memshard_pool_tls_version_total", "TLS client handshakes by protocol version.",
           "version", {{"1.2", "tls_1_2"}, {"1.3", "tls_1_3"}});
  labelled("memshard_pool_tls_handshake_failures_total", "TLS client handshakes failed, by cause.",
           "cause",
           {{"not_tls", "tls_fail_not_tls"},
            {"certificate", "tls_fail_certificate"},
            {"version", "tls_fail_version"},
            {"timeout", "tls_fail_timeout"},
            {"closed", "tls_fail_closed"},
            {"other", "tls_fail_other"}});
  f.header("memshard_tls_certificate_expiry_seconds", "gauge",
           "Seconds until the certificate in force lapses (negative: lapsed).");
  const int64_t now = static_cast<int64_t>(time(nullptr));
  for (const StatsView::TlsCertificate& c : p.tls_certificates()) {
    f.sample("memshard_tls_certificate_expiry_seconds",
             pool_label(c.pool) + ",side=\"" + c.side + "\"",
             static_cast<double>(c.not_after - now));
  }
  f.header("memshard_pool_server_ejections_total", "counter",
           "Servers ejected from the ring by auto_eject_hosts.");
  for (const auto& [pool, t] : snap.pools) {
    f.sample("memshard_pool_server_ejections_total", pool_label(pool), p.pool_ejections(pool));
  }
  f.header("memshard_pool_servers_held_by_cap", "gauge",
           "Servers failing now that auto_eject_max keeps in the ring (their keys fail fast).");
  for (const auto& [pool, t] : snap.pools) {
    f.sample("memshard_pool_servers_held_by_cap", pool_label(pool), p.held_by_cap(pool));
  }
  f.header("memshard_request_duration_seconds", "histogram",
           "Time from a request's arrival to its reply being ready, per pool.");
  for (const auto& [pool, t] : snap.pools) {
    uint64_t cumulative = 0;
    for (size_t b = 0; b < kLatencyBuckets; ++b) {
      cumulative += counter(t.latency, b);
      std::string le = b < std::size(kLatencyBucketsUsec)
                           ? std::to_string(static_cast<double>(kLatencyBucketsUsec[b]) / 1e6)
                           : "+Inf";
      f.sample("memshard_request_duration_seconds_bucket", pool_label(pool) + ",le=\"" + le + "\"",
               cumulative);
    }
    f.sample("memshard_request_duration_seconds_sum", pool_label(pool),
             static_cast<double>(t.latency_sum_usec) / 1e6);
    f.sample("memshard_request_duration_seconds_count", pool_label(pool), cumulative);
  }

  // Per route of a routing pool.
  struct RouteMetric {
    std::string_view counter, name, help;
  };
  static constexpr RouteMetric kRoute[] = {
      {"requests", "memshard_route_requests_total",
       "Routing pools: requests that took the route (a multi-get once per route it reaches)."},
      {"hits", "memshard_route_hits_total",
       "Routing pools: keys read through the route and found."},
      {"misses", "memshard_route_misses_total",
       "Routing pools: keys read through the route and not found."},
      {"errors", "memshard_route_errors_total",
       "Routing pools: requests through the route answered with an error."},
      {"shadow_sent", "memshard_route_shadow_sent_total",
       "Routing pools: copies sent to the route's shadow pool."},
      {"shadow_dropped", "memshard_route_shadow_dropped_total",
       "Routing pools: copies not sent because the shadow's queue was full."},
      {"shadow_failed", "memshard_route_shadow_failed_total",
       "Routing pools: copies the shadow pool answered with an error (nobody saw it)."},
      {"warm_lookups", "memshard_route_warm_lookups_total",
       "Routing pools, warm_from: keys the route's pool missed, looked up in the warm pool."},
      {"warm_hits", "memshard_route_warm_hits_total",
       "Routing pools, warm_from: keys found in the warm pool."},
      {"warm_copies", "memshard_route_warm_copies_total",
       "Routing pools, warm_from: values found warm and stored on the route's pool."},
      {"blackholed", "memshard_route_blackholed_total",
       "Routing pools, blackhole: requests the route answered itself, sending nothing."},
  };
  for (const RouteMetric& m : kRoute) {
    f.header(m.name, "counter", m.help);
    const size_t i = index_of(kRouteCounterNames, std::size(kRouteCounterNames), m.counter);
    for (const auto& [pool, t] : snap.pools) {
      for (const auto& [route, counters] : t.routes)
        f.sample(m.name, pool_label(pool) + ",route=\"" + label(route) + "\"",
                 counter(counters, i));
    }
  }

  // Per server.
  struct ServerMetric {
    std::string_view counter, name, type, help, extra;
  };
  static constexpr ServerMetric kServer[] = {
      {"requests", "memshard_server_requests_total", "counter", "Operations sent to the server.",
       ""},
      {"requests_joined", "memshard_server_requests_joined_total", "counter",
       "Operations (get/gets) sent on the multi-get line of the one before.", ""},
      {"requests_shed", "memshard_server_requests_shed_total", "counter",
       "Requests refused at once: server_queue_limit requests were waiting on the connection.", ""},
      {"request_bytes", "memshard_server_request_bytes_total", "counter", "Bytes sent.", ""},
      {"responses", "memshard_server_responses_total", "counter", "Operations answered.", ""},
      {"response_bytes", "memshard_server_response_bytes_total", "counter", "Bytes received.", ""},
      {"out_queue", "memshard_server_in_flight", "gauge", "Operations awaiting a reply.", ""},
      {"out_queue_bytes", "memshard_server_in_flight_bytes", "gauge",
       "Request bytes of the operations awaiting a reply.", ""},
      {"server_connections", "memshard_server_connections", "gauge", "Open connections.", ""},
      {"server_eof", "memshard_server_errors_total", "counter",
       "Connection failures: eof (closed by the server), error (connect error, reset, invalid "
       "reply), timeout.",
       "kind=\"eof\""},
      {"server_err", "memshard_server_errors_total", "", "", "kind=\"error\""},
      {"server_timedout", "memshard_server_errors_total", "", "", "kind=\"timeout\""},
      {"replies_hit", "memshard_server_replies_total", "counter", "Replies by type.",
       "type=\"hit\""},
      {"replies_miss", "memshard_server_replies_total", "", "", "type=\"miss\""},
      {"replies_stored", "memshard_server_replies_total", "", "", "type=\"stored\""},
      {"replies_not_stored", "memshard_server_replies_total", "", "", "type=\"not_stored\""},
      {"replies_exists", "memshard_server_replies_total", "", "", "type=\"exists\""},
      {"replies_not_found", "memshard_server_replies_total", "", "", "type=\"not_found\""},
      {"replies_error", "memshard_server_replies_total", "", "", "type=\"error\""},
      {"replies_other", "memshard_server_replies_total", "", "", "type=\"other\""},
      {"replica_writes", "memshard_server_replica_writes_total", "counter",
       "Replicated pools: writes the server got as a copy after a key's first.", ""},
      {"replica_write_failures", "memshard_server_replica_write_failures_total", "counter",
       "Replicated pools: of those, the ones that failed.", ""},
      {"read_failovers", "memshard_server_read_failovers_total", "counter",
       "Replicated pools: reads that went on from the server to a key's next copy.", ""},
      {"read_repairs", "memshard_server_read_repairs_total", "counter",
       "Replicated pools: values written back to the server after it missed them.", ""},
      {"tls_handshakes", "memshard_server_tls_handshakes_total", "counter",
       "server_tls: TLS handshakes with the server completed.", ""},
      {"tls_failures", "memshard_server_tls_handshake_failures_total", "counter",
       "server_tls: TLS handshakes with the server that failed.", ""},
  };
  for (const ServerMetric& m : kServer) {
    if (!m.type.empty()) f.header(m.name, m.type, m.help);
    for (const auto& [pool, t] : snap.pools) {
      for (const auto& [name, s] : t.servers) {
        std::string labels = server_labels(pool, name, s);
        if (!m.extra.empty()) labels.append(",").append(m.extra);
        f.sample(m.name, labels, server_counter(s, m.counter));
      }
    }
  }
  f.header("memshard_server_ejected", "gauge", "1 while auto_eject_hosts keeps the server out.");
  for (const auto& [pool, t] : snap.pools) {
    for (const auto& [name, s] : t.servers) {
      f.sample("memshard_server_ejected", server_labels(pool, name, s),
               uint64_t{p.ejected_at(pool, s.identity) != 0});
    }
  }
  struct RepairMetric {
    std::string_view name, type, help;
    uint64_t RepairCounts::*field;
  };
  static constexpr RepairMetric kRepair[] = {
      {"memshard_server_repair_keys", "gauge",
       "Keys recorded as missed by the server, to be deleted from it before it serves them.",
       &RepairCounts::keys},
      {"memshard_server_repair_recorded_total", "counter",
       "Writes the server missed (it was out, refused, failed, or the write went elsewhere).",
       &RepairCounts::recorded},
      {"memshard_server_repairs_total", "counter", "Recorded keys deleted from the server.",
       &RepairCounts::repairs},
      {"memshard_server_repair_overflow_flushes_total", "counter",
       "Times the server's repair record overflowed repair_record (each owes a flush).",
       &RepairCounts::overflow_flushes},
      {"memshard_server_repair_flushes_total", "counter",
       "flush_all sent to the server by the repair (an overflow, or a flush_all it missed).",
       &RepairCounts::flushes},
  };
  for (const RepairMetric& m : kRepair) {
    f.header(m.name, m.type, m.help);
    for (const auto& [pool, t] : snap.pools) {
      for (const auto& [name, s] : t.servers) {
        f.sample(m.name, server_labels(pool, name, s), p.repair_counts(pool, s.identity).*m.field);
      }
    }
  }
  append_hot_keys_prometheus(snap, out);
}

}  // namespace memshard::proxy
