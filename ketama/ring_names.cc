// Names of modes, distributions and servers.
#include "ketama/ring_names.h"

#include <array>
#include <charconv>
#include <system_error>
#include <utility>

namespace memshard::ketama {
namespace {

constexpr uint16_t kMemcachedDefaultPort = 11211;

constexpr std::array<std::pair<Mode, std::string_view>, 6> kModeNames = {{
    {Mode::twemproxy, "twemproxy"},
    {Mode::libmemcached_weighted, "libmemcached_weighted"},
    {Mode::libmemcached, "libmemcached"},
    {Mode::libmemcached_spy, "libmemcached_spy"},
    {Mode::libketama, "libketama"},
    {Mode::spymemcached, "spymemcached"},
}};

constexpr std::array<std::pair<Distribution, std::string_view>, 6> kDistributionNames = {{
    {Distribution::ketama, "ketama"},
    {Distribution::modula, "modula"},
    {Distribution::random, "random"},
    {Distribution::ch3, "ch3"},
    {Distribution::wch3, "wch3"},
    {Distribution::crc32, "crc32"},
}};

std::string host_port(const ServerEntry& s) {
  return s.host + ":" + std::to_string(s.port);
}

// "host" when the port is memcached's default, "host:port" otherwise: the
// rule twemproxy took from libmemcached so both place keys alike.
std::string host_unless_default_port(const ServerEntry& s) {
  return s.port == kMemcachedDefaultPort ? s.host : host_port(s);
}

}  // namespace

std::string_view mode_name(Mode m) {
  for (const auto& [mode, name] : kModeNames) {
    if (mode == m) {
      return name;
    }
  }
  return "unknown";
}

std::optional<Mode> parse_mode_name(std::string_view name) {
  for (const auto& [mode, text] : kModeNames) {
    if (text == name) {
      return mode;
    }
  }
  return std::nullopt;
}

std::string_view distribution_name(Distribution d) {
  for (const auto& [distribution, name] : kDistributionNames) {
    if (distribution == d) {
      return name;
    }
  }
  return "unknown";
}

std::optional<Distribution> parse_distribution_name(std::string_view name) {
  for (const auto& [distribution, text] : kDistributionNames) {
    if (text == name) {
      return distribution;
    }
  }
  return std::nullopt;
}

std::string ServerEntry::address() const {
  return is_unix ? host : host_port(*this);
}

std::string ServerEntry::weight_text() const {
  if (fraction == static_cast<double>(weight)) return std::to_string(weight);
  // The shortest text that reads back as the same double: "0.5", "0.333".
  char buf[32];
  const auto [end, ec] = std::to_chars(buf, buf + sizeof(buf), fraction);
  return ec == std::errc() ? std::string(buf, end) : std::to_string(fraction);
}

namespace detail {

std::string ring_name_for(Mode mode, const ServerEntry& s) {
  switch (mode) {
    case Mode::twemproxy:
      if (!s.name.empty()) {
        return s.name;
      }
      // A socket line has no port; twemproxy still appends the ':' that
      // would precede it ("/path:").
      if (s.is_unix) {
        return s.host + ":";
      }
      return host_unless_default_port(s);
    case Mode::libmemcached_weighted:
    case Mode::libmemcached:
      // libmemcached stores a socket path as the hostname with port 0.
      if (s.is_unix) {
        return s.host + ":0";
      }
      return host_unless_default_port(s);
    case Mode::libmemcached_spy:
      // Imitates Java's InetSocketAddress.toString() of an address without
      // hostname: "/ip:port".
      return "/" + (s.is_unix ? s.host + ":0" : host_port(s));
    case Mode::libketama:
    case Mode::spymemcached:
      return s.address();
  }
  return s.address();
}

}  // namespace detail
}  // namespace memshard::ketama
