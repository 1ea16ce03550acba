#include "proxy/protocol/metadump.h"

#include <charconv>

namespace memshard::proto {

namespace {

int hex_digit(char c) {
  if (c >= '0' && c <= '9') return c - '0';
  if (c >= 'a' && c <= 'f') return c - 'a' + 10;
  if (c >= 'A' && c <= 'F') return c - 'A' + 10;
  return -1;
}

// memcached writes keys with uriencode(): every byte but [A-Za-z0-9-_.~]
// as %XX.
bool percent_decode(std::string_view in, std::string& out) {
  out.clear();
  for (size_t i = 0; i < in.size(); ++i) {
    if (in[i] != '%') {
      out.push_back(in[i]);
      continue;
    }
    if (i + 2 >= in.size()) return false;
    const int hi = hex_digit(in[i + 1]), lo = hex_digit(in[i + 2]);
    if (hi < 0 || lo < 0) return false;
    out.push_back(static_cast<char>(hi * 16 + lo));
    i += 2;
  }
  return true;
}

}  // namespace

std::optional<MetadumpItem> parse_metadump_line(std::string_view line) {
  if (!line.starts_with("key=")) return std::nullopt;
  MetadumpItem item;
  size_t at = 0;
  bool have_key = false;
  while (at < line.size()) {
    size_t end = line.find(' ', at);
    if (end == std::string_view::npos) end = line.size();
    const std::string_view field = line.substr(at, end - at);
    at = end + 1;
    if (field.starts_with("key=")) {
      if (!percent_decode(field.substr(4), item.key) || item.key.empty()) return std::nullopt;
      have_key = true;
    } else if (field.starts_with("exp=")) {
      const std::string_view v = field.substr(4);
      auto [p, ec] = std::from_chars(v.data(), v.data() + v.size(), item.exp);
      if (ec != std::errc() || p != v.data() + v.size()) return std::nullopt;
    }
  }
  if (!have_key) return std::nullopt;
  return item;
}

}  // namespace memshard::proto
