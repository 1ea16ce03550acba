// Replies the proxy gives in memcached's name, byte for byte as memcached
// 1.6.18 sends them (each verified against the real server).
#pragma once

#include <cstdint>
#include <string_view>

#include "proxy/protocol/request.h"

namespace memshard::proto::reply {

inline constexpr std::string_view kError = "ERROR\r\n";
inline constexpr std::string_view kEnd = "END\r\n";
inline constexpr std::string_view kOk = "OK\r\n";
inline constexpr std::string_view kMetaNoop = "MN\r\n";
inline constexpr std::string_view kBadFormat = "CLIENT_ERROR bad command line format\r\n";
inline constexpr std::string_view kBadDelta = "CLIENT_ERROR invalid numeric delta argument\r\n";
inline constexpr std::string_view kBadExptime = "CLIENT_ERROR invalid exptime argument\r\n";
inline constexpr std::string_view kDeleteUsage =
    "CLIENT_ERROR bad command line format.  Usage: delete <key> [noreply]\r\n";
inline constexpr std::string_view kTooLarge = "SERVER_ERROR object too large for cache\r\n";
// To a client past client_connections or the descriptor limit, which is
// then closed.
inline constexpr std::string_view kTooManyConnections = "ERROR Too many open connections\r\n";

// Meta commands.
inline constexpr std::string_view kMgFlagsTooLong = "CLIENT_ERROR options flags are too long\r\n";
inline constexpr std::string_view kFlagsTooLong = "CLIENT_ERROR options flags too long\r\n";
inline constexpr std::string_view kInvalidOrDuplicateFlag =
    "CLIENT_ERROR invalid or duplicate flag\r\n";
inline constexpr std::string_view kDuplicateFlag = "CLIENT_ERROR duplicate flag\r\n";
inline constexpr std::string_view kInvalidFlag = "CLIENT_ERROR invalid flag\r\n";
inline constexpr std::string_view kBadKeyEncoding = "CLIENT_ERROR error decoding key\r\n";
inline constexpr std::string_view kBadToken = "CLIENT_ERROR bad token in command line format\r\n";
inline constexpr std::string_view kBadModeLength = "CLIENT_ERROR incorrect length for M token\r\n";
inline constexpr std::string_view kBadInitial = "CLIENT_ERROR invalid numeric initial value\r\n";
inline constexpr std::string_view kBadMetaDelta = "CLIENT_ERROR invalid numeric delta value\r\n";
inline constexpr std::string_view kOpaqueTooLong = "CLIENT_ERROR opaque token too long\r\n";
inline constexpr std::string_view kBadMsMode = "CLIENT_ERROR invalid mode for ms M token\r\n";

// The proxy's own failures, in memcached's SERVER_ERROR form. Lines
// without their "\r\n": they also go into logs and into a multi-get's
// first-failure record.
namespace own {
inline constexpr std::string_view kBackendTimeout = "SERVER_ERROR backend timeout";
inline constexpr std::string_view kBackendUnavailable = "SERVER_ERROR backend unavailable";
inline constexpr std::string_view kBackendClosed = "SERVER_ERROR backend closed the connection";
inline constexpr std::string_view kBackendGarbled = "SERVER_ERROR backend sent an invalid reply";
// server_queue_limit: the server has that many requests waiting already.
inline constexpr std::string_view kBackendQueueFull = "SERVER_ERROR backend queue full";
inline constexpr std::string_view kNoDescriptors = "SERVER_ERROR proxy out of file descriptors";
inline constexpr std::string_view kNoMemory = "SERVER_ERROR proxy out of memory";
inline constexpr std::string_view kNoPool = "SERVER_ERROR pool not configured";
// A routing pool with no route for the key (no prefix matches, no default).
inline constexpr std::string_view kNoRoute = "CLIENT_ERROR no route for this key";
}  // namespace own

// Marks `out` as answered by the proxy with `text`, discarding `swallow`
// input bytes after the line.
inline void answer(Request& out, std::string_view text, uint64_t swallow = 0) {
  out.action = Action::error;
  out.error_reply = text;
  out.swallow = swallow;
}

}  // namespace memshard::proto::reply
