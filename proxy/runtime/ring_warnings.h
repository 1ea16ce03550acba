// Warnings about a valid config whose rings will not spread keys as the
// operator expects: said by `-t`, at startup and on reload, in the same
// words.
#pragma once

#include <string>
#include <vector>

#include "conf/config.h"

namespace memshard::proxy {

// One line per problem, "file[:line]: warning: directive: pool 'p': ...".
std::vector<std::string> ring_warnings(const conf::Config& config);

}  // namespace memshard::proxy
