// The readers the admin tests check documents with (strict_json.h,
// prometheus_text.h) must refuse what they are there to catch: otherwise a
// test that leans on them could not fail.
#include <gtest/gtest.h>

#include <string>

#include "prometheus_text.h"
#include "strict_json.h"

namespace memshard::proxy::testing {
namespace {

bool json_ok(const std::string& text) {
  std::string error;
  return StrictJsonReader::parse(text, error).has_value();
}

TEST(StrictJsonReader, ReadsJsonAndRefusesWhatIsNot) {
  std::string error;
  std::optional<Json> doc =
      StrictJsonReader::parse(R"({"a": [1, -2.5e3, true, null], "b\"\u0001": {}})", error);
  ASSERT_TRUE(doc) << error;
  ASSERT_NE(doc->find("a"), nullptr);
  EXPECT_EQ(doc->find("a")->items.size(), 4u);
  EXPECT_NE(doc->find(std::string("b\"\x01")), nullptr) << "names are unescaped";
  EXPECT_FALSE(json_ok(R"({"a": 1,})")) << "trailing comma";
  EXPECT_FALSE(json_ok(R"([1, 2,])")) << "trailing comma";
  EXPECT_FALSE(json_ok("{\"a\": \"x\ny\"}")) << "raw control byte";
  EXPECT_FALSE(json_ok(R"({"a": "\x"})")) << "unknown escape";
  EXPECT_FALSE(json_ok(R"({a: 1})")) << "unquoted name";
  EXPECT_FALSE(json_ok(R"({"a": 01})")) << "leading zero";
  EXPECT_FALSE(json_ok(R"({"a": 1} x)")) << "bytes after the document";
  EXPECT_FALSE(json_ok(R"({"a": 1)")) << "not closed";
}

size_t errors(const std::string& text) {
  return read_prometheus_text(text).errors.size();
}

TEST(PrometheusTextReader, ReadsTheFormatAndRefusesWhatBreaksIt) {
  const std::string good =
      "# HELP m_total Things.\n# TYPE m_total counter\nm_total{a=\"x\\\"y\\\\z\\n\"} 3\n"
      "# HELP h Latency.\n# TYPE h histogram\nh_bucket{le=\"+Inf\"} 1\nh_sum 0.5\nh_count 1\n";
  const PromText text = read_prometheus_text(good);
  EXPECT_TRUE(text.errors.empty()) << text.errors.front();
  const auto m = text.find("m_total", {{"a", "x\"y\\z\n"}});
  ASSERT_EQ(m.size(), 1u) << "label values are unescaped";
  EXPECT_EQ(m[0].value, 3.0);
  EXPECT_EQ(text.family("h")->samples.size(), 3u);

  EXPECT_GT(errors("m 1\n"), 0u) << "no HELP or TYPE";
  EXPECT_GT(errors("# HELP m x\n# TYPE m gauge\nm{a=\"b\\t\"} 1\n"), 0u) << "bad escape";
  EXPECT_GT(errors("# HELP m x\n# TYPE m gauge\nm{a=\"b\"} one\n"), 0u) << "not a number";
  EXPECT_GT(errors("# HELP m x\n# TYPE m gauge\nm 1\nm 2\n"), 0u) << "series twice";
  EXPECT_GT(errors("# HELP m x\n# TYPE m gauge\nm{a=\"1\"} 1\n# HELP n x\n# TYPE n gauge\nn 1\n"
                   "m{a=\"2\"} 1\n"),
            0u)
      << "a family in two groups";
  EXPECT_GT(errors("# HELP m x\n# TYPE m gauge\n# TYPE m gauge\nm 1\n"), 0u) << "TYPE twice";
  EXPECT_GT(errors("# HELP m x\n# TYPE m gauge\nm 1"), 0u) << "no final newline";
  EXPECT_GT(errors("# HELP 1m x\n# TYPE 1m gauge\n1m 1\n"), 0u) << "bad name";
}

}  // namespace
}  // namespace memshard::proxy::testing
