// JsonWriter: commas, nesting, escaping and numbers JSON can hold.
#include "proxy/admin/json_writer.h"

#include <gtest/gtest.h>

#include <cmath>
#include <limits>
#include <string>

namespace memshard::proxy {
namespace {

TEST(JsonWriter, CommasGoBetweenMembersAndItemsOnly) {
  std::string out;
  JsonWriter w(out);
  w.begin_object();
  w.field("a", uint64_t{1});
  w.key("list");
  w.begin_array();
  w.number(int64_t{-2});
  w.begin_object();
  w.end_object();
  w.null();
  w.end_array();
  w.field_bool("b", false);
  w.key("empty");
  w.begin_array();
  w.end_array();
  w.end_object();
  EXPECT_EQ(out, R"({"a": 1, "list": [-2, {}, null], "b": false, "empty": []})");
}

TEST(JsonWriter, StringsAreEscaped) {
  std::string out;
  json_string(out, std::string("q\"b\\n\n\x01\x1f\xc3\xa9", 10));
  EXPECT_EQ(out, "\"q\\\"b\\\\n\\u000a\\u0001\\u001f\xc3\xa9\"");
}

TEST(JsonWriter, NumbersJsonCannotHoldAreNull) {
  std::string out;
  JsonWriter w(out);
  w.begin_array();
  w.number(0.25);
  w.number(std::numeric_limits<double>::infinity());
  w.number(std::nan(""));
  w.number(uint64_t{18446744073709551615u});
  w.end_array();
  EXPECT_EQ(out, "[0.25, null, null, 18446744073709551615]");
}

}  // namespace
}  // namespace memshard::proxy
