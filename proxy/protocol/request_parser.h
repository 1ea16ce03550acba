// Parsing of one client request line of the memcached text protocol.
//
// Pure functions over bytes: no libevent, no sockets, so unit tests and
// fuzzers feed them plain strings. The caller finds the end of the line
// ("\r\n", or a bare "\n" as memcached also accepts) and hands the line
// without its terminator; for storage commands the outcome says how many
// data bytes (value + "\r\n") follow the line.
//
// Line contract (memcached 1.6.18, try_read_command_ascii): the line ends
// at the first "\n"; the caller drops it and then one "\r" just before it,
// if any. Only one: "get k\r\r\n" asks for the key "k\r". (memcached keeps
// the "\r" of a line that is exactly "\r\n"; both ways it is ERROR.) The
// line may hold any byte; a NUL ends it as far as memcached is concerned,
// and so for this parser, but a forwarded line is sent whole, NUL and all,
// so the server sees what it would have seen. Tokens are separated by
// spaces only; a tab is part of a token, as in memcached.
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
  forward,    // one key: send the line as received (+ data) to the key's server
  multi_get,  // get/gets/gat/gats, even with one key: split per server, one
              // fragment per server holding keys (append_retrieval_line)
  broadcast,  // every server of the pool (flush_all)
  local,      // the proxy answers itself (version, verbosity, stats, mn, quit;
              // quit closes after the replies before it are written)
  error,      // answer `error_reply`, then discard `swallow` bytes of input.
              // Also the fixed answer "END\r\n" to "gat <exptime>" with no
              // key. `error_reply` is empty when memcached would suppress the
              // error (classic noreply).
  close,      // answer `error_reply` (may be empty) and close the connection
              // (not produced by parse_request_line; see line_too_long)
};

struct Limits {
  uint32_t item_size_max = 1024 * 1024;  // largest value accepted (memcached -I)
};

// Reused between calls: clear() keeps the capacity, so parsing allocates
// nothing once a connection has seen its largest request.
struct Request {
  Command command{};
  Action action{};
  // Meaningful unless the line names no known command (error "ERROR").
  // "bget" (an old alias memcached still answers) parses as get.
  // Views into the parsed line. For meta commands with the `b` flag, `keys`
  // holds the *decoded* key (in `decoded_key`), which is what routing hashes.
  // (So a copied Request still points into the original's decoded_key.)
  std::vector<std::string_view> keys;
  std::string decoded_key;
  // For action == local: the tokens after the command word ("stats items"
  // gives {"items"}; verbosity's level is args[0], already validated).
  std::vector<std::string_view> args;
  // gat/gats: the exptime token, repeated in every fragment.
  std::string_view exptime;
  // Bytes that follow the line: value + "\r\n" (storage and ms), else 0.
  uint64_t data_bytes = 0;
  // The client asked not to see (some) replies: classic `noreply`, or the
  // meta `q` flag. The proxy sends the request unchanged followed by `mn`,
  // so the server applies its own quiet rules and the reply always ends
  // with "MN\r\n", which the proxy strips.
  // Classic noreply is memcached's rule: the last token is "noreply", for
  // storage commands, incr, decr, touch, delete (with 3+ tokens),
  // verbosity and flush_all; set even when the line is then refused, as
  // memcached then refuses silently. Meta: a flag token starting with 'q'
  // (memcached shows meta errors anyway, so error_reply is never empty).
  bool quiet = false;
  // For action == error/close: the whole reply, "\r\n" included.
  std::string_view error_reply;
  // For action == error: input bytes after the line to discard unread
  // (the value of a too-large set, as memcached swallows it).
  uint64_t swallow = 0;
  // For action == error: memcached also drops the key's current value (a
  // `set` or `ms` refused as too large must not leave stale data behind),
  // so the proxy deletes `keys[0]` on its server. `key_base64`: the key as
  // written in the line is base64 (`raw_key`), keys[0] is decoded.
  bool invalidate_key = false;
  bool key_base64 = false;
  std::string_view raw_key;

  void clear();
};

// Parses `line` (no trailing "\r\n"/"\n", see the line contract above)
// into `out`. A storage value longer than limits.item_size_max is refused
// as memcached refuses it ("SERVER_ERROR object too large for cache",
// value swallowed). memcached's own limit is on the whole item: with -I 1m
// it refuses values above 1048576 - 56 - (key length + 1) - 2, 4 less with
// non-zero flags (1048516 bytes for a 1-byte key, memcached 1.6.18); the
// proxy forwards such values and the server refuses them the same way.
void parse_request_line(std::string_view line, const Limits& limits, Request& out);

// memcached closes a connection whose line grows past this without a
// newline, unless the line is a get/gets (whose key lists may be long).
inline constexpr size_t kMaxLineLength = 2048;
// Our bound for get/gets lines, which memcached leaves unbounded.
inline constexpr size_t kMaxRetrievalLineLength = 512 * 1024;

// For input with no newline yet: true when the connection must be closed
// (memcached's "line too long" rule, with our own bound for retrievals).
// memcached's rule: past 2048 bytes, a line is kept only if, after at most
// 100 leading spaces, it starts with "get " or "gets " (not gat, not bget).
// memcached closes without a word: answer nothing.
bool line_too_long(std::string_view partial_line);

// The line that fetches `keys` from one server for a multi-get request:
// "get k1 k2\r\n" / "gat 100 k1 k2\r\n". Appends to `out`.
void append_retrieval_line(const Request& request, const std::vector<std::string_view>& keys,
                           std::string& out);

// Decodes RFC 4648 base64, strictly: padding required, no stray bytes,
// zero pad bits. False on malformed input. memcached's own decoder accepts
// more, so the request parser routes `b` keys with the lenient
// memcached_base64_decode() of proxy/proto_base64.h instead.
bool base64_decode(std::string_view in, std::string& out);

}  // namespace memshard::proto
