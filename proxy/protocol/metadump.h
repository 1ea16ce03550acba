// memcached 1.6's `lru_crawler metadump all`: one line per item,
//   key=<percent-encoded key> exp=<unix time, -1: never> la=<...> cas=<...>
//   fetch=<yes|no> cls=<slab class> size=<bytes>
// each ending in a bare "\n" (memcached 1.6.18), then "END\r\n". The background migration of reload
// warm-up reads it to learn which keys a server holds (proxy/runtime/migration.h).
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

namespace memshard::proto {

struct MetadumpItem {
  std::string key;  // decoded
  int64_t exp = -1;
};

// nullopt for a line that is not an item (END, an error, garbage), or
// whose key does not decode.
std::optional<MetadumpItem> parse_metadump_line(std::string_view line);

}  // namespace memshard::proto
