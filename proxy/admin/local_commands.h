// Replies the proxy gives itself rather than forwarding.
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "proxy/admin/stats_view.h"

namespace memshard::proxy {

// `stats [args]`: the proxy's own counters as memcached-style STAT lines,
// then END.
void append_stats_reply(const StatsView& proxy, const std::vector<std::string_view>& args,
                        std::string& out);

}  // namespace memshard::proxy
