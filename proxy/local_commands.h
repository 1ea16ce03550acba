// Replies the proxy gives itself rather than forwarding.
#pragma once

#include <string>
#include <string_view>
#include <vector>

namespace memshard::proxy {

class Proxy;

// "VERSION <memcached protocol version>-memshard-<version>\r\n", one token
// as clients that parse it expect
std::string_view version_reply();
// `stats [args]`: the proxy's own counters as memcached-style STAT lines,
// then END.
void append_stats_reply(const Proxy& proxy, const std::vector<std::string_view>& args,
                        std::string& out);

}  // namespace memshard::proxy
