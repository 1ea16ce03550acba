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

#include "proxy/protocol/request.h"

namespace memshard::proto {

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

}  // namespace memshard::proto
