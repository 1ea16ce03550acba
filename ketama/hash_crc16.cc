// twemproxy 0.5's "crc16": the CRC-16/XMODEM table (polynomial 0x1021), but
// the running value is a 32-bit integer that is never masked to 16 bits, so
// the high bits shifted out of a real CRC-16 stay and the result is a full
// 32-bit number (3662830516 for "apple"). Later twemproxy versions replaced
// it with a true CRC-16; nutcracker 0.5.0 (checked in the Debian binary) has
// this one, and that is the one whose rings we must reproduce.
#include <array>

#include "ketama/hash_internal.h"

namespace memshard::ketama::detail {
namespace {

constexpr std::array<uint16_t, 256> make_xmodem_table() {
  std::array<uint16_t, 256> table{};
  for (uint32_t byte = 0; byte < 256; ++byte) {
    uint32_t crc = byte << 8;
    for (int bit = 0; bit < 8; ++bit) {
      crc = (crc & 0x8000) != 0 ? (crc << 1) ^ 0x1021 : crc << 1;
    }
    table[byte] = static_cast<uint16_t>(crc & 0xffff);
  }
  return table;
}

constexpr std::array<uint16_t, 256> kXmodemTable = make_xmodem_table();
static_assert(kXmodemTable[1] == 0x1021 && kXmodemTable[255] == 0x1ef0);

}  // namespace

uint32_t crc16(std::string_view key) {
  uint32_t crc = 0;
  for (char c : key) {
    // The table index only uses the low 8 bits, so the signedness of the
    // key byte does not matter here.
    uint32_t index = ((crc >> 8) ^ static_cast<uint8_t>(c)) & 0xff;
    crc = (crc << 8) ^ kXmodemTable[index];
  }
  return crc;
}

}  // namespace memshard::ketama::detail
