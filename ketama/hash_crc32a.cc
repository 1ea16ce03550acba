// twemproxy's "crc32a": the standard CRC-32 (IEEE 802.3, reflected, as in
// zlib). Its "crc32" is libmemcached's odd 15-bit variant, which libhashkit
// provides; this one libhashkit does not have.
#include <array>

#include "ketama/hash_internal.h"

namespace memshard::ketama::detail {
namespace {

constexpr std::array<uint32_t, 256> make_crc32_table() {
  std::array<uint32_t, 256> table{};
  for (uint32_t byte = 0; byte < 256; ++byte) {
    uint32_t crc = byte;
    for (int bit = 0; bit < 8; ++bit) {
      crc = (crc & 1) != 0 ? (crc >> 1) ^ 0xedb88320u : crc >> 1;
    }
    table[byte] = crc;
  }
  return table;
}

constexpr std::array<uint32_t, 256> kCrc32Table = make_crc32_table();
static_assert(kCrc32Table[1] == 0x77073096u && kCrc32Table[255] == 0x2d02ef8du);

}  // namespace

uint32_t crc32a(std::string_view key) {
  uint32_t crc = ~0u;
  for (char c : key) {
    crc = kCrc32Table[(crc ^ static_cast<uint8_t>(c)) & 0xff] ^ (crc >> 8);
  }
  return ~crc;
}

}  // namespace memshard::ketama::detail
