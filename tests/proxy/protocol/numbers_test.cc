// memcached's numeric arguments (safe_strtol/strtoul/strtoull of util.c).
// The expectations marked "1.6.18" were observed on memcached 1.6.18 with
// the set command ("set k <flags> 0 <bytes>") and incr.
#include "proxy/protocol/numbers.h"

#include <gtest/gtest.h>

namespace memshard::proto {
namespace {

int32_t int32_of(std::string_view s) {
  int32_t v = 12345;
  EXPECT_TRUE(parse_mc_int32(s, v)) << s;
  return v;
}

TEST(Int32, PlainDigitsAndSigns) {
  EXPECT_EQ(int32_of("0"), 0);
  EXPECT_EQ(int32_of("42"), 42);
  EXPECT_EQ(int32_of("+2"), 2);  // 1.6.18: "set k 0 0 +2" stores 2 bytes
  EXPECT_EQ(int32_of("-5"), -5);
  EXPECT_EQ(int32_of("-0"), 0);
}

TEST(Int32, CSpacesAroundTheNumber) {
  // 1.6.18: "set k 0 0 \t2" and "set k 0 0 2\tzz" both store 2 bytes.
  EXPECT_EQ(int32_of("\t2"), 2);
  EXPECT_EQ(int32_of("\v\f\r7"), 7);
  EXPECT_EQ(int32_of("2\tzz"), 2);
  EXPECT_EQ(int32_of("2\r"), 2);
}

TEST(Int32, TruncatesToThirtyTwoBits) {
  // 1.6.18: "set k 0 0 4294967297" is STORED with a 1-byte value, and
  // "set k 0 0 -4294967294" with a 2-byte one.
  EXPECT_EQ(int32_of("4294967297"), 1);
  EXPECT_EQ(int32_of("-4294967294"), 2);
  EXPECT_EQ(int32_of("2147483648"), INT32_MIN);
  EXPECT_EQ(int32_of("9223372036854775807"), -1);
  EXPECT_EQ(int32_of("-9223372036854775808"), 0);
  EXPECT_EQ(int32_of("99999999999"), static_cast<int32_t>(99999999999LL & 0xffffffff));
}

TEST(Int32, Refused) {
  int32_t v = 0;
  for (std::string_view s :
       {"", "x", "-", "+", " ", "2x", "0x10", "1.5", "--1", "+-1", "\t", "9223372036854775808",
        "-9223372036854775809", "99999999999999999999"}) {
    EXPECT_FALSE(parse_mc_int32(s, v)) << s;
  }
  // Only a C space may follow the digits.
  EXPECT_FALSE(parse_mc_int32("5!", v));
}

TEST(Uint32, NegativesAreRefusedButMinusZeroIsNot) {
  uint32_t v = 7;
  EXPECT_FALSE(parse_mc_uint32("-1", v));  // 1.6.18: "set k -1 0 2" is refused
  EXPECT_FALSE(parse_mc_uint32("-5", v));
  EXPECT_TRUE(parse_mc_uint32("-0", v));  // 1.6.18: "set k -0 0 2" is STORED
  EXPECT_EQ(v, 0u);
  // strtoul wraps "-N" to 2^64-N; safe_strtoul only refuses results that
  // look negative as signed, so a huge negative wraps to a small positive.
  EXPECT_TRUE(parse_mc_uint32("-18446744073709551615", v));
  EXPECT_EQ(v, 1u);
}

TEST(Uint32, TruncatesToThirtyTwoBits) {
  uint32_t v = 7;
  // 1.6.18: "set k 4294967296 0 1" then get shows flags 0.
  EXPECT_TRUE(parse_mc_uint32("4294967296", v));
  EXPECT_EQ(v, 0u);
  EXPECT_TRUE(parse_mc_uint32("4294967295", v));
  EXPECT_EQ(v, 4294967295u);
  EXPECT_FALSE(parse_mc_uint32("18446744073709551616", v));
}

TEST(Uint64, FullRange) {
  uint64_t v = 0;
  // 1.6.18: "decr k 18446744073709551615" is accepted, ...616 is
  // "CLIENT_ERROR invalid numeric delta argument".
  EXPECT_TRUE(parse_mc_uint64("18446744073709551615", v));
  EXPECT_EQ(v, UINT64_MAX);
  EXPECT_FALSE(parse_mc_uint64("18446744073709551616", v));
  EXPECT_FALSE(parse_mc_uint64("-1", v));  // 1.6.18: "incr k -1" is refused
  EXPECT_TRUE(parse_mc_uint64("+9", v));
  EXPECT_EQ(v, 9u);
  EXPECT_TRUE(parse_mc_uint64("9223372036854775808", v));      // no '-': fine
  EXPECT_FALSE(parse_mc_uint64("9223372036854775808\t-", v));  // a '-' anywhere
}

}  // namespace
}  // namespace memshard::proto
