// Writing JSON documents by hand without getting the commas wrong: the
// writer remembers, per open object or array, whether a member came
// already. Strings are escaped as RFC 8259 asks (quote, backslash and
// control bytes); other bytes pass as they are.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace memshard::proxy {

// Appends `s` to `out` as a JSON string literal.
void json_string(std::string& out, std::string_view s);

class JsonWriter {
 public:
  explicit JsonWriter(std::string& out) : out_(out) {}

  void begin_object();
  void end_object();
  void begin_array();
  void end_array();
  // The name of the next member of the open object.
  void key(std::string_view name);

  void string(std::string_view s);
  void number(uint64_t v);
  void number(int64_t v);
  // Six significant digits at most; NaN and infinities, which JSON lacks,
  // are written as null.
  void number(double v);
  void boolean(bool v);
  void null();

  // key() then the value.
  void field(std::string_view name, std::string_view s) { key(name), string(s); }
  void field(std::string_view name, uint64_t v) { key(name), number(v); }
  void field(std::string_view name, int64_t v) { key(name), number(v); }
  void field(std::string_view name, double v) { key(name), number(v); }
  void field_bool(std::string_view name, bool v) { key(name), boolean(v); }

 private:
  // Before a value: a comma unless it is the first of its container, or
  // nothing after a key.
  void separate();

  std::string& out_;
  std::vector<bool> first_;  // per open container: nothing written in it yet
  bool after_key_ = false;
};

}  // namespace memshard::proxy
