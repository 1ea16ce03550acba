// What a ring is built from and made of, as values: the compatibility mode
// and distribution, a server as the config lists it, the build options, and
// the ring's points and arcs. Apart from ring.h so that the parts that build
// a ring (continuum.h, ring_names.h) need not include the ring itself.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

#include "ketama/hash.h"

namespace memshard::ketama {

// How many values a point or a key's hash can take: every mode hashes to 32
// bits.
inline constexpr uint64_t kHashSpace = uint64_t{1} << 32;

// Whose ketama the ring reproduces. See ../shared/ketama-compat.md.
enum class Mode {
  twemproxy,              // nutcracker 0.5 (default)
  libmemcached_weighted,  // MEMCACHED_BEHAVIOR_KETAMA_WEIGHTED
  libmemcached,           // MEMCACHED_BEHAVIOR_KETAMA
  libmemcached_spy,       // MEMCACHED_DISTRIBUTION_CONSISTENT_KETAMA_SPY
  libketama,              // last.fm libketama
  spymemcached,           // Java spymemcached KetamaNodeLocator
};
std::string_view mode_name(Mode m);
std::optional<Mode> parse_mode_name(std::string_view name);

// ketama, modula and random are twemproxy's. ch3, wch3 and crc32 are
// mcrouter's hash functions (mcrouter_hash.h): the key itself picks a live
// server by its index in the list, with no ring of hash values.
enum class Distribution { ketama, modula, random, ch3, wch3, crc32 };
std::string_view distribution_name(Distribution d);
std::optional<Distribution> parse_distribution_name(std::string_view name);
// ch3, wch3 or crc32.
constexpr bool is_mcrouter_distribution(Distribution d) {
  return d == Distribution::ch3 || d == Distribution::wch3 || d == Distribution::crc32;
}

struct ServerEntry {
  std::string host;       // hostname or IP literal as written (never resolved), or socket path
  uint16_t port = 11211;  // ignored for unix sockets
  uint32_t weight = 1;
  // The weight as a real number: `weight` for a whole-number weight, else
  // what distribution wch3 reads (0 to 1, written "0.5"; `weight` is then 0).
  double fraction = 1;
  std::string name;  // explicit name from the config, empty when none
  bool is_unix = false;

  // "host:port", or the socket path: how an operator names the server.
  std::string address() const;
  // The weight as written: the whole number, or the fraction ("0.5").
  std::string weight_text() const;
};

struct RingOptions {
  Mode mode = Mode::twemproxy;
  Distribution distribution = Distribution::ketama;
  // Key hash. Only twemproxy mode and plain libmemcached/libmemcached_spy
  // honour it; the other modes hash keys with MD5 as their originals do.
  // The default is twemproxy's; libmemcached's own default is one_at_a_time,
  // so a libmemcached/libmemcached_spy ring must be given that to match a
  // client that did not set MEMCACHED_BEHAVIOR_HASH. Those two modes also
  // hash the points with it (unless a weight > 1 makes them weighted: MD5).
  HashFunction hash = HashFunction::fnv1a_64;
  // Empty, or exactly two characters such as "{}". Applied in every mode
  // (only twemproxy has it; leave it empty to match a client library).
  std::string hash_tag;
  // Distributions ch3, wch3 and crc32: appended to the key (after hash_tag
  // and the "|#|" hash stop) before it is hashed, as mcrouter's `salt`.
  std::string hash_salt;
};

struct Point {
  uint32_t value;
  uint32_t server;  // index into Ring::servers()
};

// A run of consecutive hash values with one owner: the values after the
// previous arc's `last` (from 0 for the first arc) up to and including `last`.
struct Arc {
  uint32_t last;
  uint32_t server;  // index into Ring::servers()
};

}  // namespace memshard::ketama
