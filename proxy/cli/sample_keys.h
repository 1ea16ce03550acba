// Sample keys for `memshard ring load`, one per line: either the key
// itself, or a line of memcached's `lru_crawler metadump` output
// ("key=user%3A1 exp=-1 la=... cas=... fetch=no cls=1 size=66"), whose key
// is URI-encoded, so that a dump can be piped straight in.
#pragma once

#include <istream>
#include <string>
#include <string_view>
#include <vector>

namespace memshard::proxy {

// memcached's %XX encoding undone; a '%' not followed by two hex digits is
// kept as it is.
std::string uri_decode(std::string_view text);

// Every key in `in`. A line of a metadump gives its decoded key, and the
// "END" that closes a dump is skipped once a metadump line was seen; any
// other line is a key as written (a trailing '\r' dropped).
std::vector<std::string> read_sample_keys(std::istream& in);

}  // namespace memshard::proxy
