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

// ttl_set (mcrouter's ModifyExptimeRoute, action set): every expiry a
// request sets becomes the pool's, shorter, longer, 0 or past alike.
TEST_F(ExpiryCap, SetReplacesEveryExpiry) {
  const auto set = [this](std::string_view line, uint32_t seconds) {
    parse_request_line(line, limits_, request_);
    return rewrite_expiry(request_, line, ExpiryRule::set_to(seconds), kNow);
  };
  EXPECT_EQ(set("set k 5 0 3", 60), "set k 5 60 3");
  EXPECT_EQ(set("set k 5 2 3", 60), "set k 5 60 3");
  EXPECT_EQ(set("add k 0 -1 3", 60), "add k 0 60 3");
  EXPECT_EQ(set("cas k 1 1900000000 3 99", 60), "cas k 1 60 3 99");
  EXPECT_EQ(set("touch k 5", 60), "touch k 60");
  EXPECT_EQ(set("gat 600 a b", 60), "gat 60 a b");
  EXPECT_EQ(set("set k 5 100 3", 0), "set k 5 0 3");  // 0: never
  EXPECT_EQ(set("ms k 3 T5 F1", 60), "ms k 3 T60 F1");
  EXPECT_EQ(set("ms k 3", 60), "ms k 3 T60");
  EXPECT_EQ(set("mg k v T1", 60), "mg k v T60");
  EXPECT_EQ(set("ma k N10", 60), "ma k N60");
  // Deletes keep theirs, as mcrouter's; reads and arithmetic set none.
  EXPECT_EQ(set("md k I T30", 60), std::nullopt);
  EXPECT_EQ(set("get a", 60), std::nullopt);
  EXPECT_EQ(set("incr k 1", 60), std::nullopt);
  EXPECT_EQ(set("append k 0 0 3", 60), std::nullopt);
  EXPECT_EQ(rewrite_expiry(request_, "set k 5 0 3", ExpiryRule{}, kNow), std::nullopt);
}

TEST(RewrittenExptime, CapAndSet) {
  EXPECT_EQ(rewritten_exptime(0, ExpiryRule::cap_at(10), kNow), 10);
  EXPECT_EQ(rewritten_exptime(-1, ExpiryRule::cap_at(10), kNow), -1);
  EXPECT_EQ(rewritten_exptime(-1, ExpiryRule::set_to(10), kNow), 10);
  EXPECT_EQ(rewritten_exptime(kNow + 5, ExpiryRule::set_to(10), kNow), 10);
  EXPECT_EQ(rewritten_exptime(7, ExpiryRule{}, kNow), 7);
}

TEST_F(ExpiryCap, AValueMemcachedRefusesStaysForTheServerToRefuse) {
  EXPECT_EQ(cap("ms k 3 Tabc"), "ms k 3 Tabc");
}

}  // namespace
}  // namespace memshard::proto
