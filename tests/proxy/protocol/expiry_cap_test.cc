// Capping the expiry a request sets, for a gutter pool: what each command
// becomes, and what goes as it is.
#include "proxy/protocol/expiry_cap.h"

#include <gtest/gtest.h>

#include "proxy/protocol/request_parser.h"

namespace memshard::proto {
namespace {

constexpr int64_t kNow = 1'800'000'000;  // a unix time, beyond 30 days

class ExpiryCap : public ::testing::Test {
 protected:
  std::optional<std::string> cap(std::string_view line, uint32_t seconds = 10) {
    parse_request_line(line, limits_, request_);
    return cap_expiry(request_, line, seconds, kNow);
  }
  Limits limits_;
  Request request_;
};

TEST(CappedExptime, EveryKindOfExptime) {
  EXPECT_EQ(capped_exptime(0, 10, kNow), 10);     // never: the cap
  EXPECT_EQ(capped_exptime(5, 10, kNow), 5);      // shorter: kept
  EXPECT_EQ(capped_exptime(3600, 10, kNow), 10);  // longer: the cap
  EXPECT_EQ(capped_exptime(-1, 10, kNow), -1);    // already expired: kept
  EXPECT_EQ(capped_exptime(kNow + 3, 10, kNow), 3);
  EXPECT_EQ(capped_exptime(kNow + 3600, 10, kNow), 10);
  EXPECT_EQ(capped_exptime(kNow - 5, 10, kNow), -1);  // a unix time past: expired
  EXPECT_EQ(capped_exptime(60 * 60 * 24 * 30, 10, kNow), 10);
}

TEST_F(ExpiryCap, ClassicStorageAndTouch) {
  EXPECT_EQ(cap("set k 5 0 3"), "set k 5 10 3");
  EXPECT_EQ(cap("add k 0 3600 3 noreply"), "add k 0 10 3 noreply");
  EXPECT_EQ(cap("replace k 0 4 3"), "replace k 0 4 3");
  EXPECT_EQ(cap("cas k 1 0 3 99"), "cas k 1 10 3 99");
  EXPECT_EQ(cap("touch k 0"), "touch k 10");
  EXPECT_EQ(cap("gat 600 a b"), "gat 10 a b");
  EXPECT_EQ(cap("gats 0 a"), "gats 10 a");
}

TEST_F(ExpiryCap, MetaTAndN) {
  EXPECT_EQ(cap("ms k 3 T0 F5"), "ms k 3 T10 F5");
  EXPECT_EQ(cap("ms k 3 F5 q"), "ms k 3 F5 q T10");  // no T: the cap added
  EXPECT_EQ(cap("ms k 3 T2"), "ms k 3 T2");
  EXPECT_EQ(cap("mg k v N0 T600"), "mg k v N10 T10");
  EXPECT_EQ(cap("ma k N3600 J5"), "ma k N10 J5");
}

TEST_F(ExpiryCap, WhatSetsNoExpiryGoesAsItIs) {
  EXPECT_EQ(cap("get a b"), std::nullopt);
  EXPECT_EQ(cap("delete k"), std::nullopt);
  EXPECT_EQ(cap("incr k 1"), std::nullopt);
  EXPECT_EQ(cap("append k 0 0 3"), std::nullopt);  // memcached ignores its exptime
  EXPECT_EQ(cap("mg k v"), std::nullopt);
  EXPECT_EQ(cap("md k q"), std::nullopt);
}

TEST_F(ExpiryCap, AValueMemcachedRefusesStaysForTheServerToRefuse) {
  EXPECT_EQ(cap("ms k 3 Tabc"), "ms k 3 Tabc");
}

}  // namespace
}  // namespace memshard::proto
