// The key reader of `memshard ring load`: plain lines and memcached's
// lru_crawler metadump lines.
#include "proxy/cli/sample_keys.h"

#include <gtest/gtest.h>

#include <sstream>

namespace memshard::proxy {
namespace {

std::vector<std::string> read(const std::string& text) {
  std::istringstream in(text);
  return read_sample_keys(in);
}

TEST(SampleKeys, PlainLinesAreKeysAsWritten) {
  EXPECT_EQ(read("a\nb%20c\r\nEND\n"), (std::vector<std::string>{"a", "b%20c", "END"}));
}

TEST(SampleKeys, MetadumpLinesGiveTheirDecodedKey) {
  EXPECT_EQ(read("key=user%3A1 exp=-1 la=1 cas=1 fetch=no cls=1 size=66\r\n"
                 "key=caf%C3%A9 exp=0 la=1 cas=2 fetch=yes cls=1 size=66\r\n"
                 "END\r\n"),
            (std::vector<std::string>{"user:1", "caf\xc3\xa9"}));
}

TEST(SampleKeys, KeyEqualsWithoutTheDumpShapeIsAKey) {
  EXPECT_EQ(read("key=x\nkey=y z\n"), (std::vector<std::string>{"key=x", "key=y z"}));
}

TEST(SampleKeys, UriDecode) {
  EXPECT_EQ(uri_decode("a%2fb%2F"), "a/b/");
  EXPECT_EQ(uri_decode("100%"), "100%");
  EXPECT_EQ(uri_decode("%zz%4"), "%zz%4");
  EXPECT_EQ(uri_decode("%00"), std::string(1, '\0'));
}

}  // namespace
}  // namespace memshard::proxy
