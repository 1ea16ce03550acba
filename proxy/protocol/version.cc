#include "proxy/protocol/version.h"

namespace memshard::proto {

// Clients and test suites read the number after VERSION to decide which
// protocol features the server has (memccapable, for one, expects 1.6's
// rules only from a server that says 1.6). memshard speaks memcached
// 1.6.18's text and meta protocol, so it says so first and names itself
// after.
std::string_view version_reply() {
  return "VERSION " MEMSHARD_PROTOCOL_VERSION "-memshard-" MEMSHARD_VERSION "\r\n";
}

}  // namespace memshard::proto
