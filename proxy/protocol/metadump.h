// memcached 1.6's `lru_crawler metadump all`: one line per item,
//   key=<URI-encoded key> exp=<unix time, -1: never> la=<...> cas=<...>
//   fetch=<yes|no> cls=<slab class> size=<bytes>
// each ending in a bare "\n" (memcached 1.6.18), then "END\r\n". Read by the
// background migration of reload warm-up (proxy/runtime/migration.h) to
// learn which keys a server holds, and by `memshard ring load` for sample
// keys piped from a dump (proxy/cli/sample_keys.h).
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

// nullopt for a line that is not an item: END, an error, a line without
// the dump's shape ("key=" then, after the first space, "exp="). A key
// never holds a space, so "key=x" alone is not a dump line.
std::optional<MetadumpItem> parse_metadump_line(std::string_view line);

// memcached's %XX encoding undone; a '%' not followed by two hex digits is
// kept as it is (memcached encodes '%' itself, so a dump never has one).
std::string uri_decode(std::string_view text);

}  // namespace memshard::proto
