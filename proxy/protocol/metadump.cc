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

}  // namespace

std::string uri_decode(std::string_view text) {
  std::string out;
  out.reserve(text.size());
  for (size_t i = 0; i < text.size(); ++i) {
    if (text[i] == '%' && i + 2 < text.size() && hex_digit(text[i + 1]) >= 0 &&
        hex_digit(text[i + 2]) >= 0) {
      out.push_back(static_cast<char>(hex_digit(text[i + 1]) * 16 + hex_digit(text[i + 2])));
      i += 2;
    } else {
      out.push_back(text[i]);
    }
  }
  return out;
}

std::optional<MetadumpItem> parse_metadump_line(std::string_view line) {
  constexpr std::string_view kKey = "key=", kExp = "exp=";
  if (!line.starts_with(kKey)) return std::nullopt;
  const size_t space = line.find(' ');
  if (space == std::string_view::npos || line.substr(space + 1, kExp.size()) != kExp) {
    return std::nullopt;
  }
  MetadumpItem item;
  item.key = uri_decode(line.substr(kKey.size(), space - kKey.size()));
  if (item.key.empty()) return std::nullopt;
  std::string_view exp = line.substr(space + 1 + kExp.size());
  exp = exp.substr(0, exp.find(' '));
  auto [p, ec] = std::from_chars(exp.data(), exp.data() + exp.size(), item.exp);
  if (ec != std::errc() || p != exp.data() + exp.size()) return std::nullopt;
  return item;
}

}  // namespace memshard::proto
