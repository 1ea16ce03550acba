// A validated, immutable memshard configuration, read from twemproxy's
// nutcracker.yml format unchanged (plus memshard's extensions): the entry
// points. The configuration itself is conf/model.h.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "conf/model.h"

namespace memshard::conf {

struct LoadResult {
  std::optional<Config> config;     // set when errors is empty
  std::vector<ConfigError> errors;  // every error found, not only the first
};

// Reads and validates a file.
LoadResult load_config_file(const std::string& path);
// Same, for text already in memory; `file` names it in errors.
LoadResult parse_config(const std::string& text, const std::string& file);

}  // namespace memshard::conf
