// mcrouter's JSON configuration, read as it is (docs/mcrouter.md): its
// pools, and its route handles mapped onto memshard's pools, routes,
// replicas, zone copies and gutter, or refused with the JSON path and the
// reason where a handle (or an option of it) means something memshard does
// not do. The mapping is written out as memshard YAML (what `memshard
// convert` prints), which is then loaded as any memshard config is: the
// proxy, the ring tools and reloads see the same validated conf::Config.
#pragma once

#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "conf/model.h"

namespace memshard::conf {

// mcrouter takes its port on the command line (-p), not in its config.
// A converted config listens where --listen says, or, for the tools that
// only read the config (-t, convert, ring), at this placeholder, which the
// YAML marks for the reader to change.
inline constexpr std::string_view kMcrouterPlaceholderListen = "127.0.0.1:5000";

struct McrouterOptions {
  std::string listen;  // HOST:PORT (or a unix socket path); empty: the placeholder
};

// Whether a file is mcrouter's JSON rather than memshard's YAML: its name
// ends in .json, or its first byte that is not a space opens a JSON object
// or a comment ('{' or '/'; YAML comments start with '#').
bool is_mcrouter_config(std::string_view text, std::string_view path);

struct McrouterConversion {
  std::string yaml;                 // memshard's YAML, when errors is empty
  std::vector<ConfigError> errors;  // line: the JSON's; directive: the JSON path
  // For each line of `yaml` (index = line - 1): the JSON path and line it
  // was written from, so that an error the YAML loader finds is reported
  // where the JSON says it.
  std::vector<std::pair<std::string, int>> origins;
};

McrouterConversion convert_mcrouter(std::string_view text, const std::string& file,
                                    const McrouterOptions& options);

// Loading it (the YAML through parse_config, every error said where the
// JSON has it) is conf/config.h's load_mcrouter.

}  // namespace memshard::conf
