#include "proxy/cli/sample_keys.h"

namespace memshard::proxy {
namespace {

int hex_digit(char c) {
  if (c >= '0' && c <= '9') return c - '0';
  if (c >= 'a' && c <= 'f') return c - 'a' + 10;
  if (c >= 'A' && c <= 'F') return c - 'A' + 10;
  return -1;
}

// The encoded key of a metadump line, or false when the line is not one.
// A key never holds a space, so "key=" followed by " exp=" is the dump's
// shape, not a key that happens to start with "key=".
bool metadump_key(std::string_view line, std::string_view& key) {
  constexpr std::string_view kPrefix = "key=";
  if (line.substr(0, kPrefix.size()) != kPrefix) return false;
  size_t space = line.find(' ');
  if (space == std::string_view::npos || line.substr(space + 1, 4) != "exp=") return false;
  key = line.substr(kPrefix.size(), space - kPrefix.size());
  return true;
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

std::vector<std::string> read_sample_keys(std::istream& in) {
  std::vector<std::string> keys;
  bool dump = false;
  std::string line;
  while (std::getline(in, line)) {
    if (!line.empty() && line.back() == '\r') line.pop_back();
    std::string_view encoded;
    if (metadump_key(line, encoded)) {
      dump = true;
      keys.push_back(uri_decode(encoded));
    } else if (!(dump && line == "END")) {
      keys.push_back(line);
    }
  }
  return keys;
}

}  // namespace memshard::proxy
