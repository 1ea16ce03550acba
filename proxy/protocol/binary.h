// memcached's binary protocol: the frame header, opcodes and status codes
// (memcached 1.6.18's protocol_binary.h and proto_bin.c, the protocol as
// the server really speaks it; the protocol is deprecated upstream but
// still the only one some clients speak).
//
// A frame is a 24-byte header, then `extras_length` bytes of extras, then
// `key_length` bytes of key, then the value: `body_length` counts all
// three. Numbers are big-endian.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

namespace memshard::proto::binary {

inline constexpr uint8_t kRequestMagic = 0x80;
inline constexpr uint8_t kResponseMagic = 0x81;
inline constexpr size_t kHeaderSize = 24;

namespace op {
inline constexpr uint8_t get = 0x00;
inline constexpr uint8_t set = 0x01;
inline constexpr uint8_t add = 0x02;
inline constexpr uint8_t replace = 0x03;
inline constexpr uint8_t delete_ = 0x04;
inline constexpr uint8_t increment = 0x05;
inline constexpr uint8_t decrement = 0x06;
inline constexpr uint8_t quit = 0x07;
inline constexpr uint8_t flush = 0x08;
inline constexpr uint8_t getq = 0x09;
inline constexpr uint8_t noop = 0x0a;
inline constexpr uint8_t version = 0x0b;
inline constexpr uint8_t getk = 0x0c;
inline constexpr uint8_t getkq = 0x0d;
inline constexpr uint8_t append = 0x0e;
inline constexpr uint8_t prepend = 0x0f;
inline constexpr uint8_t stat = 0x10;
inline constexpr uint8_t setq = 0x11;
inline constexpr uint8_t addq = 0x12;
inline constexpr uint8_t replaceq = 0x13;
inline constexpr uint8_t deleteq = 0x14;
inline constexpr uint8_t incrementq = 0x15;
inline constexpr uint8_t decrementq = 0x16;
inline constexpr uint8_t quitq = 0x17;
inline constexpr uint8_t flushq = 0x18;
inline constexpr uint8_t appendq = 0x19;
inline constexpr uint8_t prependq = 0x1a;
inline constexpr uint8_t verbosity = 0x1b;
inline constexpr uint8_t touch = 0x1c;
inline constexpr uint8_t gat = 0x1d;
inline constexpr uint8_t gatq = 0x1e;
inline constexpr uint8_t sasl_list_mechs = 0x20;
inline constexpr uint8_t sasl_auth = 0x21;
inline constexpr uint8_t sasl_step = 0x22;
inline constexpr uint8_t gatk = 0x23;
inline constexpr uint8_t gatkq = 0x24;
}  // namespace op

enum class Status : uint16_t {
  ok = 0x0000,
  key_not_found = 0x0001,
  key_exists = 0x0002,
  too_large = 0x0003,
  invalid_arguments = 0x0004,
  not_stored = 0x0005,
  non_numeric = 0x0006,
  auth_error = 0x0020,
  unknown_command = 0x0081,
  out_of_memory = 0x0082,
  // Not one memcached sends: the proxy's own failures (no server reachable,
  // a timeout), for which memcached has no word. The binary protocol's
  // "temporary failure" says what they are: try again later.
  temporary_failure = 0x0086,
};

struct Header {
  uint8_t magic = 0;
  uint8_t opcode = 0;
  uint16_t key_length = 0;
  uint8_t extras_length = 0;
  uint8_t data_type = 0;
  uint16_t vbucket_or_status = 0;
  uint32_t body_length = 0;
  uint32_t opaque = 0;  // as the client sent it: echoed byte for byte
  uint64_t cas = 0;
};

// `bytes` holds at least kHeaderSize bytes.
Header decode_header(const unsigned char* bytes);

// Big-endian numbers of the frame body.
uint32_t read_u32(const unsigned char* p);
uint64_t read_u64(const unsigned char* p);
void append_u32(std::string& out, uint32_t v);
void append_u64(std::string& out, uint64_t v);

// memcached's text for a status in an error frame's body ("Not found"...).
std::string_view status_text(Status status);

// Appends a response header (magic 0x81) to `out`.
void append_response_header(std::string& out, uint8_t opcode, Status status, uint8_t extras_length,
                            uint16_t key_length, uint32_t body_length, uint32_t opaque,
                            uint64_t cas);

// Appends a whole error frame: header and memcached's text for `status`.
void append_error(std::string& out, uint8_t opcode, uint32_t opaque, Status status);

// The quiet opcodes: their success replies are not sent (a get's miss
// counts as its success; its hit is always sent). Errors always are.
bool is_quiet(uint8_t opcode);
// The opcode a quiet one is handled as (getq: get), as memcached's
// dispatch_bin_command does; others are returned as they are.
uint8_t loud_opcode(uint8_t opcode);

}  // namespace memshard::proto::binary
