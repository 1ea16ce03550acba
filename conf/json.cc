// JSON through rapidjson's SAX reader, into a tree of our own whose values
// carry their line (rapidjson's DOM keeps no positions).
#include "conf/json.h"

#include <rapidjson/error/en.h>
#include <rapidjson/reader.h>
#include <rapidjson/stream.h>

#include <algorithm>
#include <cstddef>

namespace memshard::conf::json {
namespace {

// A config nests a few levels; this bounds the tree (and its destruction,
// which recurses) against a hostile file.
constexpr size_t kMaxDepth = 100;

// Line numbers of byte offsets.
class LineIndex {
 public:
  explicit LineIndex(std::string_view text) {
    for (size_t i = 0; i < text.size(); ++i)
      if (text[i] == '\n') breaks_.push_back(i);
  }
  int line_of(size_t offset) const {
    const auto it = std::lower_bound(breaks_.begin(), breaks_.end(), offset);
    return static_cast<int>(it - breaks_.begin()) + 1;
  }

 private:
  std::vector<size_t> breaks_;
};

class Builder : public rapidjson::BaseReaderHandler<rapidjson::UTF8<>, Builder> {
 public:
  Builder(const rapidjson::StringStream& in, const LineIndex& lines) : in_(in), lines_(lines) {}

  bool Null() { return add(Value::Type::null, "null"); }
  bool Bool(bool b) { return add(Value::Type::boolean, b ? "true" : "false"); }
  bool RawNumber(const char* s, rapidjson::SizeType n, bool) {
    return add(Value::Type::number, std::string(s, n));
  }
  bool String(const char* s, rapidjson::SizeType n, bool) {
    return add(Value::Type::string, std::string(s, n));
  }
  bool StartObject() { return open(Value::Type::object); }
  bool StartArray() { return open(Value::Type::array); }
  bool EndObject(rapidjson::SizeType) { return close(); }
  bool EndArray(rapidjson::SizeType) { return close(); }
  bool Key(const char* s, rapidjson::SizeType n, bool) {
    std::string key(s, n);
    const Value& object = stack_.back();
    for (size_t i = 0; i < object.members.size(); ++i) {
      if (object.members[i].first != key) continue;
      error_line_ = here();
      error_ = "key \"" + key + "\" is already given on line " +
               std::to_string(object.key_lines[i]) + "; expected each key once in an object";
      return false;
    }
    key_ = std::move(key);
    key_line_ = here();
    return true;
  }

  std::optional<Value> root;
  int error_line_ = 0;
  std::string error_;

 private:
  // The line of the token just read (the stream stands after it).
  int here() const {
    const size_t at = in_.Tell();
    return lines_.line_of(at == 0 ? 0 : at - 1);
  }

  void place(Value v) {
    if (stack_.empty()) {
      root = std::move(v);
      return;
    }
    Value& parent = stack_.back();
    if (parent.type == Value::Type::array) {
      parent.items.push_back(std::move(v));
      return;
    }
    parent.members.emplace_back(std::move(key_), std::move(v));
    parent.key_lines.push_back(key_line_);
  }

  bool add(Value::Type type, std::string text) {
    Value v;
    v.type = type;
    v.line = here();
    v.text = std::move(text);
    place(std::move(v));
    return true;
  }

  // An array or object is built on the stack and placed in its parent
  // once complete.
  bool open(Value::Type type) {
    if (stack_.size() >= kMaxDepth) {
      error_line_ = here();
      error_ = "nested more than " + std::to_string(kMaxDepth) + " levels deep";
      return false;
    }
    Value v;
    v.type = type;
    v.line = here();
    stack_.push_back(std::move(v));
    // The key an object's member waits for is its parent's, kept aside.
    keys_.emplace_back(std::move(key_), key_line_);
    return true;
  }

  bool close() {
    Value done = std::move(stack_.back());
    stack_.pop_back();
    key_ = std::move(keys_.back().first);
    key_line_ = keys_.back().second;
    keys_.pop_back();
    place(std::move(done));
    return true;
  }

  const rapidjson::StringStream& in_;
  const LineIndex& lines_;
  std::vector<Value> stack_;  // the open arrays and objects, outermost first
  std::vector<std::pair<std::string, int>> keys_;
  std::string key_;
  int key_line_ = 0;
};

}  // namespace

const Value* Value::get(std::string_view key) const {
  for (const auto& [k, v] : members)
    if (k == key) return &v;
  return nullptr;
}

std::string Value::describe() const {
  switch (type) {
    case Type::null:
      return "null";
    case Type::boolean:
      return text;
    case Type::number:
      return "the number " + text;
    case Type::string:
      return "the string \"" + text + "\"";
    case Type::array:
      return "a list";
    case Type::object:
      return "an object";
  }
  return "a value";
}

ParseResult parse(std::string_view text) {
  const std::string copy(text);  // rapidjson reads up to a NUL
  LineIndex lines(copy);
  rapidjson::StringStream in(copy.c_str());
  Builder builder(in, lines);
  rapidjson::Reader reader;
  constexpr unsigned kFlags = rapidjson::kParseCommentsFlag | rapidjson::kParseTrailingCommasFlag |
                              rapidjson::kParseNumbersAsStringsFlag |
                              rapidjson::kParseIterativeFlag;
  const rapidjson::ParseResult ok = reader.Parse<kFlags>(in, builder);
  ParseResult result;
  if (!ok) {
    if (!builder.error_.empty()) {
      result.line = builder.error_line_;
      result.error = builder.error_;
    } else {
      result.line = lines.line_of(ok.Offset());
      result.error = std::string("malformed JSON: ") + rapidjson::GetParseError_En(ok.Code());
    }
    return result;
  }
  if (in.Tell() < copy.size()) {  // a NUL inside the text ended it early
    result.line = lines.line_of(in.Tell());
    result.error = "malformed JSON: a NUL byte";
    return result;
  }
  result.value = std::move(builder.root);
  return result;
}

}  // namespace memshard::conf::json
