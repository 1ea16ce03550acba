// Tokenising a request line the way memcached's tokenize_command() does.
#pragma once

#include <array>
#include <cstddef>
#include <string_view>

namespace memshard::proto {

// memcached separates tokens by ' ' only: tabs and other control bytes
// are part of a token ("get\tk" is the unknown command "get\tk"), runs of
// spaces and leading/trailing spaces produce no empty tokens.
class TokenCursor {
 public:
  explicit TokenCursor(std::string_view rest) : rest_(rest) {}

  // The next token, or false at the end of the line.
  bool next(std::string_view& token) {
    size_t start = 0;
    while (start < rest_.size() && rest_[start] == ' ') ++start;
    if (start == rest_.size()) return false;
    size_t end = rest_.find(' ', start);
    if (end == std::string_view::npos) end = rest_.size();
    token = rest_.substr(start, end - start);
    rest_.remove_prefix(end);
    return true;
  }

 private:
  std::string_view rest_;
};

// The first tokens of a line, as memcached sees them for every command but
// the get family: it keeps at most 23 tokens and one terminal entry, and
// commands check their arity on that count (memcached's `ntokens`, which
// is one more than the tokens it holds, at most 24).
struct LineTokens {
  static constexpr size_t kMaxTokens = 24;  // memcached's MAX_TOKENS
  std::array<std::string_view, kMaxTokens> token;
  size_t count = 0;  // tokens read, capped at kMaxTokens

  explicit LineTokens(std::string_view line) {
    TokenCursor cursor(line);
    while (count < kMaxTokens && cursor.next(token[count])) ++count;
  }

  // memcached's ntokens: the tokens it kept (at most 23) plus the terminal.
  size_t ntokens() const { return (count < kMaxTokens - 1 ? count : kMaxTokens - 1) + 1; }

  // memcached's set_noreply_maybe(): the last kept token is "noreply".
  bool last_is_noreply() const { return ntokens() >= 2 && token[ntokens() - 2] == "noreply"; }
};

}  // namespace memshard::proto
