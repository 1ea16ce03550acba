// The discovery directives of a pool (memshard extensions, docs/discovery.md):
// servers_srv or servers_dns names where the servers come from, and
// discovery_refresh, discovery_hold and discovery_max_change say how often
// they are looked up and how a change is damped. Only their shape is
// checked here; the lookups are the proxy's (proxy/runtime/discovery.h).
#include <algorithm>
#include <array>
#include <string_view>
#include <vector>

#include "conf/pool.h"
#include "conf/values.h"

namespace memshard::conf {

std::string DiscoveryConfig::describe() const {
  switch (kind) {
    case Kind::srv:
      return "servers_srv " + name;
    case Kind::dns:
      return "servers_dns " + name + ":" + std::to_string(port);
    case Kind::none:
      break;
  }
  return "";
}

namespace detail {
namespace {

constexpr std::array<std::string_view, 5> kDiscoveryDirectives = {
    "servers_srv", "servers_dns", "discovery_refresh", "discovery_hold", "discovery_max_change",
};

constexpr int kMaxMs = 24 * 3600 * 1000;

// A DNS name as a lookup takes it: letters, digits, '-', '_' and '.', at
// most 253 bytes, no empty label (a trailing dot is allowed).
bool valid_name(std::string_view name) {
  if (name.empty() || name.size() > 254) return false;
  if (name.back() == '.') name.remove_suffix(1);
  size_t label = 0;
  for (char c : name) {
    if (c == '.') {
      if (label == 0) return false;
      label = 0;
      continue;
    }
    const bool ok = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
                    c == '-' || c == '_';
    if (!ok || ++label > 63) return false;
  }
  return label > 0;
}

}  // namespace

bool is_discovery_directive(std::string_view key) {
  return std::find(kDiscoveryDirectives.begin(), kDiscoveryDirectives.end(), key) !=
         kDiscoveryDirectives.end();
}

std::vector<std::string_view> discovery_directives() {
  return {kDiscoveryDirectives.begin(), kDiscoveryDirectives.end()};
}

bool discovery_directive(PoolConfig& pool, const std::string& key, const std::string& text,
                         int line, ErrorList& errors) {
  if (!is_discovery_directive(key)) return false;
  DiscoveryConfig& d = pool.discovery;
  d.lines.emplace_back(key, line);
  const auto fail = [&](const std::string& why) {
    errors.add(line, key, why + ", found \"" + text + "\"");
  };
  const auto number = [&](int& field, int min) {
    Parsed<int> n = parse_number(text);
    if (!n.value) return fail(n.error);
    if (*n.value < min || *n.value > kMaxMs) {
      return fail("expected a whole number of ms from " + std::to_string(min) + " to " +
                  std::to_string(kMaxMs));
    }
    field = *n.value;
  };
  if (key == "servers_srv" || key == "servers_dns") {
    if (d.line != 0) {
      errors.add(line, key,
                 "pool '" + pool.name + "' already takes its servers from " + d.describe() +
                     " (line " + std::to_string(d.line) +
                     "); expected one of servers_srv and "
                     "servers_dns");
      return true;
    }
    d.line = line;  // given, even if refused: no "no servers" beside its error
    if (key == "servers_srv") {
      if (!valid_name(text)) {
        fail("expected an SRV name such as _memcache._tcp.memcached.cache.svc.cluster.local");
        return true;
      }
      d.kind = DiscoveryConfig::Kind::srv;
      d.name = text;
    } else {
      const size_t colon = text.rfind(':');
      if (colon == std::string::npos || !valid_name(text.substr(0, colon))) {
        fail("expected NAME:PORT, such as memcached.cache.svc.cluster.local:11211");
        return true;
      }
      Parsed<uint16_t> port = parse_port(text.substr(colon + 1));
      if (!port.value) {
        fail(port.error);
        return true;
      }
      d.kind = DiscoveryConfig::Kind::dns;
      d.name = text.substr(0, colon);
      d.port = *port.value;
    }
    if (d.name.size() > 1 && d.name.back() == '.') d.name.pop_back();
  } else if (key == "discovery_refresh") {
    number(d.refresh_ms, 100);
  } else if (key == "discovery_hold") {
    number(d.hold_ms, 0);
  } else if (key == "discovery_max_change") {
    if (text == "0" || text == "0%") {
      d.max_change = 0;  // no cap
    } else {
      Parsed<double> share = parse_share(text);
      if (!share.value)
        fail(share.error + " (or 0 for no cap)");
      else
        d.max_change = *share.value;
    }
  }
  return true;
}

void check_discovery(const PoolConfig& pool, int servers_line, ErrorList& errors) {
  const DiscoveryConfig& d = pool.discovery;
  if (d.lines.empty()) return;
  const std::string source = d.kind == DiscoveryConfig::Kind::dns ? "servers_dns" : "servers_srv";
  if (pool.routes_keys() || pool.routes_line != 0) {
    for (const auto& [key, line] : d.lines) {
      errors.add(line, key,
                 "applies to a pool's own servers, and pool '" + pool.name +
                     "' routes its keys to other pools (routes:); expected it on those pools");
    }
    return;
  }
  if (d.line == 0) {
    for (const auto& [key, line] : d.lines) {
      errors.add(line, key,
                 "tunes the lookups of servers_srv or servers_dns, which pool '" + pool.name +
                     "' does not have; set one of them, or remove this");
    }
    return;
  }
  if (servers_line != 0) {
    errors.add(servers_line, "servers",
               "pool '" + pool.name + "' takes its servers from " + source + " (line " +
                   std::to_string(d.line) +
                   "); expected either a servers list or DNS discovery, not both");
  }
  if (pool.replicas_line != 0 && pool.replicas > 1) {
    // Copies need as many servers, which DNS may not give: refused until
    // a pool can say what it does with fewer.
    errors.add(pool.replicas_line, "replicas",
               "pool '" + pool.name + "' takes its servers from " + source +
                   ", whose count can fall below the copies kept; expected replicas: 1 with "
                   "DNS discovery");
  }
}

}  // namespace detail
}  // namespace memshard::conf
