// memshard-openloop: the requests it sends and the replies it reads, in
// memcached's text, meta and binary protocols. Pure (no I/O), so the unit
// tests feed it bytes.
//
//   text    get k1 ... kN                     set k F 0 N
//   meta    mg k v f k (N > 1: each with q,   ms k N F<flags>
//           then mn)
//   binary  GETK (N > 1: GETKQ each, NOOP)    SET
//
// Every value read back is checked against loadgen_value.h's pattern for its
// key (bytes, length and client flags), whoever wrote it.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

#include "loadgen_value.h"

namespace memshard::bench {

enum class Protocol { text, meta, binary };

// The keys a run uses: prefix + decimal index, 0 .. count-1.
struct KeyNames {
  std::string prefix;
  // Appends key i's name to out.
  void append(uint32_t i, std::string& out) const;
  std::string name(uint32_t i) const {
    std::string s;
    append(i, s);
    return s;
  }
};

struct Request {
  static constexpr int kMaxKeys = 100;
  bool set = false;
  int nkeys = 1;  // a get's keys; 1 for a set
  uint32_t keys[kMaxKeys] = {};
};

// Appends the request's bytes to out. value_size: a set's value length.
void encode_request(Protocol p, const Request& r, const KeyNames& names, const ValuePattern& values,
                    size_t value_size, std::string& out);

struct ReplyResult {
  enum Kind { incomplete, done, malformed } kind = incomplete;
  size_t consumed = 0;  // bytes of `in` the reply took (when done)
  uint32_t hits = 0;
  uint32_t misses = 0;
  uint32_t mismatches = 0;    // a value, length or flags not the key's
  bool server_error = false;  // ERROR, CLIENT_ERROR, SERVER_ERROR, NOT_STORED, a binary status
};

// Reads the reply to `r` from the start of `in`: incomplete until all of it
// is there; done with what it said; malformed when it cannot be a reply.
ReplyResult parse_reply(Protocol p, const Request& r, std::string_view in,
                        const ValuePattern& values, size_t value_size);

bool parse_protocol(std::string_view name, Protocol& out);
const char* protocol_name(Protocol p);

}  // namespace memshard::bench
