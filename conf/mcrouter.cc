// Reading mcrouter's JSON config: its pools, and each route handle as what
// it does with reads and with writes (mcrouter_internal.h's Sem), then the
// two put together as a memshard pool, zone copies or a gutter, or refused.
// The facts about each handle are from mcrouter's sources (mcrouter/routes/,
// mcrouter/lib/routes/); docs/mcrouter.md has the table.
#include "conf/mcrouter.h"

#include <algorithm>
#include <cctype>
#include <cstdlib>
#include <map>
#include <set>

#include "conf/json.h"
#include "conf/mcrouter_internal.h"

namespace memshard::conf {
namespace mcrouter {

std::string Group::key() const {
  std::string k = std::to_string(timeout_ms) + ";";
  for (const Server* s : servers) k += s->address + ",";
  return k;
}

std::string_view policy_name(WritePolicy p) {
  return write_policy_name(p);
}

std::string Sem::key() const {
  std::string k;
  switch (kind) {
    case Kind::hashed: {
      k = "H" + std::to_string(static_cast<int>(hashing.func)) + "|" + hashing.salt + "|";
      for (const auto& w : hashing.weights) k += w + ",";
      k += "|" + group.key();
      break;
    }
    case Kind::one_of:
      k = std::string("O") + (on_miss ? "m" : "") + "(" + group.key() + ")";
      break;
    case Kind::all_of:
      k = "A" + std::string(policy_name(policy)) + "(" + group.key() + ")";
      break;
    case Kind::chain:
    case Kind::fanout:
      k = kind == Kind::chain ? std::string("C") + (on_miss ? "m" : "")
                              : "F" + std::string(policy_name(policy));
      k += "(";
      for (const Sem& p : parts) k += p.key() + ";";
      k += ")";
      break;
    case Kind::error:
      k = "E";
      break;
    case Kind::null:
      k = "N";
      break;
    case Kind::warm:
      k = "W" + std::to_string(warm_ttl) + "(";
      for (const Sem& p : parts) k += p.key() + ";";
      k += ")";
      break;
  }
  if (ttl) k += "~" + std::to_string(*ttl);
  if (ttl_set) k += "=" + std::to_string(*ttl_set);
  return k;
}

std::string PoolSpec::key() const {
  std::string k =
      group.key() + "|" + std::to_string(static_cast<int>(hashing.func)) + "|" + hashing.salt + "|";
  for (const auto& w : hashing.weights) k += w + ",";
  k += "|" + std::to_string(plain_hash) + std::to_string(replicas) +
       std::string(policy_name(policy)) + std::to_string(read_failover_on_miss) +
       std::to_string(eject) + "|" + gutter + "|" + std::to_string(gutter_ttl) + "|" +
       std::to_string(ttl_max) + "|" + (ttl_set ? std::to_string(*ttl_set) : "-");
  return k;
}

namespace {

using json::Value;

enum class Cls { read, write };

std::string cls_name(Cls c) {
  return c == Cls::read ? "reads" : "writes";
}

bool plain_key(std::string_view key) {
  if (key.empty()) return false;
  for (char c : key) {
    if (!std::isalnum(static_cast<unsigned char>(c)) && c != '_' && c != '-') return false;
  }
  return true;
}

std::string member_path(const std::string& base, std::string_view key) {
  if (plain_key(key)) return base.empty() ? std::string(key) : base + "." + std::string(key);
  std::string quoted = "[\"";
  for (char c : key) {
    if (c == '"' || c == '\\') quoted += '\\';
    quoted += c;
  }
  return base + quoted + "\"]";
}

std::string item_path(const std::string& base, size_t i) {
  return base + "[" + std::to_string(i) + "]";
}

std::string quoted(std::string_view s) {
  return "\"" + std::string(s) + "\"";
}

// A reference to a route handle: a JSON value, or a piece of a short form
// ("HashRoute|Pool|A" gives "Pool|A" to HashRoute), which has no value of
// its own.
struct Ref {
  const Value* value = nullptr;
  std::string text;  // the string form (a string value's, or the piece)
  Origin origin;

  bool is_text() const { return value == nullptr || value->is_string(); }
  bool is_object() const { return value != nullptr && value->is_object(); }
};

Ref ref_of(const Value& v, std::string path) {
  return Ref{&v, v.is_string() ? v.text : std::string(), Origin{std::move(path), v.line}};
}

Ref piece(const Ref& r, std::string text) {
  return Ref{nullptr, std::move(text), r.origin};
}

// One entry of a children list: a server (from Pool|A) or a route handle.
struct Child {
  Ref route;
  const Server* server = nullptr;
  const SourcePool* pool = nullptr;
};

// The operations of OperationSelectorRoute, by the class memshard routes
// them as: reads go to a key's copy (and fail over), writes to every copy.
const std::vector<std::string_view>& read_ops() {
  static const std::vector<std::string_view> ops = {"get",  "gets",    "gat",
                                                    "gats", "metaget", "lease-get"};
  return ops;
}
const std::vector<std::string_view>& write_ops() {
  static const std::vector<std::string_view> ops = {"set",     "add",   "replace",  "append",
                                                    "prepend", "cas",   "delete",   "incr",
                                                    "decr",    "touch", "lease-set"};
  return ops;
}

// Why an option of a handle or pool is refused, where it is one mcrouter has.
const std::map<std::string_view, std::string_view>& option_reasons() {
  static const std::map<std::string_view, std::string_view> reasons = {
      {"shadows",
       "mcrouter's shadows copy the requests of a range of server indexes and key fractions; "
       "memshard's shadow is a route's (shadow:, shadow_share:), by a share of the keys"},
      {"shadow_policy", "goes with shadows, which memshard does not map"},
      {"rates", "memshard does not rate-limit requests"},
      {"slow_warmup", "memshard does not hold back a server that just came up"},
      {"max_outstanding",
       "memshard bounds what waits on a server connection (server_queue_limit), not what is "
       "in flight per route"},
      {"shard_splits", "memshard does not split shards"},
      {"split_shard_fanout", "memshard does not split shards"},
      {"bucketize", "memshard hashes keys, not buckets"},
      {"client_fanout", "memshard hashes keys, not buckets"},
      {"useBucketHashSelector", "memshard hashes keys, not buckets"},
      {"distribution_enabled", "memshard does not distribute across regions"},
      {"axonlog", "memshard has no axon log"},
      {"pool_id", "memshard has no tier routes"},
      {"failover_errors",
       "memshard fails over on every error (a timeout, a refused connection, a SERVER_ERROR) "
       "and cannot choose which"},
      {"failover_policy", "memshard tries the next copy in order and has no other policy"},
      {"failover_limit", "memshard does not rate-limit failover"},
      {"enable_failure_domains", "memshard has no failure domains"},
      {"hostnames", "memshard connects to the addresses in servers"},
      {"services", "memshard connects to the addresses in servers"},
      {"use_ssl", "a pool's TLS is memshard's server_tls; set it in the converted YAML"},
      {"security_mech", "a pool's TLS is memshard's server_tls; set it in the converted YAML"},
      {"qos", "memshard does not mark its packets"},
      {"tko_tracker", "memshard ejects servers by auto_eject_hosts and auto_eject_max"},
      {"additional_fanout", "memshard opens server_connections per worker to each server"},
      {"hash",
       "mcrouter no longer reads a pool's hash (a PoolRoute's hash says how its keys are "
       "hashed): move it to the PoolRoute"},
      {"hash_salt", "mcrouter no longer reads it from a pool: set salt in the PoolRoute's hash"},
      {"hash_weights", "mcrouter no longer reads it from a pool: it reads the pool's weights"},
  };
  return reasons;
}

class Mapper {
 public:
  Mapper(const std::string& file, const Value& root) : file_(file), root_(root) {}

  void run();

  std::vector<ConfigError> errors;
  Mapping mapping;

 private:
  void refuse(const Origin& at, std::string message) {
    errors.push_back(ConfigError{file_, at.line, at.path, std::move(message)});
  }

  // Options: each member of `obj` must be one of `allowed`; a known mcrouter
  // option memshard does not map is refused with its reason.
  bool check_options(const Ref& r, std::string_view handle,
                     std::initializer_list<std::string_view> allowed);

  // Pools.
  const SourcePool* pool_named(const std::string& name, const Origin& at);
  const SourcePool* inline_pool(const Ref& r);
  const SourcePool* parse_pool(const std::string& name, const Value& body, const Origin& at);
  bool merged_members(const std::string& name, const Value& body, const Origin& at,
                      std::vector<std::pair<std::string, Ref>>& out, std::set<std::string>& seen);
  bool parse_servers(const Ref& r, SourcePool& pool);

  // Children lists (mcrouter's createList).
  bool children(const Ref& r, std::vector<Child>& out, int depth = 0);
  bool children_of(const Ref& r, std::string_view handle, std::vector<Child>& out);
  std::optional<Group> group_of(const std::vector<Child>& kids, const Ref& r);

  // Route handles.
  std::optional<Sem> eval(const Ref& r, Cls cls);
  std::optional<Sem> eval_type(const std::string& type, const Ref& r, bool has_def, Cls cls);
  std::optional<Sem> pool_route(const Ref& r, bool has_def);
  std::optional<Sem> hash_route(const Ref& r, bool has_def);
  std::optional<Sem> all_route(const std::string& type, const Ref& r, bool has_def, Cls cls);
  bool required_children(const Ref& r, bool has_def, std::string_view handle, std::string_view none,
                         std::vector<Child>& kids);
  std::optional<bool> servers_or_routes(const std::vector<Child>& kids, const Ref& r,
                                        std::string_view handle);
  std::optional<Sem> chain_of(const std::vector<Child>& kids, Sem s, Cls cls);
  std::optional<Sem> over_pool(const std::vector<Child>& kids, const Ref& r, Sem s,
                               std::string_view handle, Cls cls, std::string_view on_write);
  std::optional<Sem> failover_route(const Ref& r, bool has_def, Cls cls);
  std::optional<Sem> latest_route(const Ref& r, bool has_def, Cls cls);
  std::optional<Sem> miss_failover_route(const Ref& r, bool has_def, Cls cls);
  std::optional<Sem> failover_with_exptime(const Ref& r, bool has_def, Cls cls);
  std::optional<Sem> modify_exptime(const Ref& r, bool has_def, Cls cls);
  std::optional<Sem> operation_selector(const Ref& r, bool has_def, Cls cls);
  std::optional<Sem> error_route(const Ref& r, bool has_def);
  std::optional<Sem> warm_up(const Ref& r, Cls cls);
  std::optional<uint32_t> seconds_of(const Value& v, const Origin& at, std::string_view what);
  std::optional<Target> warm_target(const Sem& read, const Sem& write, const Origin& at);
  std::optional<Hashing> hashing_of(const Value& spec, const Origin& at, Hashing start,
                                    size_t servers, bool weights_allowed);

