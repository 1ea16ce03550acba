#include "proxy/protocol/base64.h"

#include <gtest/gtest.h>

#include "proxy/protocol/request_parser.h"

namespace memshard::proto {
namespace {

TEST(StrictBase64, Rfc4648Vectors) {
  // RFC 4648 section 10.
  const std::pair<std::string_view, std::string_view> vectors[] = {
      {"Zg==", "f"},        {"Zm8=", "fo"},        {"Zm9v", "foo"},
      {"Zm9vYg==", "foob"}, {"Zm9vYmE=", "fooba"}, {"Zm9vYmFy", "foobar"},
  };
  std::string out;
  for (auto [encoded, decoded] : vectors) {
    ASSERT_TRUE(base64_decode(encoded, out)) << encoded;
    EXPECT_EQ(out, decoded);
  }
  ASSERT_TRUE(base64_decode("AP8+/w==", out));
  EXPECT_EQ(out, std::string("\x00\xff\x3e\xff", 4));
}

TEST(StrictBase64, RejectsMalformed) {
  std::string out;
  for (std::string_view s : {"", "Zg", "Zg=", "Zm9", "Z===", "====", "Zg==Zg==", "Zm9v!", "Zm 9v",
                             "Zm=v", "Zh==", "Zm9=", "Zg\n=="}) {
    EXPECT_FALSE(base64_decode(s, out)) << s;
  }
}

// memcached 1.6.18, by "ms <key> 1 b" / "mg <key> b k" (the k flag returns
// the key re-encoded from what the server stored).
TEST(MemcachedBase64, AcceptsWhatTheServerAccepts) {
  std::string out;
  ASSERT_TRUE(memcached_base64_decode("QUFB", out));
  EXPECT_EQ(out, "AAA");
  ASSERT_TRUE(memcached_base64_decode("QU!FB", out));  // stray byte skipped
  EXPECT_EQ(out, "AAA");
  ASSERT_TRUE(memcached_base64_decode("QR==", out));  // returned as kQQ==
  EXPECT_EQ(out, "A");
  ASSERT_TRUE(memcached_base64_decode("QQ==QUFB", out));  // stops after padding
  EXPECT_EQ(out, "A");
  ASSERT_TRUE(memcached_base64_decode("Q=Q=", out));  // returned as kQA==
  EXPECT_EQ(out, "@");
  ASSERT_TRUE(memcached_base64_decode("Zm9vYmFy", out));
  EXPECT_EQ(out, "foobar");
}

TEST(MemcachedBase64, RejectsWhatTheServerRejects) {
  // Each answered "CLIENT_ERROR error decoding key" to "mg <key> b k".
  std::string out;
  for (std::string_view s : {"A===", "====", "QUF", "!!!!", "QQ=", "QUFBQQ", "Zm9"}) {
    EXPECT_FALSE(memcached_base64_decode(s, out)) << s;
  }
}

TEST(Base64Encode, Rfc4648Vectors) {
  const std::pair<std::string_view, std::string_view> vectors[] = {
      {"", ""},
      {"f", "Zg=="},
      {"fo", "Zm8="},
      {"foo", "Zm9v"},
      {"foob", "Zm9vYg=="},
      {"fooba", "Zm9vYmE="},
      {"foobar", "Zm9vYmFy"},
  };
  for (auto [decoded, encoded] : vectors) {
    std::string out = "x";  // appends
    base64_encode(decoded, out);
    EXPECT_EQ(out, "x" + std::string(encoded));
    EXPECT_EQ(base64_encoded_length(decoded.size()), encoded.size());
  }
}

// Both decoders read back every byte value at every length mod 3.
TEST(Base64Encode, RoundTrips) {
  std::string bytes;
  for (int i = 0; i < 256; ++i) bytes.push_back(static_cast<char>(i));
  for (size_t n : {size_t{1}, size_t{2}, size_t{3}, size_t{187}, size_t{256}}) {
    const std::string_view in = std::string_view(bytes).substr(256 - n);
    std::string encoded;
    base64_encode(in, encoded);
    std::string strict;
    std::string lenient;
    ASSERT_TRUE(base64_decode(encoded, strict)) << n;
    ASSERT_TRUE(memcached_base64_decode(encoded, lenient)) << n;
    EXPECT_EQ(strict, in);
    EXPECT_EQ(lenient, in);
  }
}

}  // namespace
}  // namespace memshard::proto
