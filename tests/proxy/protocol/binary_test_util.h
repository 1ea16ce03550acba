// Frame builders for the binary-protocol unit tests: request frames as a
// client sends them, and the fields of a response frame read back.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "proxy/protocol/binary.h"

namespace memshard::proto::binary::testing {

inline void put16(std::string& s, uint16_t v) {
  s.push_back(static_cast<char>(v >> 8));
  s.push_back(static_cast<char>(v));
}
inline void put32(std::string& s, uint32_t v) {
  for (int shift = 24; shift >= 0; shift -= 8) s.push_back(static_cast<char>(v >> shift));
}
inline void put64(std::string& s, uint64_t v) {
  for (int shift = 56; shift >= 0; shift -= 8) s.push_back(static_cast<char>(v >> shift));
}
inline std::string u32(uint32_t v) {
  std::string s;
  put32(s, v);
  return s;
}
inline std::string u64(uint64_t v) {
  std::string s;
  put64(s, v);
  return s;
}

// A request frame. The lengths are those of the parts unless given.
struct FrameSpec {
  uint8_t magic = kRequestMagic;
  uint8_t opcode = 0;
  std::string extras = {};
  std::string key = {};
  std::string value = {};
  uint32_t opaque = 0;
  uint64_t cas = 0;
  int key_length = -1;     // -1: key.size()
  int extras_length = -1;  // -1: extras.size()
  int64_t body_length = -1;
};

inline std::string frame(const FrameSpec& f) {
  std::string s;
  s.push_back(static_cast<char>(f.magic));
  s.push_back(static_cast<char>(f.opcode));
  put16(s,
        static_cast<uint16_t>(f.key_length >= 0 ? f.key_length : static_cast<int>(f.key.size())));
  s.push_back(static_cast<char>(f.extras_length >= 0 ? f.extras_length
                                                     : static_cast<int>(f.extras.size())));
  s.push_back(0);  // data type
  put16(s, 0);     // vbucket
  put32(s, static_cast<uint32_t>(
               f.body_length >= 0
                   ? f.body_length
                   : static_cast<int64_t>(f.extras.size() + f.key.size() + f.value.size())));
  put32(s, f.opaque);
  put64(s, f.cas);
  s += f.extras;
  s += f.key;
  s += f.value;
  return s;
}

inline uint32_t get32(std::string_view s, size_t at) {
  return read_u32(reinterpret_cast<const unsigned char*>(s.data() + at));
}
inline uint64_t get64(std::string_view s, size_t at) {
  return read_u64(reinterpret_cast<const unsigned char*>(s.data() + at));
}

// One response frame read back.
struct Response {
  uint8_t magic = 0, opcode = 0, extras_length = 0, data_type = 0;
  uint16_t key_length = 0, status = 0;
  uint32_t body_length = 0, opaque = 0;
  uint64_t cas = 0;
  std::string extras, key, value;
};

// Splits `bytes` into whole response frames; false when bytes are left
// over or a frame is cut short.
inline bool split_responses(std::string_view bytes, std::vector<Response>& out) {
  while (!bytes.empty()) {
    if (bytes.size() < kHeaderSize) return false;
    Response r;
    const auto* b = reinterpret_cast<const unsigned char*>(bytes.data());
    r.magic = b[0];
    r.opcode = b[1];
    r.key_length = static_cast<uint16_t>(b[2] << 8 | b[3]);
    r.extras_length = b[4];
    r.data_type = b[5];
    r.status = static_cast<uint16_t>(b[6] << 8 | b[7]);
    r.body_length = read_u32(b + 8);
    r.opaque = read_u32(b + 12);
    r.cas = read_u64(b + 16);
    if (bytes.size() < kHeaderSize + r.body_length) return false;
    if (size_t{r.key_length} + r.extras_length > r.body_length) return false;
    std::string_view body = bytes.substr(kHeaderSize, r.body_length);
    r.extras = body.substr(0, r.extras_length);
    r.key = body.substr(r.extras_length, r.key_length);
    r.value = body.substr(size_t{r.extras_length} + r.key_length);
    out.push_back(std::move(r));
    bytes.remove_prefix(kHeaderSize + r.body_length);
  }
  return true;
}

}  // namespace memshard::proto::binary::testing