  // Reads and writes together.
  std::optional<Target> target_of(const Ref& r);
  std::optional<Target> combine(const Sem& read, const Sem& write, const Origin& at);
  std::optional<std::string> pool_of(const Sem& read, const Sem& write, const Origin& at);
  std::string add_pool(PoolSpec spec);
  bool no_ttl(const Sem& s, const Origin& at);

  // The top level.
  void scan_names(const Value& v, const std::string& path);
  void root_routes(const Ref& route);

  const std::string& file_;
  const Value& root_;
  std::map<std::string, SourcePool> pools_;                           // parsed, by name
  std::set<std::string> bad_pools_;                                   // refused already
  std::map<std::string, std::pair<const Value*, Origin>> pool_defs_;  // by name
  std::map<std::string, Ref> names_;                                  // named route handles
  std::map<std::string, std::string> pool_names_;  // PoolSpec key -> memshard name
  std::set<std::string> used_names_;
  int depth_ = 0;
};

bool Mapper::check_options(const Ref& r, std::string_view handle,
                           std::initializer_list<std::string_view> allowed) {
  if (!r.is_object()) return true;
  bool ok = true;
  const Value& obj = *r.value;
  for (size_t i = 0; i < obj.members.size(); ++i) {
    const std::string& key = obj.members[i].first;
    if (key == "type" || key == "name") continue;
    if (std::find(allowed.begin(), allowed.end(), key) != allowed.end()) continue;
    const Origin at{member_path(r.origin.path, key), obj.key_lines[i]};
    const auto reason = option_reasons().find(key);
    if (reason != option_reasons().end()) {
      refuse(at, std::string(handle) + "'s " + key +
                     " has no meaning in memshard: " + std::string(reason->second));
    } else {
      refuse(at, "an option " + std::string(handle) +
                     " has that memshard does not map (it knows only what docs/mcrouter.md "
                     "lists)");
    }
    ok = false;
  }
  return ok;
}

// ---- pools ----

bool Mapper::merged_members(const std::string& name, const Value& body, const Origin& at,
                            std::vector<std::pair<std::string, Ref>>& out,
                            std::set<std::string>& seen) {
  if (!body.is_object()) {
    refuse(at, "expected pool '" + name + "' as an object with servers, found " + body.describe());
    return false;
  }
  if (!seen.insert(name).second) {
    refuse(at, "pool '" + name + "' inherits from itself (a cycle of inherit)");
    return false;
  }
  for (size_t i = 0; i < body.members.size(); ++i) {
    const auto& [key, value] = body.members[i];
    if (key == "inherit") continue;
    const bool have =
        std::any_of(out.begin(), out.end(), [&](const auto& m) { return m.first == key; });
    if (!have) out.emplace_back(key, ref_of(value, member_path(at.path, key)));
  }
  const Value* parent = body.get("inherit");
  if (parent == nullptr) return true;
  const Origin pat{member_path(at.path, "inherit"), parent->line};
  if (!parent->is_string()) {
    refuse(pat, "expected the name of a pool to inherit from, found " + parent->describe());
    return false;
  }
  const auto def = pool_defs_.find(parent->text);
  if (def == pool_defs_.end()) {
    refuse(pat, "no pool named '" + parent->text + "' in pools");
    return false;
  }
  return merged_members(parent->text, *def->second.first, def->second.second, out, seen);
}

bool parse_port(std::string_view text, uint16_t& port) {
  if (text.empty() || text.size() > 5) return false;
  for (char c : text)
    if (!std::isdigit(static_cast<unsigned char>(c))) return false;
  const long n = std::strtol(std::string(text).c_str(), nullptr, 10);
  if (n < 1 || n > 65535) return false;
  port = static_cast<uint16_t>(n);
  return true;
}

// mcrouter's AccessPoint: host:port, [v6]:port or unix:/path, then
// optionally :protocol, :security and :compression.
std::string server_address(std::string_view text, std::string& why) {
  std::string host;
  std::string_view rest = text;
  bool unix_socket = false;
  if (rest.starts_with("[")) {
    const size_t close = rest.find(']');
    if (close == std::string_view::npos) {
      why = "an IPv6 address without its closing ']'";
      return {};
    }
    host = std::string(rest.substr(1, close - 1));
    rest.remove_prefix(close + 1);
  } else {
    if (rest.starts_with("unix:")) {
      unix_socket = true;
      rest.remove_prefix(5);
    }
    const size_t colon = rest.find(':');
    host = std::string(rest.substr(0, colon));
    rest = colon == std::string_view::npos ? std::string_view() : rest.substr(colon);
  }
  if (host.empty()) {
    why = "no host";
    return {};
  }
  std::vector<std::string_view> parts;
  while (!rest.empty()) {
    if (rest[0] != ':') {
      why = "expected ':' after the host";
      return {};
    }
    rest.remove_prefix(1);
    const size_t colon = rest.find(':');
    parts.push_back(rest.substr(0, colon));
    rest = colon == std::string_view::npos ? std::string_view() : rest.substr(colon);
  }
  uint16_t port = 0;
  size_t next = 0;
  if (!unix_socket) {
    if (parts.empty() || !parse_port(parts[0], port)) {
      why = "expected host:port with a port from 1 to 65535";
      return {};
    }
    next = 1;
  }
  if (parts.size() > next + 3) {
    why = "too many ':' parts (host:port:protocol:security:compression at most)";
    return {};
  }
  if (parts.size() > next && !parts[next].empty() && parts[next] != "ascii") {
    why = "protocol " + quoted(parts[next]) +
          ": memshard speaks memcached's text protocol (ascii) to its servers";
    return {};
  }
  if (parts.size() > next + 1 && !parts[next + 1].empty() && parts[next + 1] != "plain") {
    why = "security " + quoted(parts[next + 1]) +
          ": a pool's TLS is memshard's server_tls, for every server of a pool; set it in the "
          "converted YAML";
    return {};
  }
  if (parts.size() > next + 2 && !parts[next + 2].empty() && parts[next + 2] != "notcompressed") {
    why = "compression " + quoted(parts[next + 2]) + ": memshard does not compress values";
    return {};
  }
  if (unix_socket) {
    if (host.find(':') != std::string::npos || host.find(' ') != std::string::npos) {
      why = "a unix socket path memshard cannot write in a server line (no ':' or space)";
      return {};
    }
    return host;
  }
  return host + ":" + std::to_string(port);
}

bool Mapper::parse_servers(const Ref& r, SourcePool& pool) {
  if (r.value == nullptr || !r.value->is_array()) {
    refuse(r.origin, "expected servers as a list of \"host:port\" strings, found " +
                         (r.value ? r.value->describe() : "nothing"));
    return false;
  }
  bool ok = true;
  std::map<std::string, Origin> seen;
  for (size_t i = 0; i < r.value->items.size(); ++i) {
    const Value& s = r.value->items[i];
    const Origin at{item_path(r.origin.path, i), s.line};
    if (!s.is_string()) {
      refuse(at, "expected a \"host:port\" string, found " + s.describe() +
                     " (a server written as a route handle has no meaning in memshard)");
      ok = false;
      continue;
    }
    std::string why;
    std::string address = server_address(s.text, why);
    if (address.empty()) {
      refuse(at, "server " + quoted(s.text) + ": " + why);
      ok = false;
      continue;
    }
    std::string lower = address;
    std::transform(lower.begin(), lower.end(), lower.begin(),
                   [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
    if (const auto [first, fresh] = seen.emplace(lower, at); !fresh) {
      refuse(at, "server " + quoted(s.text) + " is listed already at " + first->second.path +
                     "; memshard lists each memcached once per pool (mcrouter would give it "
                     "two shares of the keys)");
      ok = false;
      continue;
    }
    pool.servers.push_back(Server{std::move(address), at});
  }
  if (ok && pool.servers.empty()) {
    refuse(r.origin,
           "pool '" + pool.name + "' has no servers (mcrouter answers its keys with an error)");
    ok = false;
  }
  return ok;
}

bool is_weight(const std::string& text) {
  char* end = nullptr;
  const double w = std::strtod(text.c_str(), &end);
  return end != text.c_str() && *end == '\0' && w >= 0.0 && w <= 1.0;
}

const SourcePool* Mapper::parse_pool(const std::string& name, const Value& body, const Origin& at) {
  if (const auto it = pools_.find(name); it != pools_.end()) return &it->second;
  if (bad_pools_.count(name)) return nullptr;
  std::vector<std::pair<std::string, Ref>> members;
  std::set<std::string> seen;
  SourcePool pool;
  pool.name = name;
  pool.origin = at;
  bool ok = merged_members(name, body, at, members, seen);
  const Ref* servers = nullptr;
  const Ref* weights = nullptr;
  const Ref* timeout = nullptr;
  const Ref* connect_timeout = nullptr;
  for (const auto& [key, ref] : members) {
    const Origin& kat = ref.origin;
    if (key == "servers") {
      servers = &ref;
    } else if (key == "weights") {
      weights = &ref;
    } else if (key == "server_timeout") {
      timeout = &ref;
    } else if (key == "connect_timeout") {
      connect_timeout = &ref;
    } else if (key == "protocol") {
      if (!ref.value->is_string() || ref.value->text != "ascii") {
        refuse(kat, "protocol " + ref.value->describe() +
                        ": memshard speaks memcached's text protocol (ascii) to its servers");
        ok = false;
      }
    } else if (key == "keep_routing_prefix" || key == "region" || key == "cluster" ||
               key == "name" || key == "type" || key == "failure_domains" || key == "tags" ||
               key == "error_on_empty" || key == "disable_request_deadline_check") {
      // Labels, or settings of what memshard refuses elsewhere: no effect
      // on where keys go (docs/mcrouter.md, "Pools").
    } else {
      const auto reason = option_reasons().find(key);
      refuse(kat,
             reason != option_reasons().end()
                 ? "a pool's " + key + " has no meaning in memshard: " + std::string(reason->second)
                 : "a pool option memshard does not map (it knows only what "
                   "docs/mcrouter.md lists)");
      ok = false;
    }
  }
  if (servers == nullptr) {
    refuse(at, "pool '" + name + "' has no servers");
    ok = false;
  } else if (!parse_servers(*servers, pool)) {
    ok = false;
  }
  auto millis = [&](const Ref* r, int& out) {
    const Value& v = *r->value;
    char* end = nullptr;
    const long n = v.is_number() ? std::strtol(v.text.c_str(), &end, 10) : 0;
    if (!v.is_number() || *end != '\0' || n < 1 || n > 2147483647) {
      refuse(r->origin, "expected milliseconds, a whole number from 1, found " + v.describe());
      ok = false;
      return;
    }
    out = static_cast<int>(n);
  };
  if (timeout) millis(timeout, pool.timeout_ms);
  if (connect_timeout) {
    int connect = pool.timeout_ms;
    millis(connect_timeout, connect);
    if (ok && connect != pool.timeout_ms) {
      refuse(connect_timeout->origin,
             "memshard has one timeout per pool (its timeout), for connecting and answering "
             "alike; a connect_timeout other than server_timeout (" +
                 std::to_string(pool.timeout_ms) + ") has no meaning in memshard");
      ok = false;
    }
  }
  if (weights) {
    const Value& w = *weights->value;
    pool.weights_origin = weights->origin;
    if (!w.is_array() || w.items.size() != pool.servers.size()) {
      refuse(weights->origin,
             "expected a list of one weight per server (" + std::to_string(pool.servers.size()) +
                 "), found " +
                 (w.is_array() ? std::to_string(w.items.size()) + " weights" : w.describe()));
      ok = false;
    } else {
      for (size_t i = 0; i < w.items.size(); ++i) {
        if (!w.items[i].is_number() || !is_weight(w.items[i].text)) {
          refuse(Origin{item_path(weights->origin.path, i), w.items[i].line},
                 "expected a weight from 0 to 1, found " + w.items[i].describe());
          ok = false;
        } else {
          pool.weights.push_back(w.items[i].text);
        }
      }
    }
  }
  if (!ok) {
    bad_pools_.insert(name);
    return nullptr;
  }
  return &pools_.emplace(name, std::move(pool)).first->second;
}

const SourcePool* Mapper::pool_named(const std::string& name, const Origin& at) {
  const auto def = pool_defs_.find(name);
  if (def == pool_defs_.end()) {
    refuse(at, "no pool named '" + name + "' in pools");
    return nullptr;
  }
  return parse_pool(name, *def->second.first, def->second.second);
}

const SourcePool* Mapper::inline_pool(const Ref& r) {
  const Value* name = r.value->get("name");
  if (name == nullptr || !name->is_string()) {
    refuse(r.origin, "an inline pool needs a string name");
    return nullptr;
  }
  if (!pool_defs_.count(name->text)) pool_defs_.emplace(name->text, std::pair{r.value, r.origin});
  return pool_named(name->text, r.origin);
}

// ---- children lists ----

bool Mapper::children(const Ref& r, std::vector<Child>& out, int depth) {
  if (depth > 32) {
    refuse(r.origin, "children nested too deep (a named list that names itself?)");
    return false;
  }
  if (r.value != nullptr && r.value->is_array()) {
    bool ok = true;
    for (size_t i = 0; i < r.value->items.size(); ++i)
      ok = children(ref_of(r.value->items[i], item_path(r.origin.path, i)), out, depth + 1) && ok;
    return ok;
  }
  if (r.is_object()) {
    const Value* type = r.value->get("type");
    if (type != nullptr && type->is_string() && type->text == "Pool") {
      const SourcePool* pool = inline_pool(r);
      if (pool == nullptr) return false;
      for (const Server& s : pool->servers) out.push_back(Child{r, &s, pool});
      return true;
    }
    out.push_back(Child{r});
    return true;
  }
  if (r.is_text()) {
    if (r.text.empty()) return true;  // mcrouter: an optional child left out
    if (const auto named = names_.find(r.text); named != names_.end())
      return children(named->second, out, depth + 1);
    if (r.text.starts_with("Pool|")) {
      const SourcePool* pool = pool_named(r.text.substr(5), r.origin);
      if (pool == nullptr) return false;
      for (const Server& s : pool->servers) out.push_back(Child{r, &s, pool});
      return true;
    }
    out.push_back(Child{r});
    return true;
  }
  refuse(r.origin, "expected a route handle or a list of them, found " + r.value->describe());
  return false;
}

bool Mapper::children_of(const Ref& r, std::string_view handle, std::vector<Child>& out) {
  if (r.is_object()) {
    const Value* kids = r.value->get("children");
    if (kids == nullptr) {
      refuse(r.origin, std::string(handle) +
                           " without children: mcrouter answers every request "
                           "with NullRoute's reply, which memshard has no "
                           "route for");
      return false;
    }
    return children(ref_of(*kids, member_path(r.origin.path, "children")), out);
  }
  return children(r, out);
}

std::optional<Group> Mapper::group_of(const std::vector<Child>& kids, const Ref& r) {
  Group g;
  std::vector<std::string> names;
  for (const Child& c : kids) {
    g.servers.push_back(c.server);
    if (names.empty() || names.back() != c.pool->name) names.push_back(c.pool->name);
  }
  g.timeout_ms = kids.front().pool->timeout_ms;
  for (const Child& c : kids) {
    if (c.pool->timeout_ms != g.timeout_ms) {
      refuse(r.origin, "its servers come from pools with different server_timeout (" +
                           std::to_string(g.timeout_ms) + " and " +
                           std::to_string(c.pool->timeout_ms) +
                           "); a memshard pool has one timeout");
      return std::nullopt;
    }
  }
  std::set<std::string> addresses;
  for (const Server* s : g.servers) {
    if (!addresses.insert(s->address).second) {
      refuse(r.origin, "server " + s->address +
                           " is among its children twice; memshard lists each memcached once "
                           "per pool");
      return std::nullopt;
    }
  }
  for (const auto& n : names) g.name += (g.name.empty() ? "" : "+") + n;
  return g;
}

// ---- route handles ----

std::optional<Sem> Mapper::eval(const Ref& r, Cls cls) {
  if (depth_ > 64) {
    refuse(r.origin, "route handles nested too deep (a named handle that names itself?)");
    return std::nullopt;
  }
  struct Depth {
    int& d;
    explicit Depth(int& x) : d(x) { ++d; }
    ~Depth() { --d; }
  } guard(depth_);
  if (r.is_text()) {
    if (const auto named = names_.find(r.text); named != names_.end()) {
      return eval(named->second, cls);
    }
    const size_t bar = r.text.find('|');
    const std::string type = r.text.substr(0, bar);
    if (bar == std::string::npos) return eval_type(type, piece(r, ""), false, cls);
    return eval_type(type, piece(r, r.text.substr(bar + 1)), true, cls);
  }
  if (r.is_object()) {
    const Value* type = r.value->get("type");
    if (type == nullptr || !type->is_string()) {
      refuse(r.origin, "expected a route handle with a string \"type\"");
      return std::nullopt;
    }
    return eval_type(type->text, r, false, cls);
  }
  refuse(r.origin,
         "expected a route handle (an object with a type, or a string such as "
         "\"PoolRoute|A\"), found " +
             (r.value ? r.value->describe() : std::string("nothing")));
  return std::nullopt;
}

std::optional<Sem> Mapper::eval_type(const std::string& type, const Ref& r, bool has_def, Cls cls) {
  std::optional<Sem> s;
  if (type == "PoolRoute") {
    s = pool_route(r, has_def);
  } else if (type == "HashRoute") {
    s = hash_route(r, has_def);
  } else if (type == "AllSyncRoute" || type == "AllAsyncRoute" || type == "AllInitialRoute" ||
             type == "AllFastestRoute" || type == "AllMajorityRoute") {
    s = all_route(type, r, has_def, cls);
  } else if (type == "FailoverRoute") {
    s = failover_route(r, has_def, cls);
  } else if (type == "LatestRoute") {
    s = latest_route(r, has_def, cls);
  } else if (type == "MissFailoverRoute") {
    s = miss_failover_route(r, has_def, cls);
  } else if (type == "FailoverWithExptimeRoute") {
    s = failover_with_exptime(r, has_def, cls);
  } else if (type == "ModifyExptimeRoute") {
    s = modify_exptime(r, has_def, cls);
  } else if (type == "OperationSelectorRoute") {
    s = operation_selector(r, has_def, cls);
  } else if (type == "ErrorRoute") {
    s = error_route(r, has_def);
  } else if (type == "NullRoute" || type == "DevNullRoute") {
    // No options: mcrouter reads none (a DevNullRoute only counts too).
    if (check_options(r, type, {})) {
      s = Sem();
      s->kind = Kind::null;
    }
  } else if (type == "WarmUpRoute") {
    s = warm_up(r, cls);
  } else if (type == "PrefixSelectorRoute") {
    refuse(r.origin,
           "PrefixSelectorRoute is mcrouter's top-level route only (a route or an "
           "alias's route), and memshard's routes by prefix do not nest");
  } else if (type == "Pool") {
    refuse(r.origin, "Pool|" + r.text +
                         " is a list of servers, where one route handle is expected (a "
                         "PoolRoute hashes keys over a pool's servers)");
  } else if (type.empty()) {
    refuse(r.origin, "expected a route handle, found an empty string");
  } else if (type.ends_with("Route") || type == "Pool") {
    refuse(r.origin, type +
                         " is a route handle memshard does not map (docs/mcrouter.md lists "
                         "those it does, and why not the others)");
  } else {
    refuse(r.origin,
           "no route handle or named handle is called " + quoted(r.is_text() ? r.text : type));
  }
  if (s) {
    if (s->origin.path.empty()) s->origin = r.origin;
    if (s->what.empty()) s->what = has_def ? type + "|" + r.text : type;
  }
  return s;
}

std::optional<Hashing> Mapper::hashing_of(const Value& spec, const Origin& at, Hashing h,
                                          size_t servers, bool weights_allowed) {
  auto func_of = [&](const Value& v, const Origin& vat) -> bool {
    if (!v.is_string()) {
      refuse(vat, "expected a hash function name, found " + v.describe());
      return false;
    }
    if (v.text == "Ch3") {
      h.func = HashFunc::ch3;
    } else if (v.text == "Crc32") {
      h.func = HashFunc::crc32;
    } else if (v.text == "WeightedCh3") {
      h.func = HashFunc::wch3;
    } else {
      refuse(vat, "hash function " + quoted(v.text) +
                      ": memshard places keys as mcrouter's Ch3, WeightedCh3 and Crc32 do, and "
                      "no other");
      return false;
    }
    return true;
  };
  if (spec.is_string()) {
    if (!func_of(spec, at)) return std::nullopt;
  } else {
    bool ok = true;
    for (size_t i = 0; i < spec.members.size(); ++i) {
      const auto& [key, v] = spec.members[i];
      const Origin kat{member_path(at.path, key), spec.key_lines[i]};
      if (key == "hash_func") {
        ok = func_of(v, kat) && ok;
      } else if (key == "salt") {
        if (!v.is_string()) {
          refuse(kat, "expected the salt as a string, found " + v.describe());
          ok = false;
        } else {
          h.salt = v.text;
        }
      } else if (key == "weights" && weights_allowed) {
        if (!v.is_array() || v.items.size() != servers) {
          refuse(kat,
                 "expected a list of one weight per server (" + std::to_string(servers) +
                     "), found " +
                     (v.is_array() ? std::to_string(v.items.size()) + " weights" : v.describe()));
          ok = false;
          continue;
        }
        h.weights.clear();
        for (size_t j = 0; j < v.items.size(); ++j) {
          if (!v.items[j].is_number() || !is_weight(v.items[j].text)) {
            refuse(Origin{item_path(kat.path, j), v.items[j].line},
                   "expected a weight from 0 to 1, found " + v.items[j].describe());
            ok = false;
          } else {
            h.weights.push_back(v.items[j].text);
          }
        }
      } else if (key == "children" || key == "type" || key == "name" || key == "error_on_empty") {
        // HashRoute's own fields, read by hash_route.
      } else {
        const auto reason = option_reasons().find(key);
        refuse(kat, reason != option_reasons().end()
                        ? "a hash's " + key +
                              " has no meaning in memshard: " + std::string(reason->second)
                        : "a hash option memshard does not map");
        ok = false;
      }
    }
    if (!ok) return std::nullopt;
  }
  if (h.func == HashFunc::wch3 && h.weights.size() != servers) {
    refuse(at, "WeightedCh3 needs a weight per server (the pool's weights, or the hash's)");
    return std::nullopt;
  }
  if (h.func != HashFunc::wch3) h.weights.clear();
  // One server takes every key whatever the hash (mcrouter's HashRoute
  // returns its only child).
  if (servers == 1) h = Hashing{};
  return h;
}

std::optional<Sem> Mapper::pool_route(const Ref& r, bool has_def) {
  const SourcePool* pool = nullptr;
  const Value* hash = nullptr;
  Origin hash_at;
  if (r.is_object()) {
    if (!check_options(r, "PoolRoute", {"pool", "hash", "asynclog", "asynclog_name"}))
      return std::nullopt;
    const Value* p = r.value->get("pool");
    if (p == nullptr) {
      refuse(r.origin, "PoolRoute without a pool");
      return std::nullopt;
    }
    const Ref pref = ref_of(*p, member_path(r.origin.path, "pool"));
    if (p->is_string()) {
      pool = pool_named(p->text, pref.origin);
    } else if (p->is_object()) {
      pool = inline_pool(pref);
    } else {
      refuse(pref.origin, "expected a pool's name or an inline pool, found " + p->describe());
      return std::nullopt;
    }
    hash = r.value->get("hash");
    hash_at = Origin{member_path(r.origin.path, "hash"), hash ? hash->line : 0};
    if (hash != nullptr && !hash->is_string() && !hash->is_object()) {
      refuse(hash_at, "expected a hash function name or object, found " + hash->describe());
      return std::nullopt;
    }
  } else {
    if (!has_def || r.text.empty()) {
      refuse(r.origin, "PoolRoute needs a pool: \"PoolRoute|A\"");
      return std::nullopt;
    }
    pool = pool_named(r.text, r.origin);
  }
  if (pool == nullptr) return std::nullopt;
  Sem s;
  s.kind = Kind::hashed;
  for (const Server& srv : pool->servers) s.group.servers.push_back(&srv);
  s.group.name = pool->name;
  s.group.timeout_ms = pool->timeout_ms;
  s.what = "PoolRoute|" + pool->name;
  // mcrouter: a pool's weights make it WeightedCh3; the PoolRoute's hash
  // then overrides what it names.
  Hashing start;
  if (!pool->weights.empty()) {
    start.func = HashFunc::wch3;
    start.weights = pool->weights;
  }
  if (hash == nullptr) {
    if (pool->servers.size() == 1) start = Hashing{};
    s.hashing = start;
    return s;
  }
  auto h = hashing_of(*hash, hash_at, start, pool->servers.size(), true);
  if (!h) return std::nullopt;
  s.hashing = *h;
  return s;
}

std::optional<Sem> Mapper::hash_route(const Ref& r, bool has_def) {
  if (!check_options(r, "HashRoute",
                     {"children", "hash_func", "salt", "weights", "error_on_empty"}))
    return std::nullopt;
  if (!r.is_object() && !has_def) {
    refuse(r.origin, "HashRoute needs children: \"HashRoute|Pool|A\"");
    return std::nullopt;
  }
  std::vector<Child> kids;
  if (!children_of(r, "HashRoute", kids)) return std::nullopt;
  if (kids.empty()) {
    Sem e;
    e.kind = Kind::error;  // mcrouter: "HashRoute with empty children" answers errors
    e.what = "HashRoute (no children)";
    return e;
  }
  for (const Child& c : kids) {
    if (c.server == nullptr) {
      refuse(c.route.origin,
             "HashRoute over route handles: memshard hashes keys over the "
             "servers of a pool (\"Pool|A\") only");
      return std::nullopt;
    }
  }
  auto group = group_of(kids, r);
  if (!group) return std::nullopt;
  Hashing h;
  if (r.is_object()) {
    auto got = hashing_of(*r.value, r.origin, h, kids.size(), true);
    if (!got) return std::nullopt;
    h = *got;
  } else if (kids.size() == 1) {
    h = Hashing{};
  }
  Sem s;
  s.kind = Kind::hashed;
  s.group = *group;
  s.hashing = h;
  s.what = "HashRoute over " + group->name;
  return s;
}

WritePolicy policy_of(const std::string& type) {
  if (type == "AllSyncRoute") return WritePolicy::all;
  if (type == "AllMajorityRoute") return WritePolicy::majority;
  return WritePolicy::first;  // AllInitial, AllFastest, AllAsync (docs/mcrouter.md)
}

std::optional<Sem> Mapper::all_route(const std::string& type, const Ref& r, bool has_def, Cls cls) {
  if (!check_options(r, type, {"children"})) return std::nullopt;
  if (!r.is_object() && !has_def) {
    refuse(r.origin, type + " needs children: \"" + type + "|Pool|A\"");
    return std::nullopt;
  }
  std::vector<Child> kids;
  if (!children_of(r, type, kids)) return std::nullopt;
  if (kids.empty()) {
    refuse(r.origin, type +
                         " without children: mcrouter answers every request with NullRoute's "
                         "reply, which memshard has no route for");
    return std::nullopt;
  }
  const bool servers = kids.front().server != nullptr;
  for (const Child& c : kids) {
    if ((c.server != nullptr) != servers) {
      refuse(r.origin, type +
                           " over both servers (Pool|A) and route handles: memshard keeps "
                           "copies either on every server of a pool or in every pool of a "
                           "route");
      return std::nullopt;
    }
  }
  if (kids.size() == 1 && !servers) return eval(kids.front().route, cls);
  Sem s;
  s.what = type;
  s.origin = r.origin;
  s.policy = policy_of(type);
  if (servers) {
    auto group = group_of(kids, r);
    if (!group) return std::nullopt;
    s.group = *group;
    s.what = type + "|Pool|" + group->name;
    if (kids.size() == 1) {
      s.kind = Kind::hashed;
      return s;
    }
    s.kind = cls == Cls::read ? Kind::one_of : Kind::all_of;
    return s;
  }
  s.kind = cls == Cls::read ? Kind::chain : Kind::fanout;
  for (const Child& c : kids) {
    auto part = eval(c.route, cls);
    if (!part) return std::nullopt;
    s.parts.push_back(std::move(*part));
  }
  return s;
}

// The children of a route that cannot do without: its object's, or its
// default's (`Handle|Pool|A`); refused with `none` when there are none.
bool Mapper::required_children(const Ref& r, bool has_def, std::string_view handle,
                               std::string_view none, std::vector<Child>& kids) {
  if (!r.is_object() && !has_def) {
    refuse(r.origin,
           std::string(handle) + " needs children: \"" + std::string(handle) + "|Pool|A\"");
    return false;
  }
  if (!children_of(r, handle, kids)) return false;
  if (kids.empty()) {
    refuse(r.origin, std::string(none));
    return false;
  }
  return true;
}

// Whether a failover's children are all servers (of one pool: group_of)
// or all route handles; refused (nullopt) when mixed.
std::optional<bool> Mapper::servers_or_routes(const std::vector<Child>& kids, const Ref& r,
                                              std::string_view handle) {
  const bool servers = kids.front().server != nullptr;
  for (const Child& c : kids) {
    if ((c.server != nullptr) != servers) {
      refuse(r.origin, std::string(handle) +
                           " over both servers and route handles has no meaning in memshard");
      return std::nullopt;
    }
  }
  return servers;
}

// `s` over the servers of one pool (the children): one server is the
// pool's own placement (hashed); reads over more go to any one of them
// (one_of), and writes over more are refused with `on_write` (none
// refused when it is empty).
std::optional<Sem> Mapper::over_pool(const std::vector<Child>& kids, const Ref& r, Sem s,
                                     std::string_view handle, Cls cls, std::string_view on_write) {
  auto group = group_of(kids, r);
  if (!group) return std::nullopt;
  s.group = *group;
  s.what = std::string(handle) + "|Pool|" + group->name;
  if (kids.size() == 1) {
    s.kind = Kind::hashed;
    return s;
  }
  if (cls == Cls::write && !on_write.empty()) {
    refuse(r.origin, std::string(on_write));
    return std::nullopt;
  }
  s.kind = Kind::one_of;
  return s;
}

// `s` as a chain over the children's routes, each tried after the one
// before it fails (or misses, with s.on_miss).
std::optional<Sem> Mapper::chain_of(const std::vector<Child>& kids, Sem s, Cls cls) {
  s.kind = Kind::chain;
  for (const Child& c : kids) {
    auto part = eval(c.route, cls);
    if (!part) return std::nullopt;
    s.parts.push_back(std::move(*part));
  }
  return s;
}

std::optional<Sem> Mapper::failover_route(const Ref& r, bool has_def, Cls cls) {
  if (!check_options(r, "FailoverRoute", {"children", "failover_tag", "enable_lease_pairing"}))
    return std::nullopt;
  if (r.is_object()) {
    for (const char* flag : {"failover_tag", "enable_lease_pairing"}) {
      const Value* v = r.value->get(flag);
      if (v != nullptr && !(v->is_bool() && v->text == "false")) {
        refuse(Origin{member_path(r.origin.path, flag), v->line},
               std::string(flag) +
                   " marks failed-over requests for mcrouter's leases and "
                   "tags, which memshard has not; expected false");
        return std::nullopt;
      }
    }
  }
  std::vector<Child> kids;
  if (!required_children(r, has_def, "FailoverRoute",
                         "FailoverRoute without children: mcrouter answers with NullRoute's "
                         "reply, which memshard has no route for",
                         kids))
    return std::nullopt;
  const std::optional<bool> all_servers = servers_or_routes(kids, r, "FailoverRoute");
  if (!all_servers) return std::nullopt;
  const bool servers = *all_servers;
  if (kids.size() == 1 && !servers) return eval(kids.front().route, cls);
  Sem s;
  s.origin = r.origin;
  if (servers) {
    return over_pool(kids, r, std::move(s), "FailoverRoute", cls,
                     "FailoverRoute over a pool's servers writes every key to its first "
                     "server (the next on an error); memshard places each key by its hash, "
                     "or on every server of a replicated pool");
  }
  s.what = "FailoverRoute";
  return chain_of(kids, std::move(s), cls);
}

std::optional<Sem> Mapper::latest_route(const Ref& r, bool has_def, Cls cls) {
  if (!check_options(r, "LatestRoute",
                     {"children", "failover_count", "salt", "thread_local_failover"}))
    return std::nullopt;
  std::vector<Child> kids;
  if (!required_children(r, has_def, "LatestRoute",
                         "LatestRoute without children has no meaning in memshard", kids))
    return std::nullopt;
  for (const Child& c : kids) {
    if (c.server == nullptr) {
      refuse(c.route.origin,
             "LatestRoute over route handles: memshard reads any copy of a "
             "replicated pool's servers (LatestRoute|Pool|A), not of routes");
      return std::nullopt;
    }
  }
  return over_pool(kids, r, Sem{}, "LatestRoute", cls,
                   "LatestRoute writes each key to servers each mcrouter instance picks for "
                   "itself, whatever the key; memshard places keys by their hash (use "
                   "LatestRoute for reads only, beside writes to every server)");
}

std::optional<Sem> Mapper::miss_failover_route(const Ref& r, bool has_def, Cls cls) {
  if (!check_options(r, "MissFailoverRoute", {"children", "return_best_on_error"}))
    return std::nullopt;
  std::vector<Child> kids;
  if (!required_children(r, has_def, "MissFailoverRoute",
                         "MissFailoverRoute without children has no meaning in memshard", kids))
    return std::nullopt;
  const std::optional<bool> all_servers = servers_or_routes(kids, r, "MissFailoverRoute");
  if (!all_servers) return std::nullopt;
  const bool servers = *all_servers;
  if (kids.size() == 1 && !servers) return eval(kids.front().route, cls);
  if (cls == Cls::write && kids.size() > 1) {
    refuse(r.origin,
           "MissFailoverRoute writes to its first child only (and fails deletes "
           "over on a miss); memshard writes every copy of a key. Use it for reads "
           "(an OperationSelectorRoute's get) beside writes to every child");
    return std::nullopt;
  }
  Sem s;
  s.origin = r.origin;
  s.on_miss = true;
  // Writes over more than one child are refused above.
  if (servers) return over_pool(kids, r, std::move(s), "MissFailoverRoute", cls, "");
  s.what = "MissFailoverRoute";
  return chain_of(kids, std::move(s), cls);
}

std::optional<Sem> Mapper::failover_with_exptime(const Ref& r, bool, Cls cls) {
  if (!r.is_object()) {
    refuse(r.origin,
           "FailoverWithExptimeRoute is written as an object (normal, failover, "
           "failover_exptime)");
    return std::nullopt;
  }
  if (!check_options(r, "FailoverWithExptimeRoute", {"normal", "failover", "failover_exptime"}))
    return std::nullopt;
  const Value* normal = r.value->get("normal");
  if (normal == nullptr) {
    refuse(r.origin, "FailoverWithExptimeRoute without normal");
    return std::nullopt;
  }
  long exptime = 60;  // mcrouter's default
  if (const Value* e = r.value->get("failover_exptime")) {
    char* end = nullptr;
    const long n = e->is_number() ? std::strtol(e->text.c_str(), &end, 10) : 0;
    const Origin eat{member_path(r.origin.path, "failover_exptime"), e->line};
    if (!e->is_number() || *end != '\0') {
      refuse(eat, "expected seconds, a whole number, found " + e->describe());
      return std::nullopt;
    }
    if (n > static_cast<long>(kMaxGutterTtl)) {
      refuse(eat,
             "an expiry above 30 days is a unix time to memcached; memshard's gutter_ttl "
             "is at most 2592000 seconds");
      return std::nullopt;
    }
    exptime = n;
  }
  Sem s;
  s.kind = Kind::chain;
  s.what = "FailoverWithExptimeRoute";
  s.origin = r.origin;
  auto first = eval(ref_of(*normal, member_path(r.origin.path, "normal")), cls);
  if (!first) return std::nullopt;
  s.parts.push_back(std::move(*first));
  if (const Value* failover = r.value->get("failover")) {
    std::vector<Child> kids;
    if (!children(ref_of(*failover, member_path(r.origin.path, "failover")), kids))
      return std::nullopt;
    for (const Child& c : kids) {
      if (c.server != nullptr) {
        refuse(c.route.origin,
               "a failover to a pool's servers one by one (Pool|A) has no "
               "meaning in memshard; a gutter is a pool (PoolRoute|A)");
        return std::nullopt;
      }
      auto part = eval(c.route, cls);
      if (!part) return std::nullopt;
      // The smaller cap wins (a ModifyExptimeRoute inside, with min).
      if (exptime > 0 && (!part->ttl || *part->ttl > exptime))
        part->ttl = static_cast<uint32_t>(exptime);
      s.parts.push_back(std::move(*part));
    }
  }
  if (s.parts.size() == 1) return std::move(s.parts.front());
  return s;
}

std::optional<uint32_t> Mapper::seconds_of(const Value& v, const Origin& at,
                                           std::string_view what) {
  char* end = nullptr;
  const long n = v.is_number() ? std::strtol(v.text.c_str(), &end, 10) : -1;
  if (!v.is_number() || *end != '\0' || n < 0) {
    refuse(at, "expected seconds, a whole number of 0 or more, found " + v.describe() +
                   " (memshard's " + std::string(what) + " is 0 to 2592000)");
    return std::nullopt;
  }
  if (n > static_cast<long>(kMaxGutterTtl)) {
    refuse(at, "an expiry above 30 days is a unix time to memcached; memshard's " +
                   std::string(what) + " is at most 2592000 seconds");
    return std::nullopt;
  }
  return static_cast<uint32_t>(n);
}

// mcrouter's ModifyExptimeRoute: `set` gives every expiry a request sets
// (not a delete's) this value, `min` caps it (0, never, capped too; min 0
// changes nothing). memshard does both per pool (ttl_set, ttl_max), so the
// target must come down to pools (pool_of refuses the rest).
std::optional<Sem> Mapper::modify_exptime(const Ref& r, bool, Cls cls) {
  if (!r.is_object()) {
    refuse(r.origin, "ModifyExptimeRoute is written as an object (target, exptime, action)");
    return std::nullopt;
  }
  if (!check_options(r, "ModifyExptimeRoute", {"target", "exptime", "action"})) return std::nullopt;
  const Value* target = r.value->get("target");
  const Value* exptime = r.value->get("exptime");
  if (target == nullptr || exptime == nullptr) {
    refuse(r.origin, "ModifyExptimeRoute needs target and exptime");
    return std::nullopt;
  }
  std::string action = "set";
  if (const Value* a = r.value->get("action")) {
    action = a->is_string() ? a->text : "";
    if (action != "min" && action != "set") {
      refuse(Origin{member_path(r.origin.path, "action"), a->line},
             "expected action \"set\" or \"min\", as mcrouter reads it, found " + a->describe());
      return std::nullopt;
    }
  }
  const std::optional<uint32_t> n =
      seconds_of(*exptime, Origin{member_path(r.origin.path, "exptime"), exptime->line},
                 action == "set" ? "ttl_set" : "ttl_max");
  if (!n) return std::nullopt;
  auto s = eval(ref_of(*target, member_path(r.origin.path, "target")), cls);
  if (!s) return std::nullopt;
  if (action == "min") {
    // An inner set decides the expiry after this cap: the cap changes nothing.
    if (*n > 0 && !s->ttl_set && (!s->ttl || *s->ttl > *n)) s->ttl = *n;
  } else if (!s->ttl_set) {
    // An inner cap then applies to this value (to 0, never, too).
    s->ttl_set = s->ttl ? (*n == 0 ? *s->ttl : std::min(*n, *s->ttl)) : *n;
    s->ttl.reset();
  }
  s->origin = r.origin;
  return s;
}

// mcrouter's WarmUpRoute: reads go to `cold`, then to `warm` on a miss,
// and a hit is copied to `cold` with an add whose expiry is `exptime`;
// writes go to `cold` only.
std::optional<Sem> Mapper::warm_up(const Ref& r, Cls cls) {
  if (!r.is_object()) {
    refuse(r.origin, "WarmUpRoute is written as an object (cold, warm, exptime)");
    return std::nullopt;
  }
  if (!check_options(r, "WarmUpRoute", {"cold", "warm", "exptime", "enable_metaget"}))
    return std::nullopt;
  const Value* cold = r.value->get("cold");
  const Value* warm = r.value->get("warm");
  if (cold == nullptr || warm == nullptr) {
    refuse(r.origin, "WarmUpRoute needs cold and warm");
    return std::nullopt;
  }
  uint32_t ttl = 0;  // mcrouter's: without exptime and metaget, the copies never expire
  if (const Value* e = r.value->get("exptime")) {
    const auto n =
        seconds_of(*e, Origin{member_path(r.origin.path, "exptime"), e->line}, "warm_ttl");
    if (!n) return std::nullopt;
    ttl = *n;
  } else if (const Value* m = r.value->get("enable_metaget");
             m != nullptr && m->is_bool() && m->text == "true") {
    refuse(Origin{member_path(r.origin.path, "enable_metaget"), m->line},
           "WarmUpRoute without exptime, with enable_metaget: mcrouter reads each warm item's "
           "expiry with metaget, which memshard does not speak; give exptime (warm_ttl)");
    return std::nullopt;
  }
  auto cold_sem = eval(ref_of(*cold, member_path(r.origin.path, "cold")), cls);
  if (!cold_sem) return std::nullopt;
  if (cls == Cls::write) return cold_sem;  // the warm side is the client's business
  auto warm_sem = eval(ref_of(*warm, member_path(r.origin.path, "warm")), Cls::read);
  if (!warm_sem) return std::nullopt;
  Sem s;
  s.kind = Kind::warm;
  s.what = "WarmUpRoute";
  s.origin = r.origin;
  s.warm_ttl = ttl;
  s.parts.push_back(std::move(*cold_sem));
  s.parts.push_back(std::move(*warm_sem));
  return s;
}

std::optional<Sem> Mapper::operation_selector(const Ref& r, bool has_def, Cls cls) {
  if (!r.is_object()) {
    if (has_def) return eval(r, cls);  // mcrouter: a non-object is its only policy
    refuse(r.origin, "OperationSelectorRoute needs default_policy or operation_policies");
    return std::nullopt;
  }
  if (!check_options(r, "OperationSelectorRoute", {"default_policy", "operation_policies"}))
    return std::nullopt;
  const Value* def = r.value->get("default_policy");
  const Value* ops = r.value->get("operation_policies");
  if (def == nullptr && ops == nullptr) {
    refuse(r.origin, "OperationSelectorRoute needs default_policy or operation_policies");
    return std::nullopt;
  }
  // The handle each operation of this class takes.
  std::vector<std::pair<std::string, Ref>> handles;
  bool ok = true;
  if (ops != nullptr) {
    const std::string ops_path = member_path(r.origin.path, "operation_policies");
    if (!ops->is_object()) {
      refuse(Origin{ops_path, ops->line},
             "expected an object of operation names to route handles, found " + ops->describe());
      return std::nullopt;
    }
    for (size_t i = 0; i < ops->members.size(); ++i) {
      const std::string& op = ops->members[i].first;
      const Origin at{member_path(ops_path, op), ops->key_lines[i]};
      const bool is_read = std::find(read_ops().begin(), read_ops().end(), op) != read_ops().end();
      const bool is_write =
          std::find(write_ops().begin(), write_ops().end(), op) != write_ops().end();
      if (!is_read && !is_write) {
        refuse(at, "operation " + quoted(op) +
                       ": memshard routes the keyed operations only (get, gets, gat, gats, "
                       "metaget, lease-get, set, add, replace, append, prepend, cas, delete, "
                       "incr, decr, touch, lease-set); it answers version and stats itself and "
                       "sends flush_all to every server");
        ok = false;
        continue;
      }
      if (is_read == (cls == Cls::read))
        handles.emplace_back(op, ref_of(ops->members[i].second, at.path));
    }
  }
  if (!ok) return std::nullopt;
  // The operations of the class the config leaves to default_policy take
  // the policy of those it names (docs/mcrouter.md: memshard routes all
  // reads of a key alike, and all writes); default_policy is the class's
  // when it names none.
  if (def != nullptr && handles.empty())
    handles.emplace_back("default_policy",
                         ref_of(*def, member_path(r.origin.path, "default_policy")));
  if (handles.empty()) {
    refuse(r.origin, "no policy for " + cls_name(cls) +
                         " (and no default_policy): mcrouter answers them with an error, and "
                         "memshard routes every operation");
    return std::nullopt;
  }
  std::optional<Sem> chosen;
  std::string chosen_by;
  for (const auto& [op, ref] : handles) {
    auto s = eval(ref, cls);
    if (!s) return std::nullopt;
    if (!chosen) {
      chosen = std::move(s);
      chosen_by = op;
      continue;
    }
    if (s->key() != chosen->key()) {
      refuse(ref.origin, "the " + op + " policy (" + s->what + ") routes " + cls_name(cls) +
                             " otherwise than the " + chosen_by + " policy (" + chosen->what +
                             "); memshard routes all " + cls_name(cls) + " of a key alike");
      return std::nullopt;
    }
  }
  return chosen;
}

std::optional<Sem> Mapper::error_route(const Ref& r, bool) {
  if (!check_options(r, "ErrorRoute", {"response", "enable_logging"})) return std::nullopt;
  Sem s;
  s.kind = Kind::error;
  s.what = "ErrorRoute";
  return s;
}

// ---- reads and writes together ----

bool Mapper::no_ttl(const Sem& s, const Origin& at) {
  if (s.kind == Kind::warm) {
    refuse(at,
           "WarmUpRoute inside another route handle: memshard's warm-up is a whole route's "
           "(warm_from): put the WarmUpRoute at the top of the route, or of a prefix's "
           "policy, where reads and writes meet");
    return false;
  }
  if (!s.ttl && !s.ttl_set) return true;
  refuse(at, s.what +
                 " under a ModifyExptimeRoute (or a failover_exptime) around more than a pool: "
                 "memshard sets expiries per pool (ttl_max, ttl_set, a gutter's gutter_ttl); "
                 "put the ModifyExptimeRoute around each PoolRoute");
  return false;
}

namespace {

// `s` without what a ModifyExptimeRoute made of it: where it puts keys.
std::string placement_key(Sem s) {
  s.ttl.reset();
  s.ttl_set.reset();
  return s.key();
}

bool holds_warm_up(const Sem& s) {
  if (s.kind == Kind::warm) return true;
  return std::any_of(s.parts.begin(), s.parts.end(), holds_warm_up);
}

bool holds_null(const Sem& s) {
  if (s.kind == Kind::null) return true;
  return std::any_of(s.parts.begin(), s.parts.end(), holds_null);
}

bool same_expiry(const Sem& a, const Sem& b) {
  return a.ttl == b.ttl && a.ttl_set == b.ttl_set;
}

void take_expiry(const Sem& s, PoolSpec& p) {
  p.ttl_max = s.ttl.value_or(0);
  p.ttl_set = s.ttl_set;
}

}  // namespace

std::string Mapper::add_pool(PoolSpec spec) {
  const std::string key = spec.key();
  if (const auto it = pool_names_.find(key); it != pool_names_.end()) return it->second;
  std::string base = spec.group.name;
  std::string name = base;
  for (int n = 2; used_names_.count(name); ++n) name = base + "_" + std::to_string(n);
  used_names_.insert(name);
  pool_names_.emplace(key, name);
  mapping.pools.emplace_back(name, std::move(spec));
  return name;
}

std::optional<std::string> Mapper::pool_of(const Sem& read, const Sem& write, const Origin& at) {
  if (read.kind == Kind::warm || write.kind == Kind::warm) {
    no_ttl(read.kind == Kind::warm ? read : write, at);  // refuses it
    return std::nullopt;
  }
  if (read.kind != Kind::hashed && read.kind != Kind::chain && !no_ttl(read, at))
    return std::nullopt;
  if (write.kind != Kind::hashed && write.kind != Kind::all_of && write.kind != Kind::chain &&
      !no_ttl(write, at))
    return std::nullopt;
  // A pool's expiries are set for every request it takes, gat's and
  // touch's as a write's: reads and writes must agree on them.
  if (!same_expiry(read, write) && (read.ttl || read.ttl_set)) {
    refuse(at, "reads go to " + read.what + " and writes to " + write.what +
                   " with other expiries (ModifyExptimeRoute): memshard sets a pool's expiries "
                   "(ttl_max, ttl_set) for every request it takes, gat's included");
    return std::nullopt;
  }
  // The same hashed pool for both: the plain case.
  if (read.kind == Kind::hashed && write.kind == Kind::hashed &&
      placement_key(read) == placement_key(write)) {
    if (!same_expiry(read, write)) {
      refuse(at, "reads go to " + read.what +
                     " and writes to it through a ModifyExptimeRoute: "
                     "memshard sets a pool's expiries (ttl_max, ttl_set) for every request it "
                     "takes, gat's and touch's included; route both through the same "
                     "ModifyExptimeRoute");
      return std::nullopt;
    }
    PoolSpec p;
    p.group = read.group;
    p.hashing = read.hashing;
    p.origin = read.origin;
    p.what = read.what;
    take_expiry(write, p);
    return add_pool(std::move(p));
  }
  // Every server holds every key: read any (one_of, or hashed over the
  // same servers), write all.
  if (write.kind == Kind::all_of && (read.kind == Kind::one_of || read.kind == Kind::hashed) &&
      read.group.key() == write.group.key()) {
    if (write.group.servers.size() > kMaxCopies) {
      refuse(at, write.what + " keeps a copy of every key on each of " +
                     std::to_string(write.group.servers.size()) +
                     " servers; memshard keeps at most " + std::to_string(kMaxCopies) +
                     " copies (replicas)");
      return std::nullopt;
    }
    PoolSpec p;
    p.group = write.group;
    p.plain_hash = true;
    take_expiry(write, p);
    p.replicas = static_cast<uint32_t>(write.group.servers.size());
    p.policy = write.policy;
    p.read_failover_on_miss = read.kind == Kind::one_of && read.on_miss;
    p.eject = true;
    p.origin = at;
    p.what = read.what + " and " + write.what;
    return add_pool(std::move(p));
  }
  // A pool that fails over to another: its gutter.
  if (read.kind == Kind::chain && write.kind == Kind::chain && read.key() == write.key() &&
      !read.on_miss) {
    if (!no_ttl(read, at)) return std::nullopt;
    if (read.parts.size() != 2) {
      refuse(at, read.what + " over " + std::to_string(read.parts.size()) +
                     " routes: memshard fails a pool over to one other (its gutter)");
      return std::nullopt;
    }
    const Sem& normal = read.parts[0];
    Sem spare = read.parts[1];
    const uint32_t ttl = spare.ttl.value_or(kMaxGutterTtl);
    spare.ttl.reset();
    if (normal.kind != Kind::hashed || spare.kind != Kind::hashed) {
      refuse(at, read.what +
                     ": memshard's gutter is a hashed pool in front of another "
                     "(PoolRoute to PoolRoute); found " +
                     normal.what + " and " + spare.what);
      return std::nullopt;
    }
    auto gutter = pool_of(spare, spare, at);
    if (!gutter) return std::nullopt;
    PoolSpec p;
    p.group = normal.group;
    p.hashing = normal.hashing;
    p.gutter = *gutter;
    p.gutter_ttl = ttl == 0 ? kMaxGutterTtl : ttl;
    take_expiry(normal, p);
    p.eject = true;
    p.origin = at;
    p.what = read.what;
    if (p.group.key() == spare.group.key()) {
      refuse(at, read.what + " fails over to the same servers; a gutter is another pool");
      return std::nullopt;
    }
    return add_pool(std::move(p));
  }
  if (read.kind == Kind::error || write.kind == Kind::error) {
    refuse(at, "ErrorRoute for " + std::string(read.kind == Kind::error ? "reads" : "writes") +
                   " only, beside " + (read.kind == Kind::error ? write.what : read.what) +
                   ": memshard answers a key with an error only when no route takes it at all");
    return std::nullopt;
  }
  refuse(at, "reads go to " + read.what + " and writes to " + write.what +
                 ", which memshard cannot do with one pool: it writes a key where it reads it "
                 "(one server, the copies of a replicated pool, or its gutter when down)");
  return std::nullopt;
}

std::optional<Target> Mapper::combine(const Sem& read, const Sem& write, const Origin& at) {
  // NullRoute as a whole route: memshard's blackhole route.
  if (read.kind == Kind::null && write.kind == Kind::null) {
    Target t;
    t.kind = Target::Kind::blackhole;
    t.origin = at;
    return t;
  }
  if (holds_null(read) || holds_null(write)) {
    const Sem& which = holds_null(read) ? read : write;
    refuse(at, which.kind == Kind::null
                   ? which.what + " for " + (read.kind == Kind::null ? "reads" : "writes") +
                         " only, beside " + (read.kind == Kind::null ? write.what : read.what) +
                         ": memshard answers a route's requests itself (blackhole) for all of "
                         "them or none"
                   : "NullRoute inside another route handle (" + which.what +
                         "): memshard answers requests itself (blackhole) only as a whole "
                         "route: the route, a prefix's policy or the wildcard");
    return std::nullopt;
  }
  if (read.kind == Kind::warm) return warm_target(read, write, at);
  if (holds_warm_up(read)) {
    refuse(at, "WarmUpRoute inside another route handle (" + read.what +
                   "): memshard's warm-up is a whole route's (warm_from): put the WarmUpRoute at "
                   "the top of the route, or of a prefix's policy, where reads and writes meet");
    return std::nullopt;
  }
  Target t;
  t.origin = at;
  if (read.kind == Kind::error && write.kind == Kind::error) {
    t.kind = Target::Kind::error;
    return t;
  }
  // Zone copies: writes to every pool, reads from the first and the next
  // on an error (or a miss).
  if (write.kind == Kind::fanout) {
    if (!no_ttl(write, at) || !no_ttl(read, at)) return std::nullopt;
    std::vector<const Sem*> reads;
    if (read.kind == Kind::chain) {
      for (const Sem& p : read.parts) reads.push_back(&p);
      t.on_miss = read.on_miss;
    } else {
      reads.push_back(&read);
    }
    if (reads.size() > write.parts.size()) {
      refuse(at, "reads go to " + std::to_string(reads.size()) + " routes (" + read.what +
                     ") and writes to " + std::to_string(write.parts.size()) + " (" + write.what +
                     "); memshard reads the pools it writes");
      return std::nullopt;
    }
    t.kind = Target::Kind::zones;
    t.policy = write.policy;
    for (size_t i = 0; i < write.parts.size(); ++i) {
      const Sem& w = write.parts[i];
      const Sem& r = i < reads.size() ? *reads[i] : w;
      if (w.kind == Kind::fanout || w.kind == Kind::chain || r.kind == Kind::chain) {
        refuse(at, "copies inside copies (" + write.what + " over " + w.what +
                       "): memshard's zone copies are pools");
        return std::nullopt;
      }
      if (r.kind == Kind::hashed && w.kind == Kind::hashed && r.key() != w.key()) {
        refuse(at, "reads go to " + r.what + " where writes go to " + w.what +
                       ": memshard reads each copy where it writes it, in the same order");
        return std::nullopt;
      }
      auto name = pool_of(r, w, at);
      if (!name) return std::nullopt;
      t.pools.push_back(*name);
    }
    std::set<std::string> distinct(t.pools.begin(), t.pools.end());
    if (distinct.size() != t.pools.size()) {
      refuse(at, write.what + " writes one pool twice");
      return std::nullopt;
    }
    if (t.pools.size() == 1) t.kind = Target::Kind::pool;
    return t;
  }
  auto name = pool_of(read, write, at);
  if (!name) return std::nullopt;
  t.kind = Target::Kind::pool;
  t.pools.push_back(*name);
  return t;
}

// A WarmUpRoute at the top of a route: its cold side is the route's
// pool, where writes go too (alone, or first among zone copies: an
// AllSyncRoute to it and others, as the wiki's two-level caching), and its
// warm side the pool of warm_from.
std::optional<Target> Mapper::warm_target(const Sem& read, const Sem& write, const Origin& at) {
  const Sem& cold = read.parts[0];
  Sem warm = read.parts[1];
  if (cold.kind != Kind::hashed) {
    refuse(at, "WarmUpRoute's cold route is " + cold.what +
                   "; memshard's cold side is the route's pool (a PoolRoute or HashRoute)");
    return std::nullopt;
  }
  if (warm.kind != Kind::hashed) {
    refuse(at, "WarmUpRoute's warm route is " + warm.what +
                   "; memshard looks a key up in one pool (warm_from: a PoolRoute or HashRoute)");
    return std::nullopt;
  }
  warm.ttl.reset();  // only looked up: nothing is written there
  warm.ttl_set.reset();
  Target t;
  t.origin = at;
  t.warm_ttl = read.warm_ttl;
  std::vector<const Sem*> writes;
  if (write.kind == Kind::fanout) {
    if (!no_ttl(write, at)) return std::nullopt;
    t.policy = write.policy;
    for (const Sem& w : write.parts) writes.push_back(&w);
  } else {
    writes.push_back(&write);
  }
  // The cold pool first: reads and copies go there.
  const auto cold_at = std::find_if(writes.begin(), writes.end(), [&](const Sem* w) {
    return w->kind == Kind::hashed && placement_key(*w) == placement_key(cold);
  });
  if (cold_at == writes.end()) {
    refuse(at, "reads go to " + cold.what + " (WarmUpRoute's cold side) and writes to " +
                   write.what +
                   ", which does not write it: memshard writes a key where it reads "
                   "it");
    return std::nullopt;
  }
  if ((cold.ttl || cold.ttl_set) && !same_expiry(cold, **cold_at)) {
    refuse(at, "WarmUpRoute's cold side " + cold.what +
                   " is read with other expiries (ModifyExptimeRoute) than it is written with: "
                   "memshard sets a pool's expiries (ttl_max, ttl_set) for every request");
    return std::nullopt;
  }
  // The copies land on the cold pool through its expiry rule: it must
  // leave the WarmUpRoute's exptime as it is.
  const Sem& cold_write = **cold_at;
  const uint32_t copy_ttl = read.warm_ttl;
  if ((cold_write.ttl_set && *cold_write.ttl_set != copy_ttl) ||
      (cold_write.ttl && (copy_ttl == 0 || copy_ttl > *cold_write.ttl))) {
    refuse(at, "WarmUpRoute copies to " + cold.what + " with exptime " + std::to_string(copy_ttl) +
                   ", which its writes' ModifyExptimeRoute (" +
                   (cold_write.ttl_set ? "set " + std::to_string(*cold_write.ttl_set)
                                       : "min " + std::to_string(*cold_write.ttl)) +
                   ") would change: memshard sets a pool's expiries (ttl_set, ttl_max) for "
                   "every request it takes, a warm-up's copies included");
    return std::nullopt;
  }
  std::rotate(writes.begin(), cold_at, cold_at + 1);
  for (const Sem* w : writes) {
    if (w->kind != Kind::hashed) {
      refuse(at, "writes go to " + write.what + " beside WarmUpRoute's cold side, among them " +
                     w->what + "; memshard writes a warm-up route's copies to pools");
      return std::nullopt;
    }
    auto name = pool_of(*w, *w, at);
    if (!name) return std::nullopt;
    t.pools.push_back(*name);
  }
  std::set<std::string> distinct(t.pools.begin(), t.pools.end());
  if (distinct.size() != t.pools.size()) {
    refuse(at, write.what + " writes one pool twice");
    return std::nullopt;
  }
  auto warm_pool = pool_of(warm, warm, at);
  if (!warm_pool) return std::nullopt;
  if (*warm_pool == t.pools.front() || placement_key(warm) == placement_key(cold)) {
    refuse(at, "WarmUpRoute's warm and cold routes are the same pool");
    return std::nullopt;
  }
  t.warm_from = *warm_pool;
  t.kind = t.pools.size() == 1 ? Target::Kind::pool : Target::Kind::zones;
  return t;
}

std::optional<Target> Mapper::target_of(const Ref& r) {
  auto read = eval(r, Cls::read);
  if (!read) return std::nullopt;
  auto write = eval(r, Cls::write);
  if (!write) return std::nullopt;
  return combine(*read, *write, r.origin);
}

// ---- the top level ----

void Mapper::scan_names(const Value& v, const std::string& path) {
  if (v.is_object()) {
    const Value* name = v.get("name");
    const Value* type = v.get("type");
    if (name != nullptr && name->is_string() && type != nullptr && type->is_string()) {
      const auto [it, fresh] = names_.emplace(name->text, ref_of(v, path));
      (void)it;
      (void)fresh;  // the first definition wins, as mcrouter's seen handles do
    }
    for (size_t i = 0; i < v.members.size(); ++i)
      scan_names(v.members[i].second, member_path(path, v.members[i].first));
  } else if (v.is_array()) {
    for (size_t i = 0; i < v.items.size(); ++i) scan_names(v.items[i], item_path(path, i));
  }
}

void Mapper::root_routes(const Ref& route) {
  mapping.route_origin = route.origin;
  std::vector<std::pair<std::string, Ref>> policies;  // prefix -> handle
  std::optional<Ref> wildcard;
  bool selector = false;
  if (route.is_object()) {
    const Value* type = route.value->get("type");
    selector = type != nullptr && type->is_string() && type->text == "PrefixSelectorRoute";
  }
  if (selector) {
    if (!check_options(route, "PrefixSelectorRoute", {"policies", "wildcard"})) return;
    const Value* pol = route.value->get("policies");
    const Value* wild = route.value->get("wildcard");
    if (pol == nullptr && wild == nullptr) {
      refuse(route.origin, "PrefixSelectorRoute without policies or wildcard");
      return;
    }
    if (pol != nullptr) {
      const std::string ppath = member_path(route.origin.path, "policies");
      if (!pol->is_object()) {
        refuse(Origin{ppath, pol->line},
               "expected an object of key prefixes to route handles, "
               "found " +
                   pol->describe());
        return;
      }
      for (size_t i = 0; i < pol->members.size(); ++i) {
        const auto& [prefix, handle] = pol->members[i];
        const std::string hpath = member_path(ppath, prefix);
        if (prefix.empty()) {
          refuse(Origin{hpath, pol->key_lines[i]},
                 "an empty prefix takes every key no longer prefix takes: write it as the "
                 "wildcard");
          continue;
        }
        policies.emplace_back(prefix, ref_of(handle, hpath));
      }
    }
    if (wild != nullptr) wildcard = ref_of(*wild, member_path(route.origin.path, "wildcard"));
  } else {
    wildcard = route;
  }
  std::vector<RouteOut> out;
  for (const auto& [prefix, ref] : policies) {
    auto t = target_of(ref);
    if (!t) continue;
    out.push_back(RouteOut{prefix, false, *t, ref.origin});
  }
  std::optional<Target> def;
  if (wildcard) {
    def = target_of(*wildcard);
    if (!def) return;
  }
  if (!errors.empty()) return;
  const bool default_error = !def || def->kind == Target::Kind::error;
  // A prefix whose keys get an error: memshard answers so the keys no route
  // takes, so only where no shorter prefix and no default takes them.
  for (const RouteOut& r : out) {
    if (r.target.kind != Target::Kind::error) continue;
    bool covered = !default_error;
    for (const RouteOut& o : out) {
      if (o.target.kind != Target::Kind::error && o.prefix.size() < r.prefix.size() &&
          r.prefix.starts_with(o.prefix))
        covered = true;
    }
    if (covered) {
      refuse(r.origin,
             "ErrorRoute for keys another route would take: memshard answers a key "
             "with an error only when no route takes it (no wildcard, or an "
             "ErrorRoute wildcard, and no shorter prefix)");
    }
  }
  if (!errors.empty()) return;
  std::vector<RouteOut> routes;
  for (RouteOut& r : out)
    if (r.target.kind != Target::Kind::error) routes.push_back(std::move(r));
  if (!default_error) routes.push_back(RouteOut{"", true, *def, wildcard->origin});
  if (routes.empty()) {
    refuse(route.origin,
           "every key is answered with an error (ErrorRoute): memshard has no "
           "listener without a pool");
    return;
  }
  // Zone copies share the routing pool's write_policy and
  // read_failover_on_miss.
  const RouteOut* first_zones = nullptr;
  for (const RouteOut& r : routes) {
    if (r.target.kind != Target::Kind::zones) continue;
    if (first_zones == nullptr) {
      first_zones = &r;
      continue;
    }
    if (r.target.policy != first_zones->target.policy ||
        r.target.on_miss != first_zones->target.on_miss) {
      refuse(r.origin, "its copies are written and read otherwise than those of " +
                           first_zones->origin.path +
                           "; memshard's listener has one write_policy and one "
                           "read_failover_on_miss for all its routes' copies");
      return;
    }
  }
  mapping.routes = std::move(routes);
  if (mapping.routes.size() == 1 && mapping.routes.front().is_default &&
      mapping.routes.front().target.kind == Target::Kind::pool &&
      mapping.routes.front().target.warm_from.empty()) {
    mapping.listener = mapping.routes.front().target.pools.front();
    return;
  }
  std::string name = "mcrouter";
  for (int n = 2; used_names_.count(name) || pool_defs_.count(name); ++n)
    name = "mcrouter_" + std::to_string(n);
  mapping.routing_name = name;
}

std::string canonical(const Value& v) {
  std::string out;
  switch (v.type) {
    case Value::Type::array:
      out = "[";
      for (const Value& i : v.items) out += canonical(i) + ",";
      return out + "]";
    case Value::Type::object:
      out = "{";
      for (const auto& [k, m] : v.members) out += quoted(k) + ":" + canonical(m) + ",";
      return out + "}";
    case Value::Type::string:
      return quoted(v.text);
    default:
      return v.text;
  }
}

void Mapper::run() {
  if (!root_.is_object()) {
    refuse(Origin{"", root_.line},
           "expected mcrouter's config as a JSON object (pools, route), "
           "found " +
               root_.describe());
    return;
  }
  const Value* route = nullptr;
  std::string route_path;
  const Value* routes = nullptr;
  for (size_t i = 0; i < root_.members.size(); ++i) {
    const auto& [key, v] = root_.members[i];
    const Origin at{member_path("", key), root_.key_lines[i]};
    if (key == "pools") {
      if (!v.is_object()) {
        refuse(at, "expected pools as an object of pool names to pools, found " + v.describe());
        continue;
      }
      for (size_t j = 0; j < v.members.size(); ++j)
        pool_defs_.emplace(
            v.members[j].first,
            std::pair{&v.members[j].second,
                      Origin{member_path("pools", v.members[j].first), v.key_lines[j]}});
    } else if (key == "route") {
      route = &v;
      route_path = "route";
    } else if (key == "routes") {
      routes = &v;
    } else if (key == "named_handles") {
      if (v.is_object()) {
        for (size_t j = 0; j < v.members.size(); ++j)
          names_.emplace(
              v.members[j].first,
              ref_of(v.members[j].second, member_path("named_handles", v.members[j].first)));
      } else if (!v.is_array()) {
        refuse(at, "expected named_handles as an object or a list, found " + v.describe());
      }
    } else if (key == "macros" || key == "consts" || key == "import") {
      refuse(at,
             "memshard reads mcrouter's JSON as mcrouter runs it, without JSONM: write the "
             "config out with its macros expanded");
    } else {
      refuse(at,
             "a top-level key memshard does not map (it reads pools, route, routes and "
             "named_handles)");
    }
  }
  if (const Value* nh = root_.get("named_handles")) scan_names(*nh, "named_handles");
  if (route != nullptr && routes != nullptr) {
    refuse(Origin{"routes", routes->line}, "both route and routes are given; mcrouter takes one");
    return;
  }
  if (route == nullptr && routes == nullptr) {
    refuse(Origin{"", root_.line}, "no route (or routes) in mcrouter's config");
    return;
  }
  if (routes != nullptr) {
    // routes: [{aliases: [...], route: R}, ...] or {alias: R, ...}. Keys
    // name an alias with a routing prefix ("/region/cluster/key"), which
    // memshard does not read: it serves one route.
    std::vector<std::pair<const Value*, std::string>> found;
    if (routes->is_array()) {
      for (size_t i = 0; i < routes->items.size(); ++i) {
        const Value& entry = routes->items[i];
        const std::string epath = item_path("routes", i);
        if (!entry.is_object() || entry.get("route") == nullptr ||
            entry.get("aliases") == nullptr || !entry.get("aliases")->is_array()) {
          refuse(Origin{epath, entry.line},
                 "expected {\"aliases\": [...], \"route\": ...}, found " + entry.describe());
          continue;
        }
        for (size_t j = 0; j < entry.members.size(); ++j) {
          const std::string& k = entry.members[j].first;
          if (k != "route" && k != "aliases")
            refuse(Origin{member_path(epath, k), entry.key_lines[j]},
                   "a routes entry holds aliases and route only");
        }
        found.emplace_back(entry.get("route"), member_path(epath, "route"));
      }
    } else if (routes->is_object()) {
      for (size_t i = 0; i < routes->members.size(); ++i)
        found.emplace_back(&routes->members[i].second,
                           member_path("routes", routes->members[i].first));
    } else {
      refuse(Origin{"routes", routes->line},
             "expected routes as a list or an object, found " + routes->describe());
      return;
    }
    if (!errors.empty()) return;
    if (found.empty()) {
      refuse(Origin{"routes", routes->line}, "routes holds no route");
      return;
    }
    for (size_t i = 1; i < found.size(); ++i) {
      if (canonical(*found[i].first) != canonical(*found[0].first)) {
        refuse(Origin{found[i].second, found[i].first->line},
               "a second, different route: mcrouter chooses among routes by the routing prefix "
               "of a key (/region/cluster/key) or its -R option, and memshard reads no routing "
               "prefix; keep one route");
        return;
      }
    }
    route = found[0].first;
    route_path = found[0].second;
  }
  scan_names(*route, route_path);
  if (!errors.empty()) return;
  root_routes(ref_of(*route, route_path));
}

}  // namespace
}  // namespace mcrouter

bool is_mcrouter_config(std::string_view text, std::string_view path) {
  if (path.ends_with(".json")) return true;
  for (char c : text) {
    if (c == ' ' || c == '\t' || c == '\r' || c == '\n') continue;
    return c == '{' || c == '/';
  }
  return false;
}

McrouterConversion convert_mcrouter(std::string_view text, const std::string& file,
                                    const McrouterOptions& options) {
  McrouterConversion out;
  json::ParseResult parsed = json::parse(text);
  if (!parsed.value) {
    out.errors.push_back(ConfigError{file, parsed.line, "", parsed.error});
    return out;
  }
  mcrouter::Mapper mapper(file, *parsed.value);
  mapper.run();
  if (!mapper.errors.empty()) {
    // A handle named and used twice is refused once.
    std::set<std::pair<std::string, std::string>> said;
    for (ConfigError& e : mapper.errors)
      if (said.emplace(e.directive, e.message).second) out.errors.push_back(std::move(e));
    std::stable_sort(out.errors.begin(), out.errors.end(),
                     [](const ConfigError& a, const ConfigError& b) { return a.line < b.line; });
    return out;
  }
  const bool placeholder = options.listen.empty();
  out.yaml = mcrouter::write_yaml(
      mapper.mapping, file, placeholder ? std::string(kMcrouterPlaceholderListen) : options.listen,
      placeholder, out.origins);
  return out;
}

}  // namespace memshard::conf
