// Replies the proxy gives itself rather than forwarding.
#pragma once

#include <string>
#include <string_view>

namespace memshard::proxy {

class Proxy;

// "VERSION <memshard version>\r\n"
std::string_view version_reply();
// The proxy's own counters as memcached-style STAT lines, then END.
void append_stats_reply(const Proxy& proxy, std::string& out);

}  // namespace memshard::proxy
