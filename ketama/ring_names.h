// The string each compatibility mode hashes to place a server's points
// (without the "-k" suffix), and its point-string format.
#pragma once

#include <string>

#include "ketama/ring_types.h"

namespace memshard::ketama::detail {

std::string ring_name_for(Mode mode, const ServerEntry& server);

}  // namespace memshard::ketama::detail
