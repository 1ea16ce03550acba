// Meta commands. Expected replies: memcached 1.6.18 (see
// request_test_util.h); "QUFB" is base64 for "AAA".
#include <string>

#include "tests/proxy/protocol/request_test_util.h"

namespace memshard::proto {
namespace {

std::string flags(int count) {
  std::string s;
  for (int i = 0; i < count; ++i) s += " O" + std::to_string(i);
  return s;
}

using Meta = RequestTest;

TEST_F(Meta, ForwardedByKey) {
  expect_forward("mg k v k Oabc c f t s", Command::meta_get, "k");
  expect_forward("ms k 5 T1 c", Command::meta_set, "k", 7);
  expect_forward("ms k 0", Command::meta_set, "k", 2);
  expect_forward("md k Oab k", Command::meta_delete, "k");
  expect_forward("ma n N0 J10 v", Command::meta_arithmetic, "n");
  expect_forward("me n", Command::meta_debug, "n");
  expect_forward("me n extra args", Command::meta_debug, "n");
}

TEST_F(Meta, FlagSemanticsAreTheServers) {
  // The server answers these itself (invalid flag, duplicate flag, bad
  // mode...), the same on every server: forward them.
  expect_forward("mg k x", Command::meta_get, "k");
  expect_forward("mg k T1 T2", Command::meta_get, "k");
  expect_forward("ms k 1 MX", Command::meta_set, "k", 3);
  expect_forward("ms k 1 S100", Command::meta_set, "k", 3);
  expect_forward("md k \xff", Command::meta_delete, "k");
}

TEST_F(Meta, QuietFlag) {
  expect_forward("mg k v q", Command::meta_get, "k", 0, true);
  expect_forward("md k q", Command::meta_delete, "k", 0, true);
  expect_forward("ms k 2 q T0", Command::meta_set, "k", 4, true);
  expect_forward("ma k qx", Command::meta_arithmetic, "k", 0, true);  // first byte decides
  expect_forward("mg q", Command::meta_get, "q", 0, false);           // that is the key
  expect_forward("me k q", Command::meta_debug, "k", 0, false);       // me reads no flags
}

TEST_F(Meta, MissingKeyOrLength) {
  for (std::string_view line : {"mg", "ms", "md", "ma", "  mg  "}) expect_answer(line, kError);
  expect_answer("me", kBadFormat);
  expect_answer("ms k", kBadFormat);
}

TEST_F(Meta, LongKey) {
  for (std::string_view cmd : {"mg ", "md ", "ma ", "me "}) {
    expect_answer(std::string(cmd) + kLongKey, kBadFormat);
  }
  expect_answer("ms " + kLongKey + " 1", kBadFormat);  // data not swallowed
}

TEST_F(Meta, BadLengthIsNotSwallowed) {
  for (std::string_view line : {"ms k x", "ms k -1", "ms k 2147483646", "ms k 1x", "ms k q"}) {
    expect_answer(line, kBadFormat);
  }
  expect_forward("ms k 4294967297", Command::meta_set, "k", 3);  // 1.6.18: HD
}

TEST_F(Meta, TooManyTokens) {
  // mg and the others word it differently; ms does not swallow.
  expect_forward("mg k" + flags(17), Command::meta_get, "k");
  expect_answer("mg k" + flags(18), "CLIENT_ERROR options flags are too long\r\n");
  expect_answer("mg k" + flags(40), "CLIENT_ERROR options flags are too long\r\n");
  expect_answer("md k" + flags(19), "CLIENT_ERROR options flags too long\r\n");
  expect_answer("ma k" + flags(19), "CLIENT_ERROR options flags too long\r\n");
  expect_forward("ms k 1" + flags(16), Command::meta_set, "k", 3);
  expect_answer("ms k 1" + flags(17), "CLIENT_ERROR options flags too long\r\n");
}

TEST_F(Meta, TooLargeSet) {
  expect_answer("ms k 2000000", kTooLarge, 2000002);
  expect_answer("ms k 2000000 q", kTooLarge, 2000002);  // errors show despite q
  EXPECT_TRUE(request_.quiet);
  expect_answer("ms k 2000000 ME", kTooLarge, 2000002);
  expect_answer("ms k 2000000 I", kTooLarge, 2000002);
  expect_answer("ms k 2000000 C1 MA", kTooLarge, 2000002);
  expect_answer("ms k 2000000 O" + std::string(31, 'o'), kTooLarge, 2000002);
  // Flag errors come first, and are swallowed too.
  expect_answer("ms k 2000000 O" + std::string(40, 'o') + " MX",
                "CLIENT_ERROR invalid mode for ms M token\r\n", 2000002);
  expect_answer("ms k 2000000 O" + std::string(40, 'o'), "CLIENT_ERROR opaque token too long\r\n",
                2000002);
  expect_answer("ms k 2000000 MX", "CLIENT_ERROR invalid mode for ms M token\r\n", 2000002);
  expect_answer("ms k 2000000 Me", "CLIENT_ERROR invalid mode for ms M token\r\n", 2000002);
  expect_answer("ms k 2000000 T1 z", "CLIENT_ERROR invalid flag\r\n", 2000002);
  expect_answer("ms k 2000000 b", "CLIENT_ERROR error decoding key\r\n", 2000002);
  expect_answer("ms k 2000000 MA MA", "CLIENT_ERROR duplicate flag\r\n", 2000002);
}

using MetaBase64 = RequestTest;

TEST_F(MetaBase64, KeysAreDecodedForRouting) {
  expect_forward("mg QUFB b v k", Command::meta_get, "AAA");
  EXPECT_EQ(request_.decoded_key, "AAA");
  expect_forward("ms QUFB 1 b", Command::meta_set, "AAA", 3);
  expect_forward("md QUFB q b", Command::meta_delete, "AAA", 0, true);
  expect_forward("ma QUFB bx", Command::meta_arithmetic, "AAA");  // a flag is its first byte
  expect_forward("me QUFB b", Command::meta_debug, "AAA");
  expect_forward("me QUFB bx", Command::meta_debug, "QUFB");  // me wants exactly "b"
  // memcached's lenient decoder: 1.6.18 stores "QU!FB" as the key AAA.
  expect_forward("ms QU!FB 1 b", Command::meta_set, "AAA", 3);
  expect_forward("mg Zm9vYmFy b", Command::meta_get, "foobar");
  // A second b is the server's "duplicate flag"; the first one decoded.
  expect_forward("mg QUFB b b", Command::meta_get, "AAA");
}

TEST_F(MetaBase64, DecodedKeyMayHoldAnyByte) {
  expect_forward("mg IAoNAA== b", Command::meta_get, std::string_view(" \n\r\0", 4));
}

TEST_F(MetaBase64, BadKeyGetsThePreparseError) {
  const std::string_view decoding = "CLIENT_ERROR error decoding key\r\n";
  expect_answer("mg Zm9 b v", decoding);
  expect_answer("mg Zm9 Tabc b", decoding);  // the last bad argument names it
  expect_answer("mg Zm9 b Tabc", "CLIENT_ERROR bad token in command line format\r\n");
  expect_answer("mg Zm9 b x", "CLIENT_ERROR invalid flag\r\n");
  expect_answer("mg Zm9 x b", "CLIENT_ERROR invalid flag\r\n");
  expect_answer("mg Zm9 b b", "CLIENT_ERROR duplicate flag\r\n");
  expect_answer("mg Zm9 b \xff", "CLIENT_ERROR duplicate flag\r\n");
  expect_answer("mg Zm9 Fx b", decoding);
  expect_answer("mg Zm9 b Fx", decoding);  // F keeps the previous message
  expect_answer("mg Zm9 b MSS", "CLIENT_ERROR incorrect length for M token\r\n");
  expect_answer("mg Zm9 b J", "CLIENT_ERROR invalid numeric initial value\r\n");
  expect_answer("mg Zm9 b D-1", "CLIENT_ERROR invalid numeric delta value\r\n");
  expect_answer("mg Zm9 b C1x", "CLIENT_ERROR bad token in command line format\r\n");
  for (std::string_view line :
       {"mg A=== b k", "mg ==== b k", "mg QUF b k", "mg !!!! b k", "mg QQ= b k", "mg QUFBQQ b k"}) {
    expect_answer(line, decoding);
  }
  // md and ma word every flag failure the same way.
  expect_answer("md Zm9 b", "CLIENT_ERROR invalid or duplicate flag\r\n");
  expect_answer("ma Zm9 b", "CLIENT_ERROR invalid or duplicate flag\r\n");
  // me has its own check.
  expect_answer("me Zm9 b", kBadFormat);
}

TEST_F(MetaBase64, BadKeyOfASetIsSwallowed) {
  expect_answer("ms Zm9 2 b", "CLIENT_ERROR error decoding key\r\n", 4);
  expect_answer("ms Zm9 2 b x", "CLIENT_ERROR invalid flag\r\n", 4);
}

TEST_F(MetaBase64, KeyLengthIsCheckedEncoded) {
  expect_answer("mg " + std::string(252, 'Q') + " b", kBadFormat);
  const Request& r = parse("mg " + std::string(248, 'Q') + " b");
  EXPECT_EQ(r.action, Action::forward);
  ASSERT_EQ(r.keys.size(), 1u);
  EXPECT_EQ(r.keys[0].size(), 186u);
}

}  // namespace
}  // namespace memshard::proto
