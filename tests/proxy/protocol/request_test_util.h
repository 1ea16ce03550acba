// Shared fixture of the request parser tests.
//
// Every expected error reply in these tests is what memcached 1.6.18
// (/usr/bin/memcached, default settings) answered to the same bytes,
// sent over a socket followed by "\r\n"; "swallow" cases were checked by
// sending the data after the line and seeing it was not read as a command.
#pragma once

#include <gtest/gtest.h>

#include <string>
#include <string_view>

#include "proxy/protocol/request_parser.h"

namespace memshard::proto {

class RequestTest : public ::testing::Test {
 protected:
  // The Request is a member: its keys may point into its own decoded_key.
  const Request& parse(std::string_view line) {
    parse_request_line(line, limits_, request_);
    return request_;
  }

  // The proxy answers `line` itself with `reply` and skips `swallow` bytes.
  void expect_answer(std::string_view line, std::string_view reply, uint64_t swallow = 0) {
    SCOPED_TRACE(std::string(line.substr(0, 80)));
    const Request& r = parse(line);
    EXPECT_EQ(r.action, Action::error);
    EXPECT_EQ(r.error_reply, reply);
    EXPECT_EQ(r.swallow, swallow);
  }

  void expect_forward(std::string_view line, Command command, std::string_view key,
                      uint64_t data_bytes = 0, bool quiet = false) {
    SCOPED_TRACE(std::string(line.substr(0, 80)));
    const Request& r = parse(line);
    EXPECT_EQ(r.action, Action::forward);
    EXPECT_EQ(r.command, command);
    ASSERT_EQ(r.keys.size(), 1u);
    EXPECT_EQ(r.keys[0], key);
    EXPECT_EQ(r.data_bytes, data_bytes);
    EXPECT_EQ(r.quiet, quiet);
  }

  Limits limits_;
  Request request_;
};

inline constexpr std::string_view kError = "ERROR\r\n";
inline constexpr std::string_view kBadFormat = "CLIENT_ERROR bad command line format\r\n";
inline constexpr std::string_view kTooLarge = "SERVER_ERROR object too large for cache\r\n";
// One byte past memcached's longest key (KEY_MAX_LENGTH, 250).
inline const std::string kLongKey(251, 'x');

}  // namespace memshard::proto
