// Routing across pools (docs/routing.md): reading a pool's
// `routes` list, and the checks that need every pool of the file (a route
// or gutter names a pool that exists, routes do not nest, a pool without a
// listener is reached by something).
#include <algorithm>
#include <array>
#include <charconv>
#include <cstdint>
#include <map>
#include <optional>
#include <set>
#include <string>
#include <string_view>
#include <vector>

#include "conf/pool.h"
#include "conf/values.h"

namespace memshard::conf::detail {
namespace {

// memcached's longest key; a longer prefix would match nothing.
constexpr size_t kMaxPrefixBytes = 250;

// The fields of one `routes` entry: anything else is refused before
// RouteReader::read() looks at it.
constexpr std::array<std::string_view, 8> kRouteFields = {
    "prefix", "pool", "pools", "shadow", "shadow_share", "warm_from", "warm_ttl", "blackhole",
};

// memcached's longest relative expiry; a warm_ttl beyond it would be read
// by memcached as a unix time, long past.
constexpr int64_t kMaxWarmTtl = 2592000;

bool is_route_field(std::string_view key) {
  return std::find(kRouteFields.begin(), kRouteFields.end(), key) != kRouteFields.end();
}

// "prefix, pool, pools, ..., warm_ttl or blackhole"
std::string route_field_list() {
  std::string out;
  for (size_t i = 0; i < kRouteFields.size(); ++i) {
    if (i > 0) out += i + 1 == kRouteFields.size() ? " or " : ", ";
    out += kRouteFields[i];
  }
  return out;
}

// One `routes` entry, a map: prefix, pool or pools, shadow, shadow_share.
class RouteReader {
 public:
  RouteReader(const YAML::Node& item, ErrorList& errors) : item_(item), errors_(errors) {
    route_.line = line_of(item);
  }

  std::optional<RouteConfig> read() {
    if (!item_.IsMap()) {
      errors_.add(
          route_.line, "routes",
          "expected a route such as {prefix: \"sess:\", pool: sessions}, found " + describe(item_));
      return std::nullopt;
    }
    bool prefix_given = false, pool_given = false, pools_given = false;
    for (auto it = item_.begin(); it != item_.end(); ++it) {
      const int line = line_of(it->first);
      const std::string key = it->first.IsScalar() ? it->first.Scalar() : "";
      // A copy: it-> is a temporary, and a reference to its member would
      // outlive it (AddressSanitizer: stack-use-after-scope).
      const YAML::Node value = it->second;
      if (!is_route_field(key)) {
        fail(line, "unknown route field " + in_quotes(key) + "; expected " + route_field_list());
      } else if (key == "prefix") {
        prefix_given = true;
        if (auto text = scalar(key, value, line)) prefix(*text, line);
      } else if (key == "pool") {
        pool_given = true;
        if (auto text = scalar(key, value, line)) add_pool(*text, line);
      } else if (key == "pools") {
        pools_given = true;
        pools(value, line);
      } else if (key == "shadow") {
        route_.shadow_line = line;
        if (auto text = scalar(key, value, line)) route_.shadow = *text;
      } else if (key == "blackhole") {
        blackhole_line = line;
        if (auto text = scalar(key, value, line)) {
          const Parsed<bool> b = parse_bool(*text);
          if (b.value) {
            route_.blackhole = *b.value;
          } else {
            fail(line, b.error + ", found " + in_quotes(*text));
          }
        }
      } else if (key == "warm_from") {
        route_.warm_from_line = line;
        if (auto text = scalar(key, value, line)) route_.warm_from = *text;
      } else if (key == "warm_ttl") {
        route_.warm_ttl_line = line;
        if (auto text = scalar(key, value, line)) warm_ttl(*text, line);
      } else if (key == "shadow_share") {
        if (auto text = scalar(key, value, line)) {
          const Parsed<double> share = parse_share(*text);
          if (share.value) {
            route_.shadow_share = *share.value;
          } else {
            fail(line, share.error + ", found " + in_quotes(*text));
          }
        }
      }
    }
    route_.is_default = !prefix_given;
    if (route_.blackhole) {
      if (pool_given || pools_given || !route_.shadow.empty() || route_.warm_from_line != 0) {
        fail(blackhole_line,
             "a blackhole route answers every request itself and sends nothing anywhere; "
             "expected no pool, pools, shadow or warm_from beside blackhole: true");
      }
      return failed_ ? std::nullopt : std::optional<RouteConfig>(std::move(route_));
    }
    if (pool_given && pools_given) {
      fail(route_.line, "a route has one pool: or a pools: list of copies, not both");
    } else if (!pool_given && !pools_given) {
      fail(route_.line,
           "a route names where its keys go: \"pool: NAME\", \"pools: [A, B]\" for a copy "
           "in each, or \"blackhole: true\" for none");
    }
    if (!route_.shadow.empty() && route_.shadow_line == 0) route_.shadow_line = route_.line;
    if (route_.warm_from_line != 0 && route_.warm_ttl_line == 0) {
      fail(route_.warm_from_line,
           "warm_from needs warm_ttl: the expiry, in seconds, of the copies it makes on the "
           "route's pool (0: none), such as \"warm_ttl: 3600\"");
    } else if (route_.warm_ttl_line != 0 && route_.warm_from_line == 0) {
      fail(route_.warm_ttl_line,
           "warm_ttl without warm_from does nothing; expected \"warm_from: POOL\" beside it");
    }
    if (failed_) return std::nullopt;
    return std::move(route_);
  }

