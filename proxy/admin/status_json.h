// /status.json: the document the status page and `memshard top` read once a
// second. Counters are cumulative, as in the other formats: a reader takes
// rates from two documents and their `clock_ms` (monotonic), so two pages
// open at once, or a page and `top`, disturb nothing. Its fields are listed
// in proxy/admin/README.md.
//
// No value or key from the cache is in it, except the hot keys that
// `stats hotkeys` shows, and only when `show_hot_keys` (a reader on
// loopback, or one that gave the stats token): else "hot_keys" is null and
// "hot_keys_hidden" true.
#pragma once

#include <string>

#include "proxy/admin/stats_view.h"

namespace memshard::proxy {

void render_status_json(const StatsView& view, bool show_hot_keys, std::string& out);

}  // namespace memshard::proxy
