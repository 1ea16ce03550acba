#include "proxy/protocol/reply_parser.h"

#include <cstdint>
#include <cstring>
#include <limits>

namespace memshard::proto {
namespace {

constexpr uint64_t kMaxU32 = std::numeric_limits<uint32_t>::max();
constexpr uint64_t kMaxU64 = std::numeric_limits<uint64_t>::max();

// Reads the digits at `p` (at least one, the value at most `max`) and moves
// `p` past them. One pass, with no division: a multi-get's reply has three
// numbers per value, and a check per digit against (max - digit) / 10 cost
// more than the rest of the line.
bool scan_digits(const char*& p, const char* end, uint64_t max, uint64_t& out) {
  const char* const start = p;
  uint64_t value = 0;
  for (; p != end; ++p) {
    const auto digit = static_cast<uint64_t>(static_cast<unsigned char>(*p) - '0');
    if (digit > 9) break;
    if (__builtin_mul_overflow(value, 10, &value) || __builtin_add_overflow(value, digit, &value))
      return false;
  }
  if (p == start || value > max) return false;
  out = value;
  return true;
}

// memcached writes its numbers with its own itoa: plain decimal digits, no
// sign, no padding (incr's reply is "5", even when the stored value is
// "5  " after a decr shortened it).
bool parse_digits(std::string_view s, uint64_t max, uint64_t& out) {
  const char* p = s.data();
  return scan_digits(p, p + s.size(), max, out) && p == s.data() + s.size();
}

// Splits off the text up to the next single space.
std::string_view next_field(std::string_view& rest) {
  const size_t space = rest.find(' ');
  std::string_view field = rest.substr(0, space);
  rest = space == std::string_view::npos ? std::string_view{} : rest.substr(space + 1);
  return field;
}

// VALUE <key> <flags> <bytes>[ <cas unique>]
// One pass over the line (the key's end found by memchr, the numbers read
// as they are scanned): a multi-get's reply is mostly these lines.
ReplyLine parse_value(std::string_view rest) {
  ReplyLine r;
  const char* p = rest.data();
  const char* const end = p + rest.size();
  const char* const key = p;
  p = static_cast<const char*>(std::memchr(p, ' ', rest.size()));
  if (p == key || p == nullptr) return r;
  const auto key_size = static_cast<size_t>(p - key);
  uint64_t flags = 0;
  uint64_t bytes = 0;
  uint64_t cas = 0;
  ++p;
  if (!scan_digits(p, end, kMaxU32, flags) || p == end || *p != ' ') return r;
  ++p;
  if (!scan_digits(p, end, kMaxU32, bytes)) return r;
  if (p != end) {  // the cas unique, last on the line
    if (*p != ' ') return r;
    ++p;
    if (!scan_digits(p, end, kMaxU64, cas) || p != end) return r;
  }
  r.kind = ReplyKind::value;
  r.key = std::string_view(key, key_size);
  r.data_bytes = bytes + 2;
  return r;
}

// VA <bytes>[ <flag>]*
ReplyLine parse_meta_value(std::string_view rest) {
  ReplyLine r;
  uint64_t bytes = 0;
  if (!parse_digits(next_field(rest), kMaxU32, bytes)) return r;
  r.kind = ReplyKind::meta_value;
  r.data_bytes = bytes + 2;
  return r;
}

bool is_word_or_prefix(std::string_view line, std::string_view word) {
  return line.starts_with(word) && (line.size() == word.size() || line[word.size()] == ' ');
}

// A complete reply in one line, as memcached 1.6.18 sends them.
bool is_one_line_reply(std::string_view line) {
  // The classic commands' status words, alone on their line.
  static constexpr std::string_view kWords[] = {"STORED",  "NOT_STORED", "EXISTS", "NOT_FOUND",
                                                "DELETED", "TOUCHED",    "OK"};
  for (std::string_view word : kWords) {
    if (line == word) return true;
  }
  // Meta status codes, alone or followed by returned flags ("HD c56 kk
  // Oabc", "EN kmissing Oop"); error lines, alone or with a message
  // (memcached's admin commands send "ERROR <message>" too); "VERSION x".
  static constexpr std::string_view kWordsWithText[] = {
      "HD", "EN", "NF", "NS", "EX", "ERROR", "CLIENT_ERROR", "SERVER_ERROR", "VERSION"};
  for (std::string_view word : kWordsWithText) {
    if (is_word_or_prefix(line, word)) return true;
  }
  // me: "ME <key> exp=-1 la=1 cas=60 fetch=no cls=1 size=61".
  if (line.starts_with("ME ") && line.size() > 3 && line[3] != ' ') return true;
  // incr/decr: the new value, a 64-bit unsigned decimal.
  uint64_t number = 0;
  return parse_digits(line, kMaxU64, number);
}

}  // namespace

ReplyLine parse_reply_line(std::string_view line) {
  ReplyLine r;
  if (line.empty() || line.size() > kMaxReplyLineLength) return r;
  if (line.starts_with("VALUE ")) return parse_value(line.substr(6));
  if (line.starts_with("VA ")) return parse_meta_value(line.substr(3));
  if (line == "END") {
    r.kind = ReplyKind::end;
  } else if (line == "MN") {
    r.kind = ReplyKind::meta_noop;
  } else if (is_one_line_reply(line)) {
    r.kind = ReplyKind::line;
  }
  return r;
}

ReplyFamily reply_family(std::string_view line) {
  const std::string_view word = line.substr(0, line.find(' '));
  for (std::string_view code : {"HD", "EN", "NF", "NS", "EX", "ME"}) {
    if (word == code) return ReplyFamily::meta;
  }
  for (std::string_view either : {"ERROR", "CLIENT_ERROR", "SERVER_ERROR", "OK"}) {
    if (word == either) return ReplyFamily::either;
  }
  return ReplyFamily::classic;
}

}  // namespace memshard::proto