 private:
  void fail(int line, std::string message) {
    failed_ = true;
    errors_.add(line, "routes", std::move(message));
  }

  std::optional<std::string> scalar(const std::string& key, const YAML::Node& value, int line) {
    if (value.IsScalar() && !value.Scalar().empty()) return value.Scalar();
    fail(line, "expected a value for " + key + ", found " + describe(value));
    return std::nullopt;
  }

  void prefix(const std::string& text, int line) {
    if (text.size() > kMaxPrefixBytes) {
      return fail(line,
                  "expected a prefix of at most 250 bytes (memcached's longest key), "
                  "found one of " +
                      std::to_string(text.size()));
    }
    route_.prefix = text;
  }

  void warm_ttl(const std::string& text, int line) {
    int64_t v = -1;
    const auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), v);
    if (ec != std::errc() || end != text.data() + text.size() || v < 0 || v > kMaxWarmTtl) {
      return fail(line,
                  "expected warm_ttl in seconds, 0 (no expiry) to 2592000 (30 days, memcached's "
                  "longest relative expiry), found " +
                      in_quotes(text));
    }
    route_.warm_ttl_s = v;
  }

  void add_pool(const std::string& name, int line) {
    route_.pools.push_back(name);
    route_.pool_lines.push_back(line);
  }

  void pools(const YAML::Node& value, int line) {
    if (!value.IsSequence() || value.size() == 0) {
      return fail(line,
                  "expected a list of pool names, such as [users_zone_a, users_zone_b], "
                  "found " +
                      describe(value));
    }
    std::set<std::string> seen;
    for (const YAML::Node& p : value) {
      const int at = line_of(p) ? line_of(p) : line;
      if (!p.IsScalar() || p.Scalar().empty()) {
        fail(at, "expected a pool name, found " + describe(p));
        continue;
      }
      if (!seen.insert(p.Scalar()).second) {
        fail(at, "pool '" + p.Scalar() + "' is listed twice; expected each copy's pool once");
        continue;
      }
      add_pool(p.Scalar(), at);
    }
  }

  const YAML::Node& item_;
  ErrorList& errors_;
  RouteConfig route_;
  int blackhole_line = 0;
  bool failed_ = false;
};

// What a route, a shadow or a gutter may name: a pool of the file with
// servers of its own. Empty when `target` is fine, else why not.
std::string bad_target(const std::map<std::string, const PoolConfig*>& pools,
                       const PoolConfig& from, const std::string& target) {
  auto it = pools.find(target);
  if (it == pools.end()) {
    std::string names;
    for (const auto& [name, p] : pools) {
      if (!p->routes_keys()) names += (names.empty() ? "" : ", ") + name;
    }
    return "pool '" + target + "' is not defined; expected one of " + names;
  }
  if (target == from.name) return "pool '" + from.name + "' names itself; expected another pool";
  if (it->second->routes_keys()) {
    return "pool '" + target +
           "' routes its keys to other pools itself; expected a pool with servers (routes do "
           "not nest, so that no cycle can form)";
  }
  return {};
}

}  // namespace

