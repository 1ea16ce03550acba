// The hot keys of each pool (hot_key_sketch.h: the workers' summaries
// merged), in each format the stats come in. A key is shown escaped: bytes
// other than printable ASCII, and '%', as %XX.
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "proxy/admin/stats_view.h"

namespace memshard::proxy {

// Keys shown per pool: bounds the Prometheus label cardinality too.
inline constexpr size_t kHotKeysShown = 10;

// The keys shown for one pool, hottest first, at most kHotKeysShown.
std::vector<HotKeyReport> shown_hot_keys(const StatsSnapshot::PoolTotals& pool);
// A key (or name) as every format shows it: printable ASCII but for '%',
// '"' and '\\', the rest as %XX.
std::string escaped_hot_key(std::string_view key);

// `stats hotkeys`: per pool and rank, STAT lines for key, share, error and
// server, then END.
void render_stat_hot_keys(const StatsSnapshot& snap, std::string& out);
// The JSON stats' "hotkeys" field: `, "hotkeys": [{...}, ...]` (a list,
// so that twemproxy tools, which take each object field for a pool, skip it).
void append_hot_keys_json(const StatsSnapshot& snap, std::string& out);
// The memshard_hot_key_share and memshard_hot_key_share_error gauges.
void append_hot_keys_prometheus(const StatsSnapshot& snap, std::string& out);

}  // namespace memshard::proxy
