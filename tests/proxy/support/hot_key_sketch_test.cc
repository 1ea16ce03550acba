// The hot-key summary on fake inputs: skewed streams from a seeded
// generator, whose true counts the test keeps itself.
#include "proxy/support/hot_key_sketch.h"

#include <gtest/gtest.h>

#include <cmath>
#include <map>
#include <random>
#include <string>

#include "proxy/support/hot_key_tracker.h"

namespace memshard::proxy {
namespace {

// n keys: "hot" takes `hot` of them, "warm" `warm`, the rest spread over
// `tail` keys; returns the true counts.
std::map<std::string, uint64_t> feed(HotKeySketch& s, uint64_t n, double hot, double warm, int tail,
                                     uint32_t seed) {
  std::mt19937 rng(seed);
  std::uniform_real_distribution<double> u(0, 1);
  std::uniform_int_distribution<int> pick(0, tail - 1);
  std::map<std::string, uint64_t> truth;
  for (uint64_t i = 0; i < n; ++i) {
    double r = u(rng);
    std::string k = r < hot ? "hot" : r < hot + warm ? "warm" : "k" + std::to_string(pick(rng));
    s.add(k, k == "hot" ? "s1" : "s2");
    ++truth[k];
  }
  return truth;
}

TEST(HotKeySketch, CountsStayWithinTheirBounds) {
  HotKeySketch s(32);
  auto truth = feed(s, 20000, 0.3, 0.05, 5000, 1);
  HotKeySummary sum = s.summary();
  EXPECT_EQ(sum.total, 20000u);
  EXPECT_EQ(sum.counters.size(), 32u);
  for (const HotKeyCounter& c : sum.counters) {
    EXPECT_LE(truth[c.key], c.count) << c.key;
    EXPECT_GE(truth[c.key], c.count - c.error) << c.key;
  }
  // Keys left out were seen at most min_count times.
  for (const auto& [k, n] : truth) {
    bool in = false;
    for (const HotKeyCounter& c : sum.counters) in |= c.key == k;
    if (!in) {
      EXPECT_LE(n, sum.min_count) << k;
    }
  }
}

TEST(HotKeySketch, MergeReportsHotKeysWithinTheBoundAndNothingUnderTheThreshold) {
  // Two workers, each seeing half of the stream.
  HotKeySketch a(64), b(64);
  auto ta = feed(a, 30000, 0.3, 0.05, 20000, 2);
  auto tb = feed(b, 30000, 0.3, 0.05, 20000, 3);
  auto r = merge_hot_keys({a.summary(), b.summary()}, 0.01, 10, 0);
  ASSERT_EQ(r.size(), 2u);
  EXPECT_EQ(r[0].key, "hot");
  EXPECT_EQ(r[0].server, "s1");
  EXPECT_EQ(r[1].key, "warm");
  EXPECT_EQ(r[1].server, "s2");
  for (const HotKeyReport& k : r) {
    double truth = static_cast<double>(ta[k.key] + tb[k.key]) / 60000;
    EXPECT_LE(std::abs(k.share - truth), k.error + 1e-9) << k.key;
  }
}

TEST(HotKeySketch, SamplingErrorWidensTheBound) {
  HotKeySketch a(64);
  feed(a, 1000, 0.3, 0.05, 1000, 4);
  auto without = merge_hot_keys({a.summary()}, 0.01, 10, 0);
  auto with = merge_hot_keys({a.summary()}, 0.01, 10, 3);
  ASSERT_FALSE(without.empty());
  ASSERT_FALSE(with.empty());
  EXPECT_GT(with[0].error, without[0].error + 0.03);  // 3 sigma of 30% over 1000
}

TEST(HotKeySketch, TheLeastCountedKeyGivesItsCounterUp) {
  // The summary's bookkeeping of its least count against a plain scan:
  // every newcomer inherits exactly the least count there was.
  HotKeySketch s(16);
  std::mt19937 rng(5);
  std::geometric_distribution<int> g(0.05);
  for (int i = 0; i < 5000; ++i) {
    HotKeySummary before = s.summary();
    std::string k = "k" + std::to_string(g(rng));
    bool known = false;
    for (const HotKeyCounter& c : before.counters) known |= c.key == k;
    s.add(k, "s");
    if (known || before.counters.size() < 16) continue;
    for (const HotKeyCounter& c : s.summary().counters) {
      if (c.key == k) {
        EXPECT_EQ(c.error, before.min_count) << i;
      }
    }
    if (i % 1000 == 999) s.halve();
  }
}

TEST(HotKeySketch, HalvingForgetsKeysThatCooled) {
  HotKeySketch s(8);
  for (int i = 0; i < 100; ++i) s.add("old", "s");
  for (int round = 0; round < 8; ++round) s.halve();
  EXPECT_EQ(s.size(), 0u);
  for (int i = 0; i < 10; ++i) s.add("new", "s");
  auto r = merge_hot_keys({s.summary()}, 0.5, 10, 0);
  ASSERT_EQ(r.size(), 1u);
  EXPECT_EQ(r[0].key, "new");
}

TEST(HotKeySketch, LimitBoundsTheReport) {
  HotKeySketch s(64);
  for (int k = 0; k < 20; ++k)
    for (int i = 0; i < 50; ++i) s.add("k" + std::to_string(k), "s");
  EXPECT_EQ(merge_hot_keys({s.summary()}, 0.01, 5, 0).size(), 5u);
}

TEST(HotKeyTracker, MarksAKeyHotOnlyOnceItsShareIsKnown) {
  HotKeyTracker t;
  t.configure("p", 0.2);
  uint64_t now = 1;
  EXPECT_FALSE(t.is_hot("a"));
  for (int i = 0; i < 2000; ++i) {
    if (!t.sample()) continue;
    t.record(i % 2 == 0 ? "a" : "b" + std::to_string(i), "s", now);
  }
  EXPECT_FALSE(t.is_hot("a"));  // no tick has passed on the fake clock
  now += HotKeyTracker::kTickUsec;
  t.record("a", "s", now);
  EXPECT_TRUE(t.is_hot("a"));
  EXPECT_FALSE(t.is_hot("b1"));
  EXPECT_GT(t.summary().total, 100u);
}

TEST(HotKeyTracker, AgesWithoutTrafficToo) {
  HotKeyTracker t;
  t.configure("p", 0.2);
  uint64_t now = 1;
  for (int i = 0; i < 1000; ++i) t.record("a", "s", now);
  now += HotKeyTracker::kTickUsec;
  t.tick_if_due(now);
  EXPECT_TRUE(t.is_hot("a"));
  // The housekeeping's ticks alone: the summary halves until it is empty.
  for (int i = 0; i < 60; ++i) {
    now += HotKeyTracker::kTickUsec;
    t.tick_if_due(now);
  }
  EXPECT_EQ(t.summary().total, 0u);
  EXPECT_TRUE(t.summary().counters.empty());
  EXPECT_FALSE(t.is_hot("a"));
}

}  // namespace
}  // namespace memshard::proxy
