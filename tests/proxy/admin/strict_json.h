// A strict JSON reader (RFC 8259) for the admin tests: it refuses what a
// lenient reader (yaml-cpp, a browser's eval) would let through, such as a
// trailing comma, a raw control byte in a string or a bad escape, and keeps
// an object's members in the order written, so that a test can also see a
// name written twice. Small on purpose: documents the proxy renders, not
// arbitrary input.
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace memshard::proxy::testing {

struct Json {
  enum class Kind { null, boolean, number, string, array, object };
  Kind kind = Kind::null;
  bool boolean = false;
  std::string text;  // a number as written, or a string unescaped
  std::vector<Json> items;
  std::vector<std::pair<std::string, Json>> members;

  // The first member of that name, or null when there is none.
  const Json* find(std::string_view name) const {
    for (const auto& [n, v] : members) {
      if (n == name) return &v;
    }
    return nullptr;
  }
  size_t count(std::string_view name) const {
    size_t n = 0;
    for (const auto& m : members) n += m.first == name ? 1 : 0;
    return n;
  }
  bool is_unsigned() const {
    return kind == Kind::number && !text.empty() &&
           text.find_first_not_of("0123456789") == std::string::npos;
  }
  uint64_t as_unsigned() const { return std::stoull(text); }
  double as_double() const { return std::stod(text); }
};

class StrictJsonReader {
 public:
  // The document, or nullopt with `error` saying where it went wrong.
  static std::optional<Json> parse(std::string_view text, std::string& error) {
    StrictJsonReader r(text);
    Json value;
    if (!r.value(value, 0)) {
      error = r.error_ + " at offset " + std::to_string(r.at_);
      return std::nullopt;
    }
    r.blanks();
    if (r.at_ != text.size()) {
      error = "bytes after the document at offset " + std::to_string(r.at_);
      return std::nullopt;
    }
    return value;
  }

 private:
  explicit StrictJsonReader(std::string_view text) : s_(text) {}

  static constexpr int kMaxDepth = 64;

  bool fail(const char* why) {
    error_ = why;
    return false;
  }
  void blanks() {
    while (at_ < s_.size() &&
           (s_[at_] == ' ' || s_[at_] == '\t' || s_[at_] == '\n' || s_[at_] == '\r'))
      ++at_;
  }
  bool literal(std::string_view word) {
    if (s_.substr(at_, word.size()) != word) return fail("unknown literal");
    at_ += word.size();
    return true;
  }

  bool value(Json& out, int depth) {
    if (depth > kMaxDepth) return fail("nested too deep");
    blanks();
    if (at_ >= s_.size()) return fail("document ends where a value should be");
    const char c = s_[at_];
    if (c == '{') return object(out, depth);
    if (c == '[') return array(out, depth);
    if (c == '"') {
      out.kind = Json::Kind::string;
      return string(out.text);
    }
    if (c == 't' || c == 'f') {
      out.kind = Json::Kind::boolean;
      out.boolean = c == 't';
      return literal(c == 't' ? "true" : "false");
    }
    if (c == 'n') {
      out.kind = Json::Kind::null;
      return literal("null");
    }
    out.kind = Json::Kind::number;
    return number(out.text);
  }

  bool object(Json& out, int depth) {
    out.kind = Json::Kind::object;
    ++at_;  // {
    blanks();
    if (at_ < s_.size() && s_[at_] == '}') {
      ++at_;
      return true;
    }
    for (;;) {
      blanks();
      if (at_ >= s_.size() || s_[at_] != '"') return fail("a member name must be a string");
      std::string name;
      if (!string(name)) return false;
      blanks();
      if (at_ >= s_.size() || s_[at_] != ':') return fail("':' expected after a member name");
      ++at_;
      Json member;
      if (!value(member, depth + 1)) return false;
      out.members.emplace_back(std::move(name), std::move(member));
      blanks();
      if (at_ >= s_.size()) return fail("object not closed");
      if (s_[at_] == '}') {
        ++at_;
        return true;
      }
      if (s_[at_] != ',') return fail("',' or '}' expected in an object");
      ++at_;
    }
  }

  bool array(Json& out, int depth) {
    out.kind = Json::Kind::array;
    ++at_;  // [
    blanks();
    if (at_ < s_.size() && s_[at_] == ']') {
      ++at_;
      return true;
    }
    for (;;) {
      Json item;
      if (!value(item, depth + 1)) return false;
      out.items.push_back(std::move(item));
      blanks();
      if (at_ >= s_.size()) return fail("array not closed");
      if (s_[at_] == ']') {
        ++at_;
        return true;
      }
      if (s_[at_] != ',') return fail("',' or ']' expected in an array");
      ++at_;
    }
  }

  static int hex_digit(char c) {
    if (c >= '0' && c <= '9') return c - '0';
    if (c >= 'a' && c <= 'f') return c - 'a' + 10;
    if (c >= 'A' && c <= 'F') return c - 'A' + 10;
    return -1;
  }

  // Strings are unescaped as UTF-8 would be for \u escapes below 0x80 (all
  // the proxy writes); others are kept as '?', which no test compares.
  bool string(std::string& out) {
    ++at_;  // "
    for (;;) {
      if (at_ >= s_.size()) return fail("string not closed");
      const char c = s_[at_++];
      if (c == '"') return true;
      if (static_cast<unsigned char>(c) < 0x20) return fail("raw control byte in a string");
      if (c != '\\') {
        out.push_back(c);
        continue;
      }
      if (at_ >= s_.size()) return fail("escape at the end");
      const char e = s_[at_++];
      switch (e) {
        case '"':
        case '\\':
        case '/':
          out.push_back(e);
          break;
        case 'b':
          out.push_back('\b');
          break;
        case 'f':
          out.push_back('\f');
          break;
        case 'n':
          out.push_back('\n');
          break;
        case 'r':
          out.push_back('\r');
          break;
        case 't':
          out.push_back('\t');
          break;
        case 'u': {
          if (at_ + 4 > s_.size()) return fail("short \\u escape");
          int code = 0;
          for (int i = 0; i < 4; ++i) {
            const int d = hex_digit(s_[at_++]);
            if (d < 0) return fail("bad \\u escape");
            code = code * 16 + d;
          }
          out.push_back(code < 0x80 ? static_cast<char>(code) : '?');
          break;
        }
        default:
          return fail("unknown escape");
      }
    }
  }

  bool digits() {
    const size_t start = at_;
    while (at_ < s_.size() && s_[at_] >= '0' && s_[at_] <= '9') ++at_;
    return at_ > start;
  }

  // -?(0|[1-9][0-9]*)(\.[0-9]+)?([eE][+-]?[0-9]+)?
  bool number(std::string& out) {
    const size_t start = at_;
    if (at_ < s_.size() && s_[at_] == '-') ++at_;
    if (at_ < s_.size() && s_[at_] == '0') {
      ++at_;
    } else if (!digits()) {
      return fail("not a value");
    }
    if (at_ < s_.size() && s_[at_] == '.') {
      ++at_;
      if (!digits()) return fail("digits expected after '.'");
    }
    if (at_ < s_.size() && (s_[at_] == 'e' || s_[at_] == 'E')) {
      ++at_;
      if (at_ < s_.size() && (s_[at_] == '+' || s_[at_] == '-')) ++at_;
      if (!digits()) return fail("digits expected in an exponent");
    }
    out.assign(s_.substr(start, at_ - start));
    return true;
  }

  std::string_view s_;
  size_t at_ = 0;
  std::string error_;
};

}  // namespace memshard::proxy::testing
