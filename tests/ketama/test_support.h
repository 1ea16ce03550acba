// Shared helpers for the ketama tests: deterministic random server lists and
// keys (fixed seeds, so a failure reproduces), and small builders.
#pragma once

#include <cstdint>
#include <random>
#include <string>
#include <vector>

#include "ketama/ring.h"

namespace memshard::ketama::testing {

inline ServerEntry server(std::string host, uint16_t port = 11211, uint32_t weight = 1,
                          std::string name = {}) {
  ServerEntry s;
  s.host = std::move(host);
  s.port = port;
  s.weight = weight;
  s.name = std::move(name);
  return s;
}

inline ServerEntry unix_socket(std::string path, uint32_t weight = 1, std::string name = {}) {
  ServerEntry s = server(std::move(path), 0, weight, std::move(name));
  s.is_unix = true;
  return s;
}

// `count` servers "10.0.<i/256>.<i%256>" on `port`.
inline std::vector<ServerEntry> numbered_servers(size_t count, uint16_t port = 11211) {
  std::vector<ServerEntry> servers;
  for (size_t i = 0; i < count; ++i) {
    servers.push_back(
        server("10.0." + std::to_string(i / 256) + "." + std::to_string(i % 256), port));
  }
  return servers;
}

// A mode's options as its client's defaults give them: libmemcached (and
// its spymemcached-compatible mode) hash keys with one-at-a-time unless
// told otherwise.
inline RingOptions default_options(Mode mode, Distribution distribution = Distribution::ketama) {
  RingOptions o;
  o.mode = mode;
  o.distribution = distribution;
  if (mode == Mode::libmemcached || mode == Mode::libmemcached_spy) {
    o.hash = HashFunction::one_at_a_time;
  }
  return o;
}

class Random {
 public:
  explicit Random(uint64_t seed) : rng_(seed) {}

  uint64_t below(uint64_t n) { return std::uniform_int_distribution<uint64_t>(0, n - 1)(rng_); }
  bool chance(double p) { return std::bernoulli_distribution(p)(rng_); }

  // A memcached-like key; with `high_bytes`, some bytes are >= 0x80 (UTF-8
  // text or raw binary), which is where signed-char hashing matters.
  std::string key(bool high_bytes = true) {
    static constexpr std::string_view kAlphabet =
        "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789:_-.{}";
    size_t length = 1 + below(40);
    std::string k;
    for (size_t i = 0; i < length; ++i) {
      if (high_bytes && chance(0.15)) {
        k.push_back(static_cast<char>(0x80 + below(0x80)));
      } else {
        k.push_back(kAlphabet[below(kAlphabet.size())]);
      }
    }
    return k;
  }

  // A random server list: IP literals and hostnames, ports 11211 or others,
  // weights 1 or more when `weights` is set. Addresses are distinct.
  std::vector<ServerEntry> servers(size_t count, bool weights) {
    std::vector<ServerEntry> list;
    for (size_t i = 0; i < count; ++i) {
      std::string host = chance(0.5) ? "10." + std::to_string(below(256)) + "." +
                                           std::to_string(below(256)) + "." + std::to_string(i)
                                     : "cache-" + std::to_string(i) + ".dc" +
                                           std::to_string(below(9)) + ".example.com";
      auto port = static_cast<uint16_t>(chance(0.5) ? 11211 : 11212 + below(5000));
      auto weight = static_cast<uint32_t>(weights ? 1 + below(chance(0.2) ? 1000 : 10) : 1);
      list.push_back(server(host, port, weight));
    }
    return list;
  }

 private:
  std::mt19937_64 rng_;
};

}  // namespace memshard::ketama::testing
