// A JSON document as a tree whose every value knows its line, for reading
// configuration files written in JSON (mcrouter's, conf/mcrouter.h) and
// saying where an error is. Read as mcrouter reads its config: C and C++
// comments and trailing commas are allowed; a key given twice in one
// object is an error. Numbers are kept as written.
#pragma once

#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace memshard::conf::json {

struct Value {
  enum class Type { null, boolean, number, string, array, object };

  Type type = Type::null;
  int line = 0;              // 1-based line where the value starts
  std::string text;          // a string's content, a number as written, "true"/"false"
  std::vector<Value> items;  // an array's values
  std::vector<std::pair<std::string, Value>> members;  // an object's, in file order
  std::vector<int> key_lines;                          // the line of each member's key

  bool is_string() const { return type == Type::string; }
  bool is_object() const { return type == Type::object; }
  bool is_array() const { return type == Type::array; }
  bool is_number() const { return type == Type::number; }
  bool is_bool() const { return type == Type::boolean; }
  // The member named `key`, or null (also when this is not an object).
  const Value* get(std::string_view key) const;
  // "an object", "a string", ...: for "expected X, found Y".
  std::string describe() const;
};

struct ParseResult {
  std::optional<Value> value;  // set when error is empty
  int line = 0;                // of the error
  std::string error;
};

ParseResult parse(std::string_view text);

}  // namespace memshard::conf::json
