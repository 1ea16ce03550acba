// The hash functions memshard computes itself, because Debian's libhashkit
// either lacks them (crc16 and crc32a are twemproxy's own, hsieh is compiled
// out of Debian's build) or would not give twemproxy's values.
#pragma once

#include <cstdint>
#include <string_view>

namespace memshard::ketama::detail {

uint32_t crc16(std::string_view key);
uint32_t crc32a(std::string_view key);
uint32_t hsieh(std::string_view key);

}  // namespace memshard::ketama::detail
