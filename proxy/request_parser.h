// Parsing of one client request line of the memcached text protocol.
//
// Pure functions over bytes: no libevent, no sockets, so unit tests and
// fuzzers feed them plain strings. The caller finds the end of the line
// ("\r\n", or a bare "\n" as memcached also accepts) and hands the line
// without its terminator; for storage commands the outcome says how many
// data bytes (value + "\r\n") follow the line.
//
// Every malformed request gets the reply memcached 1.6 itself gives to the
// same bytes, so a client cannot tell the proxy from a server.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace memshard::proto {

inline constexpr size_t kMaxKeyLength = 250;

enum class Command : uint8_t {
  get,
  gets,
  gat,
  gats,
  set,
  add,
  replace,
  append,
  prepend,
  cas,
  delete_,
  incr,
  decr,
  touch,
  meta_get,         // mg
  meta_set,         // ms
  meta_delete,      // md
  meta_arithmetic,  // ma
  meta_debug,       // me
  meta_noop,        // mn
  version,
  verbosity,
  quit,
  stats,
  flush_all,
};

// What the proxy does with a request.
enum class Action : uint8_t {
  forward,    // one key: send `backend_line` (+ data) to the key's server
  multi_get,  // many keys: split per server (get/gets/gat/gats)
  broadcast,  // every server of the pool (flush_all)
  local,      // the proxy answers itself (version, verbosity, stats, mn, quit)
  error,      // answer `error_reply`, then discard `swallow` bytes of input
  close,      // answer `error_reply` (may be empty) and close the connection
};

struct Limits {
  uint32_t item_size_max = 1024 * 1024;  // largest value accepted (memcached -I)
};

// Reused between calls: clear() keeps the capacity, so parsing allocates
// nothing once a connection has seen its largest request.
struct Request {
  Command command{};
  Action action{};
  // Views into the parsed line. For meta commands with the `b` flag, `keys`
  // holds the *decoded* key (in `decoded_key`), which is what routing hashes.
  std::vector<std::string_view> keys;
  std::string decoded_key;
  // gat/gats: the exptime token, repeated in every fragment.
  std::string_view exptime;
  // Bytes that follow the line: value + "\r\n" (storage and ms), else 0.
  uint64_t data_bytes = 0;
  // The client asked not to see (some) replies: classic `noreply`, or the
  // meta `q` flag. The proxy sends the request unchanged followed by `mn`,
  // so the server applies its own quiet rules and the reply always ends
  // with "MN\r\n", which the proxy strips.
  bool quiet = false;
  // For action == error/close: the whole reply, "\r\n" included.
  std::string_view error_reply;
  // For action == error: input bytes after the line to discard unread
  // (the value of a too-large set, as memcached swallows it).
  uint64_t swallow = 0;

  void clear();
};

// Parses `line` (no trailing "\r\n"/"\n") into `out`.
void parse_request_line(std::string_view line, const Limits& limits, Request& out);

// memcached closes a connection whose line grows past this without a
// newline, unless the line is a get/gets (whose key lists may be long).
inline constexpr size_t kMaxLineLength = 2048;
// Our bound for get/gets lines, which memcached leaves unbounded.
inline constexpr size_t kMaxRetrievalLineLength = 512 * 1024;

// For input with no newline yet: true when the connection must be closed
// (memcached's "line too long" rule, with our own bound for retrievals).
bool line_too_long(std::string_view partial_line);

// The line that fetches `keys` from one server for a multi-get request:
// "get k1 k2\r\n" / "gat 100 k1 k2\r\n". Appends to `out`.
void append_retrieval_line(const Request& request, const std::vector<std::string_view>& keys,
                           std::string& out);

// Decodes RFC 4648 base64 (the meta `b` flag). False on malformed input.
bool base64_decode(std::string_view in, std::string& out);

}  // namespace memshard::proto
