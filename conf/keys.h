// The name of every key a configuration file may hold, taken from the
// tables the parser itself checks keys against: for what documents the
// keys (docs/configuration.md, whose test is tests/docs/config_keys_test.cc)
// and for tools.
#pragma once

#include <string_view>
#include <vector>

namespace memshard::conf {

struct KeyNames {
  // Beside the pools, at the top level: stats_token, stats_token_file.
  std::vector<std::string_view> top_level;
  // A pool's directives: nutcracker's, then memshard's, then TLS's.
  std::vector<std::string_view> pool;
  // The fields of one entry of a pool's `routes`.
  std::vector<std::string_view> route;
};

const KeyNames& key_names();

}  // namespace memshard::conf
