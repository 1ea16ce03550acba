// An immutable consistent-hash ring (or modula/random selector) over a list
// of servers, built to place keys exactly where a given legacy system does.
//
// Pure value: no I/O, no config parsing, safe to share read-only between
// threads. Lookups return the server's index in the list given to build(),
// whatever order the compatibility mode sorts servers in internally.
#pragma once

#include <cstddef>
#include <cstdint>
#include <limits>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "ketama/hash.h"
#include "ketama/ring_types.h"

namespace memshard::ketama {

class Ring {
 public:
  static constexpr size_t npos = std::numeric_limits<size_t>::max();

  // `live`: empty means every server takes part; otherwise live[i] == false
  // leaves server i out of the continuum (auto_eject_hosts), and the point
  // counts are computed from the live servers only, as twemproxy does.
  // Distribution modula/random: twemproxy's rules in every mode (each live
  // server `weight` times for modula, in name order for twemproxy and list
  // order otherwise); libmemcached's MODULA ignores weights, so it matches
  // only with all weights 1. A weight of 0 gives a server no points/slots.
  // Distributions ch3, wch3, crc32 (mcrouter's): the live servers in list
  // order, each once, whatever the mode; wch3 reads ServerEntry::fraction.
  // Throws std::invalid_argument for an empty server list, a bad hash_tag or
  // a `live` of the wrong size.
  static Ring build(std::vector<ServerEntry> servers, RingOptions options,
                    std::vector<bool> live = {});
  // A ring without servers, where every lookup finds none: the ring of a
  // pool that holds no keys itself (a routing pool, which sends each key
  // to another pool).
  static Ring none(RingOptions options = {});

  // The value a key is placed by, after hash_tag, with the mode's key hash.
  // ch3, wch3, crc32: the index in slots() mcrouter's hash picks for the
  // key up to its first "|#|" with hash_salt appended (mcrouter_hash.h).
  uint32_t hash_key(std::string_view key) const;
  // The function hash_key() applies (the pool's hash, or MD5 for the modes
  // whose originals always hash keys with MD5). Not used by ch3, wch3 and
  // crc32, which hash keys their own way: see key_hash_name().
  HashFunction key_hash_function() const;
  // How the ring hashes keys, by name: hash_name(key_hash_function()), or
  // "furc_hash" (ch3, wch3) or "mcrouter_crc32" (crc32).
  std::string_view key_hash_name() const;
  // Owner of a hash value; npos when no server is live.
  size_t server_for_hash(uint32_t hash) const;
  // Owner of a key; npos when no server is live.
  size_t lookup(std::string_view key) const;
  // The first `n` distinct live servers clockwise from the key's point
  // (fewer when fewer are live). Ketama distribution only; for modula and
  // random, the owner followed by the next servers in ring order.
  std::vector<size_t> preference_list(std::string_view key, size_t n) const;
  // The same into `out` (n = out.size()), allocating nothing: the request
  // path's form. Returns how many entries it filled.
  size_t preference_list(std::string_view key, std::span<size_t> out) const;
  // The list of the keys whose hash_key() is `hash`: preference_list(key, out)
  // is preference_list_for_hash(hash_key(key), out). Constant over each of
  // arcs() (ketama) and each residue hash % slots().size() (modula, and
  // mcrouter's, whose hash is the index: the owner, then the next servers
  // of the list). random
  // ignores the hash, as lookup() does: a random owner, then its successors.
  size_t preference_list_for_hash(uint32_t hash, std::span<size_t> out) const;

  const std::vector<ServerEntry>& servers() const;
  const RingOptions& options() const;
  bool is_live(size_t server) const;
  // The string the mode hashes for a server's points, without the "-k" suffix.
  const std::string& ring_name(size_t server) const;
  // The sorted continuum (ketama distribution; empty for modula/random).
  const std::vector<Point>& points() const;
  size_t point_count(size_t server) const;
  // Exact number of the 2^32 hash values each server owns (index = server).
  // modula: exact count of values v with slots()[v % slots().size()] == server.
  // random: the key is ignored, so this is the expected number, 2^32 split
  // evenly over the live servers (the remainder to the first ones in slot order).
  // ch3, wch3, crc32: the expected number for keys that hash independently
  // (even for ch3; crc32's 2^31 values modulo the servers; wch3 by weight).
  std::vector<uint64_t> owned_hashes() const;
  // Ketama distribution: the keyspace 0 .. 2^32-1 as arcs in ascending order,
  // covering every value exactly once (empty when no server is live).
  // Empty for modula and random.
  std::vector<Arc> arcs() const;
  // modula and random: the list a hash indexes (modula: slots[hash % size]),
  // live servers only, each server `weight` times for modula, once for random
  // and mcrouter's distributions. Empty for ketama.
  const std::vector<uint32_t>& slots() const;

 private:
  struct State;
  explicit Ring(std::shared_ptr<const State> s) : s_(std::move(s)) {}
  uint32_t mcrouter_index(std::string_view routing_key) const;
  std::shared_ptr<const State> s_;
};

}  // namespace memshard::ketama
