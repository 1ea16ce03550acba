// `memshard ring ...`: what a config's rings do with keys, told to an
// operator before they deploy it.
#pragma once

#include <iosfwd>
#include <string>
#include <vector>

namespace memshard::proxy {

// Each returns the process exit code; errors go to `err`.
// "key<TAB>address" per key; with `all`, the key's whole preference list
// (the pool's `replicas` copies, first copy first), space separated.
int ring_lookup(const std::string& config_file, const std::string& pool,
                const std::vector<std::string>& keys, bool all, std::istream& in, std::ostream& out,
                std::ostream& err);
// Per server: ring name, weight, points, exact share of the keyspace; with
// replicas > 1 also its exact share of all copies.
int ring_show(const std::string& config_file, const std::string& pool, std::ostream& out,
              std::ostream& err);
// Sample keys from `in` (see sample_keys.h): per server the keys sampled
// beside its exact keyspace share, then the spread (CV, max/mean) with the
// pool's hash and with each of `hashes` (twemproxy names; empty: a default
// set). An unknown hash name is refused before anything is read.
int ring_load(const std::string& config_file, const std::string& pool,
              const std::vector<std::string>& hashes, std::istream& in, std::ostream& out,
              std::ostream& err);
// Exact fraction of the keyspace whose server (first copy) changes, per
// server gains and losses; when either side has replicas > 1, the copies
// that move and the new copies that start cold as well.
int ring_diff(const std::string& old_file, const std::string& new_file, const std::string& pool,
              std::ostream& out, std::ostream& err);

}  // namespace memshard::proxy
