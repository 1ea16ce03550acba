// The stats token: which Authorization headers carry it, and reading it
// from its file.
#include "proxy/admin/stats_token.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <cstdlib>
#include <fstream>
#include <string>

#include "proxy/protocol/base64.h"

namespace memshard::proxy {
namespace {

std::string basic(const std::string& user_password) {
  std::string out = "Basic ";
  proto::base64_encode(user_password, out);
  return out;
}

TEST(StatsToken, BearerCarriesItExactly) {
  EXPECT_TRUE(authorization_carries("Bearer s3cret", "s3cret"));
  EXPECT_TRUE(authorization_carries("bearer s3cret", "s3cret"));  // schemes ignore case
  EXPECT_FALSE(authorization_carries("Bearer s3cre", "s3cret"));
  EXPECT_FALSE(authorization_carries("Bearer s3cretx", "s3cret"));
  EXPECT_FALSE(authorization_carries("Bearer S3CRET", "s3cret"));
  EXPECT_FALSE(authorization_carries("Bearer", "s3cret"));
  EXPECT_FALSE(authorization_carries("", "s3cret"));
  EXPECT_FALSE(authorization_carries("s3cret", "s3cret"));
  EXPECT_FALSE(authorization_carries("Token s3cret", "s3cret"));
}

TEST(StatsToken, BasicCarriesItAsThePasswordOfAnyUser) {
  EXPECT_TRUE(authorization_carries(basic("admin:s3cret"), "s3cret"));
  EXPECT_TRUE(authorization_carries(basic(":s3cret"), "s3cret"));
  EXPECT_FALSE(authorization_carries(basic("s3cret:x"), "s3cret"));
  EXPECT_FALSE(authorization_carries(basic("s3cret"), "s3cret"));
  EXPECT_FALSE(authorization_carries("Basic !!!", "s3cret"));
  EXPECT_FALSE(authorization_carries("Basic " + std::string(20000, 'A'), "s3cret"));
}

TEST(StatsToken, NoTokenIsNeverCarried) {
  EXPECT_FALSE(authorization_carries("Bearer ", ""));
}

TEST(StatsToken, SameSecretComparesWholeStrings) {
  EXPECT_TRUE(same_secret("abc", "abc"));
  EXPECT_FALSE(same_secret("abc", "abd"));
  EXPECT_FALSE(same_secret("abc", "ab"));
  EXPECT_FALSE(same_secret("ab", "abc"));
  EXPECT_TRUE(same_secret("", ""));
}

class TokenFile : public ::testing::Test {
 protected:
  void SetUp() override {
    char name[] = "/tmp/memshard-token-XXXXXX";
    int fd = mkstemp(name);
    ASSERT_GE(fd, 0);
    close(fd);
    path_ = name;
  }
  void TearDown() override { unlink(path_.c_str()); }
  void write(const std::string& text) { std::ofstream(path_, std::ios::binary) << text; }
  std::string path_;
};

TEST_F(TokenFile, OneLineIsTheToken) {
  std::string token, error;
  write("s3cret\n");
  ASSERT_TRUE(read_stats_token(path_, token, error)) << error;
  EXPECT_EQ(token, "s3cret");
  write("s3cret\r\n");
  ASSERT_TRUE(read_stats_token(path_, token, error)) << error;
  EXPECT_EQ(token, "s3cret");
}

TEST_F(TokenFile, EmptySpacedLongOrMissingFilesAreRefused) {
  std::string token = "kept", error;
  for (const std::string& bad : {std::string(""), std::string("\n"), std::string("two words\n"),
                                 std::string("a\nb\n"), std::string(5000, 'x')}) {
    write(bad);
    EXPECT_FALSE(read_stats_token(path_, token, error)) << bad.substr(0, 20);
    EXPECT_NE(error, "");
  }
  EXPECT_FALSE(read_stats_token(path_ + ".missing", token, error));
  EXPECT_NE(error.find("cannot read"), std::string::npos) << error;
  EXPECT_EQ(token, "kept");
}

}  // namespace
}  // namespace memshard::proxy
