#include "proxy/cli/status_sample.h"

#include <yaml-cpp/yaml.h>

namespace memshard::proxy {

namespace {

template <typename T>
T get(const YAML::Node& node, const char* key, T fallback = T{}) {
  const YAML::Node v = node[key];
  if (!v || v.IsNull() || !v.IsScalar()) return fallback;
  return v.as<T>(fallback);
}

StatusSample::Server parse_server(const YAML::Node& n) {
  StatusSample::Server s;
  s.address = get<std::string>(n, "address");
  s.name = get<std::string>(n, "name");
  s.state = get<std::string>(n, "state");
  s.weight = get<uint64_t>(n, "weight");
  s.share = get<double>(n, "share");
  s.copies = get<double>(n, "copies");
  s.requests = get<uint64_t>(n, "requests");
  s.errors = get<uint64_t>(n, "errors");
  s.requests_shed = get<uint64_t>(n, "requests_shed");
  s.connections = get<uint64_t>(n, "connections");
  s.in_flight = get<uint64_t>(n, "in_flight");
  return s;
}

StatusSample::Pool parse_pool(const YAML::Node& n) {
  StatusSample::Pool p;
  p.name = get<std::string>(n, "name");
  p.listen = get<std::string>(n, "listen");
  p.distribution = get<std::string>(n, "distribution");
  p.in_config = get<bool>(n, "in_config", true);
  p.tls = get<bool>(n, "tls");
  p.replicas = get<uint64_t>(n, "replicas", 1);
  p.requests = get<uint64_t>(n, "requests");
  p.hits = get<uint64_t>(n, "hits");
  p.misses = get<uint64_t>(n, "misses");
  p.forward_errors = get<uint64_t>(n, "forward_errors");
  p.client_connections = get<uint64_t>(n, "client_connections");
  for (const YAML::Node& b : n["latency"]) p.latency.push_back(b.as<uint64_t>(0));
  if (const YAML::Node w = n["warmup"]; w && w.IsMap()) {
    p.warmup_windows = get<uint64_t>(w, "windows");
    p.warmup_seconds_left = get<uint64_t>(w, "seconds_left");
  }
  if (const YAML::Node m = n["migration"]; m && m.IsMap()) {
    p.migrating = get<bool>(m, "running");
    p.migrate_moved = get<uint64_t>(m, "moved");
    p.migrate_pending = get<uint64_t>(m, "pending");
    p.migrate_failed = get<uint64_t>(m, "failed");
  }
  for (const YAML::Node& s : n["servers"]) p.servers.push_back(parse_server(s));
  return p;
}

}  // namespace

const StatusSample::Server* StatusSample::Pool::server(const std::string& address) const {
  for (const Server& s : servers) {
    if (s.address == address) return &s;
  }
  return nullptr;
}

const StatusSample::Pool* StatusSample::pool(const std::string& name) const {
  for (const Pool& p : pools) {
    if (p.name == name) return &p;
  }
  return nullptr;
}

std::optional<StatusSample> parse_status_sample(const std::string& json, std::string& error) {
  YAML::Node doc;
  try {
    doc = YAML::Load(json);
  } catch (const YAML::Exception& e) {
    error = std::string("not a status document: ") + e.what();
    return std::nullopt;
  }
  if (!doc.IsMap() || get<std::string>(doc, "service") != "memshard" || !doc["pools"] ||
      !doc["config"]) {
    error = "not memshard's /status.json";
    return std::nullopt;
  }
  try {
    StatusSample s;
    s.source = get<std::string>(doc, "source");
    s.version = get<std::string>(doc, "version");
    s.time = get<int64_t>(doc, "time");
    s.clock_ms = get<uint64_t>(doc, "clock_ms");
    s.uptime = get<uint64_t>(doc, "uptime");
    s.connections = get<uint64_t>(doc["process"], "connections");
    const YAML::Node config = doc["config"];
    s.generation = get<uint64_t>(config, "generation");
    s.reloads = get<uint64_t>(config, "reloads");
    s.reload_failures = get<uint64_t>(config, "reload_failures");
    s.switch_pending = config["pending_switch"] && !config["pending_switch"].IsNull();
    for (const YAML::Node& r : config["history"]) {
      s.history.push_back({get<int64_t>(r, "at"), get<uint64_t>(r, "generation"),
                           get<std::string>(r, "outcome"), get<std::string>(r, "reason")});
    }
    for (const YAML::Node& b : doc["latency_bounds_usec"])
      s.latency_bounds_usec.push_back(b.as<uint64_t>(0));
    for (const YAML::Node& p : doc["pools"]) s.pools.push_back(parse_pool(p));
    if (const YAML::Node d = config["discovery"]; d && d.IsMap()) {
      for (StatusSample::Pool& p : s.pools) {
        const YAML::Node one = d[p.name];
        if (!one || !one.IsMap()) continue;
        p.discovery = get<std::string>(one, "source");
        p.discovery_pending = get<std::string>(one, "pending");
        p.discovery_last_change = get<int64_t>(one, "last_change");
        p.discovery_failing = get<uint64_t>(one, "failing") != 0;
      }
    }
    for (const YAML::Node& c : doc["tls_certificates"]) {
      s.certificates.push_back({get<std::string>(c, "pool"), get<std::string>(c, "side"),
                                get<int64_t>(c, "seconds_left")});
    }
    return s;
  } catch (const YAML::Exception& e) {
    error = std::string("unexpected status document: ") + e.what();
    return std::nullopt;
  }
}

}  // namespace memshard::proxy
