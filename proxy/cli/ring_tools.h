// `memshard ring ...`: what a config's rings do with keys, told to an
// operator before they deploy it.
#pragma once

#include <iosfwd>
#include <string>
#include <vector>

namespace memshard::proxy {

// Each returns the process exit code; errors go to `err`.
int ring_lookup(const std::string& config_file, const std::string& pool,
                const std::vector<std::string>& keys, std::istream& in, std::ostream& out,
                std::ostream& err);
int ring_show(const std::string& config_file, const std::string& pool, std::ostream& out,
              std::ostream& err);
// Sample keys from `in` (see sample_keys.h): per server the keys sampled
// beside its exact keyspace share, then the spread (CV, max/mean) with the
// pool's hash and with each of `hashes` (twemproxy names; empty: a default
// set). An unknown hash name is refused before anything is read.
int ring_load(const std::string& config_file, const std::string& pool,
              const std::vector<std::string>& hashes, std::istream& in, std::ostream& out,
              std::ostream& err);
int ring_diff(const std::string& old_file, const std::string& new_file, const std::string& pool,
              std::ostream& out, std::ostream& err);

}  // namespace memshard::proxy
