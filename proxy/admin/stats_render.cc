#include "proxy/admin/stats_render.h"

#include <unistd.h>

#include <algorithm>
#include <ctime>
#include <string_view>
#include <utility>
#include <vector>

#include "proxy/admin/hot_keys_render.h"
#include "proxy/admin/json_writer.h"
#include "proxy/admin/stats_fields.h"
#include "proxy/admin/stats_view.h"
#include "proxy/protocol/replies.h"
#include "proxy/support/stats.h"

namespace memshard::proxy {

using namespace stats_fields;

namespace {

void json_field(std::string& out, std::string_view name, uint64_t value, bool& first) {
  if (!first) out.append(", ");
  first = false;
  json_string(out, name);
  out.append(":").append(std::to_string(value));
}

std::string hostname() {
  char buf[256] = {};
  gethostname(buf, sizeof(buf) - 1);
  return buf;
}

}  // namespace

void render_twemproxy_json(const StatsView& p, std::string& out) {
  StatsSnapshot snap = p.snapshot();
  WorkerTotals total(p);
  out.append("{\"service\":\"memshard\", \"source\":");
  json_string(out, hostname());
  out.append(", \"version\":\"" MEMSHARD_VERSION "\"");
  bool first = false;
  json_field(out, "uptime", p.uptime_seconds(), first);
  json_field(out, "timestamp", static_cast<uint64_t>(time(nullptr)), first);
  json_field(out, "total_connections", total("total_connections"), first);
  json_field(out, "curr_connections", total("curr_connections"), first);
  json_field(out, "parked_connections", total("parked_connections"), first);
  json_field(out, "moved_connections", total("moved_connections"), first);
  json_field(out, "threads", static_cast<uint64_t>(p.thread_count()), first);
  json_field(out, "active_threads", static_cast<uint64_t>(p.active_threads()), first);
  json_field(out, "binary_connections", total("binary_connections"), first);
  json_field(out, "binary_requests", total("binary_requests"), first);
  json_field(out, "cmd_get", total("cmd_get"), first);
  json_field(out, "cmd_set", total("cmd_set"), first);
  json_field(out, "cmd_other", total("cmd_other"), first);
  json_field(out, "config_generation", p.generation(), first);
  json_field(out, "config_reloads", p.reloads(), first);
  json_field(out, "config_reload_failures", p.reload_failures(), first);
  json_field(out, "dns_address_changes", p.dns_address_changes(), first);
  json_field(out, "dns_failures", p.dns_failures(), first);
  const std::map<std::string, MigrationStatus> migrations = p.migrations();
  const std::map<std::string, SwitchStatus> switches = p.switches();
  const std::map<std::string, DiscoveryStatus> discoveries = p.discoveries();
  for (const auto& [pool, t] : snap.pools) {
    out.append(", ");
    json_string(out, pool);
    out.append(": {");
    bool pf = true;
    for (size_t i = 0; i < std::size(kPoolCounterNames); ++i) {
      json_field(out, kPoolCounterNames[i], counter(t.counters, i), pf);
      if (kPoolCounterNames[i] == "client_connections") {
        json_field(out, "server_ejects", p.pool_ejections(pool), pf);
        json_field(out, "servers_held_by_cap", p.held_by_cap(pool), pf);
      }
    }
    if (auto m = migrations.find(pool); m != migrations.end()) {
      for (const auto& [name, value] : migration_fields(m->second)) {
        json_field(out, name, value, pf);
      }
    }
    if (auto sw = switches.find(pool); sw != switches.end()) {
      for (const auto& [name, value] : switch_fields(sw->second)) json_field(out, name, value, pf);
    }
    if (auto d = discoveries.find(pool); d != discoveries.end()) {
      for (const auto& [name, value] : discovery_fields(d->second))
        json_field(out, name, value, pf);
    }
    for (const auto& [name, s] : t.servers) {
      out.append(", ");
      json_string(out, name);
      out.append(": {");
      bool sf = true;
      for (size_t i = 0; i < std::size(kServerCounterNames); ++i) {
        std::string_view n = kServerCounterNames[i];
        json_field(out, n, counter(s.counters, i), sf);
        if (n == "server_connections") {
          json_field(out, "server_ejected_at", p.ejected_at(pool, s.identity), sf);
          for (const auto& [rn, v] : repair_fields(p.repair_counts(pool, s.identity)))
            json_field(out, rn, v, sf);
        } else if (n == "response_bytes") {
          // memshard writes requests straight to the connection: nothing
          // waits in an input queue as in twemproxy.
          json_field(out, "in_queue", 0, sf);
          json_field(out, "in_queue_bytes", 0, sf);
        }
      }
      out.append("}");
    }
    out.append("}");
  }
  // A routing pool's routes, as a list: an object would read as a pool or
  // a server to tools made for twemproxy's document.
  out.append(", \"routes\":[");
  bool first_route = true;
  for (const auto& [pool, t] : snap.pools) {
    for (const auto& [route, counters] : t.routes) {
      out.append(first_route ? "{\"pool\":" : ", {\"pool\":");
      first_route = false;
      json_string(out, pool);
      out.append(", \"route\":");
      json_string(out, route);
      bool rf = false;
      for (size_t i = 0; i < std::size(kRouteCounterNames); ++i)
        json_field(out, kRouteCounterNames[i], counter(counters, i), rf);
      out.append("}");
    }
  }
  out.append("]");
  append_hot_keys_json(snap, out);
  out.append("}\n");
}

void render_stat_servers(const StatsView& p, std::string& out) {
  StatsSnapshot snap = p.snapshot();
  for (const auto& [pool, t] : snap.pools) {
    for (const auto& [name, s] : t.servers) {
      std::string prefix = "STAT " + pool + ":" + name + ":";
      out.append(prefix).append("address ").append(s.identity).append("\r\n");
      uint64_t ejected = p.ejected_at(pool, s.identity);
      out.append(prefix).append("state ").append(ejected ? "ejected" : "live").append("\r\n");
      for (const auto& [n, v] : repair_fields(p.repair_counts(pool, s.identity)))
        out.append(prefix).append(n).append(" ").append(std::to_string(v)).append("\r\n");
      for (size_t i = 0; i < std::size(kServerCounterNames); ++i) {
        out.append(prefix).append(kServerCounterNames[i]).append(" ");
        out.append(std::to_string(counter(s.counters, i))).append("\r\n");
      }
    }
  }
  out.append(proto::reply::kEnd);
}

void render_stat_routes(const StatsView& p, std::string& out) {
  StatsSnapshot snap = p.snapshot();
  for (const auto& [pool, t] : snap.pools) {
    for (const auto& [route, counters] : t.routes) {
      for (size_t i = 0; i < std::size(kRouteCounterNames); ++i) {
        out.append("STAT ").append(pool).append(":").append(route).append(":");
        out.append(kRouteCounterNames[i]).append(" ");
        out.append(std::to_string(counter(counters, i))).append("\r\n");
      }
    }
  }
  out.append(proto::reply::kEnd);
}

void render_stat_pools(const StatsView& p, std::string& out) {
  StatsSnapshot snap = p.snapshot();
  const std::map<std::string, MigrationStatus> migrations = p.migrations();
  const std::map<std::string, SwitchStatus> switches = p.switches();
  const std::map<std::string, DiscoveryStatus> discoveries = p.discoveries();
  for (const auto& [pool, t] : snap.pools) {
    for (size_t i = 0; i < std::size(kPoolCounterNames); ++i) {
      out.append("STAT ").append(pool).append(":").append(kPoolCounterNames[i]).append(" ");
      out.append(std::to_string(counter(t.counters, i))).append("\r\n");
    }
    out.append("STAT ").append(pool).append(":server_ejects ");
    out.append(std::to_string(p.pool_ejections(pool))).append("\r\n");
    out.append("STAT ").append(pool).append(":servers_held_by_cap ");
    out.append(std::to_string(p.held_by_cap(pool))).append("\r\n");
    if (auto m = migrations.find(pool); m != migrations.end()) {
      for (const auto& [name, value] : migration_fields(m->second)) {
        out.append("STAT ").append(pool).append(":").append(name).append(" ");
        out.append(std::to_string(value)).append("\r\n");
      }
      // Who walks each old server (one instance of the fleet each), and
      // how far it got.
      for (const MigrationWalk& w : m->second.walks) {
        const std::string prefix = "STAT " + pool + ":migrate_walk:" + w.server + ":";
        out.append(prefix).append("walker ").append(w.walker.empty() ? "-" : w.walker);
        out.append("\r\n").append(prefix).append("state ").append(w.state).append("\r\n");
        out.append(prefix).append("here ").append(w.walker == m->second.instance ? "1" : "0");
        out.append("\r\n").append(prefix).append("seen ").append(std::to_string(w.seen));
        out.append("\r\n").append(prefix).append("moved ").append(std::to_string(w.moved));
        out.append("\r\n");
      }
    }
    if (auto sw = switches.find(pool); sw != switches.end()) {
      for (const auto& [name, value] : switch_fields(sw->second)) {
        out.append("STAT ").append(pool).append(":").append(name).append(" ");
        out.append(std::to_string(value)).append("\r\n");
      }
    }
    if (auto d = discoveries.find(pool); d != discoveries.end()) {
      out.append("STAT ").append(pool).append(":discovery ").append(d->second.source);
      out.append("\r\n");
      for (const auto& [name, value] : discovery_fields(d->second)) {
        out.append("STAT ").append(pool).append(":").append(name).append(" ");
        out.append(std::to_string(value)).append("\r\n");
      }
    }
  }
}

}  // namespace memshard::proxy
