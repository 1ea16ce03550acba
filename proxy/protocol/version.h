// What memshard answers to `version`.
#pragma once

#include <string_view>

namespace memshard::proto {

// "VERSION <memcached protocol version>-memshard-<version>\r\n", one token
// as clients that parse it expect.
std::string_view version_reply();

}  // namespace memshard::proto
