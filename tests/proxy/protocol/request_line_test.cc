// line_too_long() and append_retrieval_line(). The line-length rule was
// checked on memcached 1.6.18 by sending lines without a newline: it
// closed the connection (without a reply) or kept waiting.
#include <gtest/gtest.h>

#include <string>

#include "proxy/protocol/request_parser.h"

namespace memshard::proto {
namespace {

std::string repeat(std::string_view s, size_t n) {
  std::string out;
  for (size_t i = 0; i < n; ++i) out += s;
  return out;
}

TEST(LineTooLong, UpTo2048BytesAnythingMayWait) {
  EXPECT_FALSE(line_too_long(""));
  EXPECT_FALSE(line_too_long("set " + std::string(2044, 'a')));  // 2048: waits
  EXPECT_TRUE(line_too_long("set " + std::string(2045, 'a')));   // 2049: closed
}

TEST(LineTooLong, OnlyGetAndGetsMayGrow) {
  EXPECT_FALSE(line_too_long("get " + repeat("a ", 1498)));
  EXPECT_FALSE(line_too_long("gets " + repeat("a ", 1498)));
  EXPECT_TRUE(line_too_long("gat 1 " + repeat("a ", 1497)));
  EXPECT_TRUE(line_too_long("bget " + repeat("a ", 1500)));
  EXPECT_TRUE(line_too_long("getx" + std::string(3000, 'a')));
  EXPECT_TRUE(line_too_long("get\t" + std::string(3000, 'a')));
  EXPECT_TRUE(line_too_long(std::string(3000, ' ')));
}

TEST(LineTooLong, AtMostOneHundredLeadingSpaces) {
  EXPECT_FALSE(line_too_long(std::string(100, ' ') + "get " + repeat("a ", 1500)));
  EXPECT_TRUE(line_too_long(std::string(101, ' ') + "get " + repeat("a ", 1500)));
}

TEST(LineTooLong, OurBoundOnRetrievals) {
  std::string line = "get " + std::string(kMaxRetrievalLineLength - 4, 'k');
  EXPECT_FALSE(line_too_long(line));
  line += 'k';
  EXPECT_TRUE(line_too_long(line));
}

TEST(RetrievalLine, UsesTheCommandWord) {
  Request r;
  const Limits limits;
  const std::vector<std::string_view> keys = {"a", "b"};
  std::string out = "x";
  parse_request_line("get z", limits, r);
  append_retrieval_line(r, keys, out);
  EXPECT_EQ(out, "xget a b\r\n");

  out.clear();
  parse_request_line("bget z", limits, r);
  append_retrieval_line(r, keys, out);
  EXPECT_EQ(out, "get a b\r\n");

  out.clear();
  parse_request_line("gets z", limits, r);
  append_retrieval_line(r, {"k"}, out);
  EXPECT_EQ(out, "gets k\r\n");

  out.clear();
  parse_request_line("gat 100 z", limits, r);
  append_retrieval_line(r, keys, out);
  EXPECT_EQ(out, "gat 100 a b\r\n");

  out.clear();
  parse_request_line("gats -1 z y", limits, r);
  append_retrieval_line(r, r.keys, out);
  EXPECT_EQ(out, "gats -1 z y\r\n");
}

}  // namespace
}  // namespace memshard::proto
