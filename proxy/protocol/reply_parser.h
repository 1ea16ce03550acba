// Parsing of one server reply line of the memcached text protocol.
//
// Pure functions over bytes, like request_parser.h. The caller reads the
// line, asks what it is, and for replies that carry data reads that many
// bytes (value + "\r\n") after it.
#pragma once

#include <cstdint>
#include <string_view>

namespace memshard::proto {

enum class ReplyKind : uint8_t {
  value,       // "VALUE <key> <flags> <bytes> [<cas>]": data follows; more lines follow
  end,         // "END": ends a retrieval reply
  meta_value,  // "VA <bytes> <flags>*": data follows; ends the reply after the data
  meta_noop,   // "MN": the end marker of a quiet request
  line,        // any other well-formed one-line reply (STORED, HD, 42, ERROR, ...)
  invalid,     // not something a memcached server sends: the connection is broken
};

struct ReplyLine {
  ReplyKind kind = ReplyKind::invalid;
  std::string_view key;     // for value
  uint64_t data_bytes = 0;  // for value and meta_value: value length + 2
};

// `line` has no trailing "\r\n". Lines longer than kMaxReplyLineLength are
// invalid (the caller stops reading earlier and treats that as invalid).
ReplyLine parse_reply_line(std::string_view line);

inline constexpr size_t kMaxReplyLineLength = 8192;

// Whose words a one-line reply (ReplyKind::line) is in. memcached answers a
// meta command with a two-letter code (HD, EN, NF, NS, EX; ME for me) and a
// classic one with a word (STORED, NOT_FOUND, DELETED, VERSION ...) or a
// number. An error line (ERROR, CLIENT_ERROR, SERVER_ERROR) may answer
// either, and so may OK: flush_all's answer, and a meta write's where HD is
// now (memcached up to 1.6.17 with -o meta_response_old). A reply in the
// other protocol's words is not an answer to the request waiting for it.
enum class ReplyFamily : uint8_t { classic, meta, either };
ReplyFamily reply_family(std::string_view line);

// How a VALUE line starts: a cheap look before parsing a line in full.
inline constexpr std::string_view kValueLinePrefix = "VALUE ";

}  // namespace memshard::proto