std::vector<std::string_view> route_field_names() {
  return {kRouteFields.begin(), kRouteFields.end()};
}

void parse_routes(const YAML::Node& value, int line, PoolConfig& pool, ErrorList& errors) {
  pool.routes_line = line;
  if (!value.IsSequence() || value.size() == 0) {
    errors.add(line, "routes",
               "expected a list of routes, such as - {prefix: \"sess:\", pool: sessions}, "
               "found " +
                   describe(value));
    return;
  }
  std::map<std::string, int> prefixes;  // "" for the default route -> line
  for (const YAML::Node& item : value) {
    std::optional<RouteConfig> route = RouteReader(item, errors).read();
    if (!route) continue;
    const std::string key = route->is_default ? std::string() : "=" + route->prefix;
    if (const auto [first, is_new] = prefixes.emplace(key, route->line); !is_new) {
      errors.add(route->line, "routes",
                 (route->is_default ? std::string("a second route without a prefix")
                                    : "prefix " + in_quotes(route->prefix) + " is given twice") +
                     "; the first is on line " + std::to_string(first->second) +
                     ", and a key can take only one");
      continue;
    }
    pool.routes.push_back(std::move(*route));
  }
}

void check_routes(const std::vector<ParsedPool>& parsed, ErrorList& errors) {
  std::map<std::string, const PoolConfig*> pools;
  for (const ParsedPool& p : parsed) pools.emplace(p.pool.name, &p.pool);
  std::set<std::string> reached;  // by a route, a shadow or a gutter
  for (const ParsedPool& p : parsed) {
    const PoolConfig& pc = p.pool;
    for (const RouteConfig& r : pc.routes) {
      for (size_t i = 0; i < r.pools.size(); ++i) {
        reached.insert(r.pools[i]);
        if (std::string why = bad_target(pools, pc, r.pools[i]); !why.empty())
          errors.add(r.pool_lines[i], "routes", "route to " + why);
      }
      if (!r.warm_from.empty()) {
        reached.insert(r.warm_from);
        if (std::string why = bad_target(pools, pc, r.warm_from); !why.empty()) {
          errors.add(r.warm_from_line, "routes", "warm_from " + why);
        } else if (!r.pools.empty() && r.pools.front() == r.warm_from) {
          errors.add(r.warm_from_line, "routes",
                     "warm_from pool '" + r.warm_from +
                         "' is also where the route's keys are read (the cold side); expected "
                         "the pool that holds them warm");
        }
      }
      if (r.shadow.empty()) continue;
      reached.insert(r.shadow);
      if (std::string why = bad_target(pools, pc, r.shadow); !why.empty()) {
        errors.add(r.shadow_line, "routes", "shadow " + why);
      } else if (std::find(r.pools.begin(), r.pools.end(), r.shadow) != r.pools.end()) {
        errors.add(r.shadow_line, "routes",
                   "shadow pool '" + r.shadow +
                       "' is also where the route's keys go; expected another pool");
      }
    }
    if (pc.gutter.empty()) continue;
    reached.insert(pc.gutter);
    if (std::string why = bad_target(pools, pc, pc.gutter); !why.empty()) {
      errors.add(pc.gutter_line, "gutter", why);
    } else if (!pools.at(pc.gutter)->gutter.empty()) {
      errors.add(pc.gutter_line, "gutter",
                 "pool '" + pc.gutter +
                     "' has a gutter of its own; expected a pool without "
                     "one (gutters do not chain)");
    }
  }
  for (const ParsedPool& p : parsed) {
    if (p.listen_given || reached.contains(p.pool.name)) continue;
    errors.add(p.pool.line, "listen",
               "pool '" + p.pool.name +
                   "' has no listen address and no route reaches it; expected \"listen: "
                   "host:port\" or \"listen: /path/to.sock [permissions]\"");
  }
}

}  // namespace memshard::conf::detail
