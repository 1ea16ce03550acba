// The golden table of mcrouter's placements (data/mcrouter_placements.txt,
// data/README.md): its keys, its wch3 weights, and its lines. Shared by the
// unit test (tests/ketama/mcrouter_hash_test.cc) and the integration test
// against real memcached (tests/integration/mcrouter_hash_test.cc).
#pragma once

#include <cstdint>
#include <cstdio>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

namespace memshard::golden {

// Key i of the table: splitmix64 from state 63, the shape by i % 4.
inline std::vector<std::string> mcrouter_keys(uint32_t count) {
  uint64_t state = 63;
  auto next = [&state] {
    uint64_t z = (state += 0x9e3779b97f4a7c15ULL);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
    return z ^ (z >> 31);
  };
  std::string alphabet;  // printable ASCII without space, '/' and '|'
  for (int c = 0x21; c <= 0x7e; ++c) {
    if (c != '/' && c != '|') alphabet.push_back(static_cast<char>(c));
  }
  std::vector<std::string> keys;
  for (uint32_t i = 0; i < count; ++i) {
    std::string k;
    switch (i % 4) {
      case 0:
        k = "key:" + std::to_string(i);
        break;
      case 1:
        for (uint64_t len = 1 + next() % 40; len > 0; --len) k.push_back(alphabet[next() % 92]);
        break;
      case 2:
        for (uint64_t len = 150 + next() % 101; len > 0; --len) k.push_back(alphabet[next() % 92]);
        break;
      default:
        for (uint64_t len = 1 + next() % 60; len > 0; --len) {
          const uint64_t b = next() % 220;
          k.push_back(b < 92 ? alphabet[b] : static_cast<char>(0x80 + (b - 92)));
        }
    }
    keys.push_back(std::move(k));
  }
  return keys;
}

// Server i's wch3 weight as a server line writes it: ((i * 7919 + 13) %
// 1001) / 1000 with three decimals ("0.013", "1.000").
inline std::string mcrouter_weight_text(uint32_t i) {
  const uint32_t v = (i * 7919u + 13u) % 1001u;
  char text[16];
  snprintf(text, sizeof(text), "%u.%03u", v / 1000, v % 1000);
  return text;
}

// The salt of the table's "+salt" variants.
inline constexpr const char* kMcrouterSalt = "mc-salt";

// One line of the table.
struct Placement {
  std::string variant;  // ch3, ch3+salt, wch3, wch3+salt, crc32, crc32+salt
  uint32_t servers = 0;
  std::string digest;           // FNV-1a 64 of the 100,000 indexes, in hex
  std::vector<uint32_t> first;  // the indexes of keys 0 to 39
  std::string first_text;       // as the file writes them
};

// The table's lines from `path`; empty when it cannot be read.
inline std::vector<Placement> mcrouter_placements(const std::string& path) {
  std::vector<Placement> out;
  std::ifstream in(path);
  std::string line;
  while (std::getline(in, line)) {
    if (line.empty() || line[0] == '#') continue;
    std::istringstream fields(line);
    Placement p;
    fields >> p.variant >> p.servers >> p.digest >> p.first_text;
    std::istringstream list(p.first_text);
    for (std::string n; std::getline(list, n, ',');) {
      p.first.push_back(static_cast<uint32_t>(std::stoul(n)));
    }
    out.push_back(std::move(p));
  }
  return out;
}

}  // namespace memshard::golden
