// A validated, immutable memshard configuration, read from twemproxy's
// nutcracker.yml format unchanged (plus memshard's extensions), or from
// mcrouter's JSON config: the entry points. The configuration itself is conf/model.h.
#pragma once

#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "conf/model.h"

namespace memshard::conf {

struct LoadResult {
  std::optional<Config> config;     // set when errors is empty
  std::vector<ConfigError> errors;  // every error found, not only the first
};

// How a file is read beyond what it says: mcrouter's JSON config
// (conf/mcrouter.h) has no listen address, and takes it from here.
struct LoadOptions {
  std::string listen;  // HOST:PORT or a unix socket path; refused for memshard's YAML
};

// Reads and validates a file: memshard's YAML (nutcracker.yml), or
// mcrouter's JSON config (conf/mcrouter.h).
LoadResult load_config_file(const std::string& path, const LoadOptions& options = {});
// Same, for text already in memory; `file` names it in errors.
LoadResult parse_config(const std::string& text, const std::string& file);
// mcrouter's JSON config in memory (conf/mcrouter.h), converted and
// loaded; every error is said where the JSON has it.
LoadResult load_mcrouter(std::string_view text, const std::string& file,
                         const LoadOptions& options = {});

}  // namespace memshard::conf
