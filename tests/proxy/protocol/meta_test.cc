// The meta request parser alone (protocol/meta.h): a line's tokens and its
// meta command in, the routing key, data length, modelled flags or the
// proxy's own answer out. The error texts are memcached's (replies.h);
// what is checked here is which one memcached's order of checks makes win.
#include "proxy/protocol/meta.h"

#include <gtest/gtest.h>

#include <string>
#include <string_view>

#include "proxy/protocol/base64.h"
#include "proxy/protocol/replies.h"

namespace memshard::proto {
namespace {

class MetaParse : public ::testing::Test {
 protected:
  // The Request is a member: its key may point into its own decoded_key,
  // and the line must outlive the views into it.
  const Request& parse(std::string line, Command command, Limits limits = {}) {
    line_ = std::move(line);
    request_.clear();
    request_.command = command;
    parse_meta_request(LineTokens(line_), limits, request_);
    return request_;
  }

  static std::string b64(std::string_view key) {
    std::string out;
    base64_encode(key, out);
    return out;
  }

  std::string line_;
  Request request_;
};

TEST_F(MetaParse, ForwardsByKeyWithTheDataLengthOfMs) {
  const Request& get = parse("mg k v f", Command::meta_get);
  EXPECT_EQ(get.action, Action::forward);
  ASSERT_EQ(get.keys.size(), 1u);
  EXPECT_EQ(get.keys[0], "k");
  EXPECT_EQ(get.data_bytes, 0u);
  const Request& set = parse("ms k 5 T10", Command::meta_set);
  EXPECT_EQ(set.action, Action::forward);
  EXPECT_EQ(set.data_bytes, 5u + 2u) << "the value and its CRLF";
  EXPECT_EQ(set.value_length(), 5u);
}

TEST_F(MetaParse, FlagsBecomeTheOperationsFields) {
  const Request& set = parse("ms k 3 F5 T-1 C99 MA q O123", Command::meta_set);
  EXPECT_EQ(set.mode, Mode::append);
  EXPECT_EQ(set.flags, 5u);
  EXPECT_TRUE(set.has_exptime);
  EXPECT_EQ(set.exptime_value, -1);
  EXPECT_TRUE(set.has_cas);
  EXPECT_EQ(set.cas, 99u);
  EXPECT_TRUE(set.quiet);
  EXPECT_EQ(set.opaque, "123");
  for (char c : std::string_view("FTCMqO")) EXPECT_TRUE(set.meta_flags.has(c)) << c;
  EXPECT_FALSE(set.meta_flags.has('v'));
  EXPECT_FALSE(set.unmodeled_flags);

  const Request& arith = parse("ma n MD D7 J3 N0", Command::meta_arithmetic);
  EXPECT_EQ(arith.mode, Mode::decr);
  EXPECT_EQ(arith.delta, 7u);
  EXPECT_EQ(arith.initial, 3u);
  EXPECT_TRUE(arith.has_vivify);
  EXPECT_EQ(arith.vivify, 0);

  EXPECT_EQ(parse("ms k 1", Command::meta_set).mode, Mode::set) << "ms without M sets";
  EXPECT_EQ(parse("ma k", Command::meta_arithmetic).mode, Mode::incr) << "ma without M adds";
  EXPECT_EQ(parse("mg k v", Command::meta_get).mode, Mode::none);
}

TEST_F(MetaParse, WhatTheFieldsCannotSayIsUnmodeledButStillForwarded) {
  for (const char* line : {"mg k T1 T2", "mg k Tx", "mg k R30 v", "mg k x", "mg k E5"}) {
    const Request& r = parse(line, Command::meta_get);
    EXPECT_EQ(r.action, Action::forward) << line;
    EXPECT_TRUE(r.unmodeled_flags) << line;
  }
  EXPECT_FALSE(parse("mg k Tx", Command::meta_get).has_exptime) << "no value claimed";
  EXPECT_EQ(parse("ms k 1 MX", Command::meta_set).mode, Mode::invalid);
  // Proxy hints memcached ignores are dropped, not unmodeled.
  EXPECT_FALSE(parse("mg k P1 L2 v", Command::meta_get).unmodeled_flags);
}

TEST_F(MetaParse, ABase64KeyIsDecodedForRouting) {
  const std::string key = "a key\x01with bytes";
  const Request& r = parse("mg " + b64(key) + " b v", Command::meta_get);
  EXPECT_EQ(r.action, Action::forward);
  ASSERT_EQ(r.keys.size(), 1u);
  EXPECT_EQ(r.keys[0], key);
  EXPECT_TRUE(r.meta_flags.has('b'));
}

TEST_F(MetaParse, AKeyThatDoesNotDecodeGetsTheErrorMemcachedsFlagScanGives) {
  EXPECT_EQ(parse("mg !!! b v", Command::meta_get).error_reply, reply::kBadKeyEncoding);
  // A repeated flag stops the scan before the key's error is reported.
  EXPECT_EQ(parse("mg !!! T1 b T2", Command::meta_get).error_reply, reply::kDuplicateFlag);
  // An unknown flag does too.
  EXPECT_EQ(parse("mg !!! b x", Command::meta_get).error_reply, reply::kInvalidFlag);
  // The last bad argument names the error.
  EXPECT_EQ(parse("mg !!! b Tx", Command::meta_get).error_reply, reply::kBadToken);
  // md and ma say one thing for every such failure.
  EXPECT_EQ(parse("md !!! b", Command::meta_delete).error_reply, reply::kInvalidOrDuplicateFlag);
  EXPECT_EQ(parse("ma !!! b", Command::meta_arithmetic).error_reply,
            reply::kInvalidOrDuplicateFlag);
  // ms swallows its data, which the client sent anyway.
  const Request& set = parse("ms !!! 4 b", Command::meta_set);
  EXPECT_EQ(set.action, Action::error);
  EXPECT_EQ(set.swallow, 4u + 2u);
}

TEST_F(MetaParse, ATooLargeMsIsRefusedSwallowedAndItsKeyDropped) {
  const Limits small{10};
  const Request& plain = parse("ms k 11 T0", Command::meta_set, small);
  EXPECT_EQ(plain.action, Action::error);
  EXPECT_EQ(plain.error_reply, reply::kTooLarge);
  EXPECT_EQ(plain.swallow, 11u + 2u);
  EXPECT_TRUE(plain.invalidate_key) << "memcached unlinks the old value";
  ASSERT_EQ(plain.keys.size(), 1u);
  EXPECT_EQ(plain.keys[0], "k");
  EXPECT_EQ(plain.raw_key, "k");
  EXPECT_FALSE(plain.key_base64);

  const std::string key = "spaced key";
  const Request& encoded = parse("ms " + b64(key) + " 11 b", Command::meta_set, small);
  EXPECT_TRUE(encoded.invalidate_key);
  EXPECT_EQ(encoded.keys[0], key);
  EXPECT_EQ(encoded.raw_key, b64(key));
  EXPECT_TRUE(encoded.key_base64);

  EXPECT_EQ(parse("ms k 10", Command::meta_set, small).action, Action::forward) << "at the limit";
}

TEST_F(MetaParse, FlagErrorsComeBeforeTheSizeOfAnMs) {
  const Limits small{10};
  const std::string long_opaque = "O" + std::string(40, 'x');
  const Request& dup = parse("ms k 11 T1 T2", Command::meta_set, small);
  EXPECT_EQ(dup.error_reply, reply::kDuplicateFlag);
  EXPECT_FALSE(dup.invalidate_key);
  EXPECT_EQ(dup.swallow, 13u);
  EXPECT_EQ(parse("ms k 11 MX", Command::meta_set, small).error_reply, reply::kBadMsMode);
  EXPECT_EQ(parse("ms k 11 " + long_opaque, Command::meta_set, small).error_reply,
            reply::kOpaqueTooLong);
  // An unknown mode wins over a too long opaque.
  EXPECT_EQ(parse("ms k 11 " + long_opaque + " MX", Command::meta_set, small).error_reply,
            reply::kBadMsMode);
}

TEST_F(MetaParse, ArityAndKeyLength) {
  EXPECT_EQ(parse("mg", Command::meta_get).error_reply, reply::kError);
  EXPECT_EQ(parse("ms k", Command::meta_set).error_reply, reply::kBadFormat);
  EXPECT_EQ(parse("ms k x", Command::meta_set).error_reply, reply::kBadFormat);
  EXPECT_EQ(parse("ms k x", Command::meta_set).swallow, 0u) << "a bad length swallows nothing";
  const std::string at_limit(kMaxKeyLength, 'k');
  EXPECT_EQ(parse("mg " + at_limit + " v", Command::meta_get).action, Action::forward);
  EXPECT_EQ(parse("mg " + at_limit + "k v", Command::meta_get).error_reply, reply::kBadFormat);
}

TEST_F(MetaParse, MeReadsNoFlagsButAThirdTokenB) {
  const Request& plain = parse("me k", Command::meta_debug);
  EXPECT_EQ(plain.action, Action::forward);
  EXPECT_EQ(plain.keys[0], "k");
  const Request& encoded = parse("me " + b64("two words") + " b", Command::meta_debug);
  EXPECT_EQ(encoded.keys[0], "two words");
  EXPECT_EQ(parse("me", Command::meta_debug).error_reply, reply::kBadFormat);
  EXPECT_FALSE(parse("me k q", Command::meta_debug).quiet);
}

}  // namespace
}  // namespace memshard::proto
