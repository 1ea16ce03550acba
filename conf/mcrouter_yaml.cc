// Writing an mcrouter config's mapping (mcrouter_internal.h) as memshard's
// YAML: what `memshard convert` prints and what memshard loads for it.
#include <cctype>
#include <cstdio>
#include <filesystem>

#include "conf/mcrouter_internal.h"

namespace memshard::conf::mcrouter {
namespace {

bool is_plain(std::string_view s) {
  if (s.empty() || s == "null" || s == "true" || s == "false" || s == "~") return false;
  if (!std::isalnum(static_cast<unsigned char>(s[0])) && s[0] != '/' && s[0] != '_') return false;
  for (char c : s) {
    if (!std::isalnum(static_cast<unsigned char>(c)) && c != '_' && c != '-' && c != '.' &&
        c != ':' && c != '/')
      return false;
  }
  return s.back() != ':';
}

std::string scalar(std::string_view s) {
  if (is_plain(s)) return std::string(s);
  std::string out = "\"";
  for (char c : s) {
    if (c == '"' || c == '\\') {
      out += '\\';
      out += c;
    } else if (static_cast<unsigned char>(c) < 0x20 || c == 0x7f) {
      char buf[8];
      std::snprintf(buf, sizeof(buf), "\\x%02x", static_cast<unsigned char>(c));
      out += buf;
    } else {
      out += c;
    }
  }
  return out + "\"";
}

std::string_view distribution(HashFunc f) {
  switch (f) {
    case HashFunc::ch3:
      return kDistributionCh3;
    case HashFunc::wch3:
      return kDistributionWch3;
    case HashFunc::crc32:
      return kDistributionCrc32;
  }
  return kDistributionCh3;
}

class Writer {
 public:
  explicit Writer(std::vector<std::pair<std::string, int>>& origins) : origins_(origins) {}
  void line(std::string text, const Origin& from) {
    out_ += text + "\n";
    origins_.emplace_back(from.path, from.line);
  }
  std::string take() { return std::move(out_); }

 private:
  std::string out_;
  std::vector<std::pair<std::string, int>>& origins_;
};

void write_pool(Writer& w, const std::string& name, const PoolSpec& p, const std::string& listen,
                bool placeholder, bool listens) {
  w.line("", p.origin);
  const std::string from = p.origin.path.empty() ? "" : ", at " + p.origin.path;
  w.line(scalar(name) + ":  # " + p.what + from, p.origin);
  if (listens) {
    w.line(
        "  listen: " + scalar(listen) +
            (placeholder ? "  # mcrouter takes its port on the command line (-p): set yours" : ""),
        p.origin);
  }
  w.line("  timeout: " + std::to_string(p.group.timeout_ms), p.origin);
  if (!p.plain_hash) {
    w.line("  distribution: " + std::string(distribution(p.hashing.func)), p.origin);
    if (!p.hashing.salt.empty())
      w.line("  " + std::string(kSaltDirective) + ": " + scalar(p.hashing.salt), p.origin);
  }
  if (p.replicas > 1) {
    w.line("  replicas: " + std::to_string(p.replicas), p.origin);
    w.line("  write_policy: " + std::string(policy_name(p.policy)), p.origin);
    if (p.read_failover_on_miss) w.line("  read_failover_on_miss: true", p.origin);
  }
  if (p.eject) w.line("  auto_eject_hosts: true", p.origin);
  if (!p.gutter.empty()) {
    w.line("  gutter: " + scalar(p.gutter), p.origin);
    w.line("  gutter_ttl: " + std::to_string(p.gutter_ttl), p.origin);
  }
  if (p.ttl_set) {
    w.line("  ttl_set: " + std::to_string(*p.ttl_set) + "  # ModifyExptimeRoute, action set",
           p.origin);
  } else if (p.ttl_max != 0) {
    w.line("  ttl_max: " + std::to_string(p.ttl_max) + "  # ModifyExptimeRoute, action min",
           p.origin);
  }
  w.line("  servers:", p.origin);
  for (size_t i = 0; i < p.group.servers.size(); ++i) {
    const Server& s = *p.group.servers[i];
    const std::string weight =
        p.hashing.func == HashFunc::wch3 && !p.plain_hash ? p.hashing.weights[i] : "1";
    w.line("    - " + scalar(s.address + ":" + weight), s.origin);
  }
}

}  // namespace

std::string write_yaml(const Mapping& m, const std::string& file, const std::string& listen,
                       bool placeholder, std::vector<std::pair<std::string, int>>& origins) {
  Writer w(origins);
  const Origin none;
  w.line("# memshard's configuration, converted from mcrouter's " +
             std::filesystem::path(file).filename().string() + " by `memshard convert`",
         none);
  w.line("# (docs/mcrouter.md): each key is placed on the server mcrouter places it on.", none);
  w.line("# Each pool says which route handle of the JSON made it.", none);
  if (!m.routing_name.empty()) {
    const Origin& at = m.route_origin;
    bool zones = false;
    const RouteOut* with_zones = nullptr;
    for (const RouteOut& r : m.routes) {
      if (r.target.kind == Target::Kind::zones) {
        zones = true;
        with_zones = &r;
      }
    }
    w.line("", at);
    w.line(scalar(m.routing_name) + ":  # the route, at " + at.path, at);
    w.line(
        "  listen: " + scalar(listen) +
            (placeholder ? "  # mcrouter takes its port on the command line (-p): set yours" : ""),
        at);
    if (zones) {
      w.line("  write_policy: " + std::string(policy_name(with_zones->target.policy)), at);
      if (with_zones->target.on_miss) w.line("  read_failover_on_miss: true", at);
    }
    w.line("  routes:", at);
    for (const RouteOut& r : m.routes) {
      std::string first = r.is_default ? "    - " : "    - prefix: " + scalar(r.prefix);
      if (!r.is_default) {
        w.line(first, r.origin);
        first = "      ";
      }
      if (r.target.kind == Target::Kind::blackhole) {
        w.line(first + "blackhole: true  # NullRoute: answered at once, sent nowhere", r.origin);
      } else if (r.target.kind == Target::Kind::zones) {
        std::string list;
        for (const auto& p : r.target.pools) list += (list.empty() ? "" : ", ") + scalar(p);
        w.line(first + "pools: [" + list + "]", r.origin);
      } else {
        w.line(first + "pool: " + scalar(r.target.pools.front()), r.origin);
      }
      if (!r.target.warm_from.empty()) {
        w.line("      warm_from: " + scalar(r.target.warm_from) + "  # WarmUpRoute's warm side",
               r.origin);
        w.line("      warm_ttl: " + std::to_string(r.target.warm_ttl), r.origin);
      }
    }
  }
  for (const auto& [name, spec] : m.pools)
    write_pool(w, name, spec, listen, placeholder, name == m.listener);
  return w.take();
}

}  // namespace memshard::conf::mcrouter
