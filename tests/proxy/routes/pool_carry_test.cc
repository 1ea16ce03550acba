// What reloads and the clock do to a pool's placements with a scheduled
// switch (routes/pool_carry.h): topologies built from small configs by
// build_topology with both clocks given, so every moment is exact. No
// sockets, no sleeping.
#include "proxy/routes/pool_carry.h"

#include <gtest/gtest.h>

#include <memory>
#include <string>
#include <vector>

#include "conf/config.h"
#include "proxy/routes/topology.h"

namespace memshard::proxy {
namespace {

// The monotonic clock reads kMono when the wall clock reads kUnix.
constexpr uint64_t kMono = 50'000'000;
constexpr int64_t kUnix = int64_t{1'767'225'600} * 1'000'000;  // 2026-01-01T00:00:00Z
constexpr int64_t kUnixSeconds = 1'767'225'600;

// A pool "alpha" of `servers` local servers (ports 21001...), with `extra`
// directive lines.
std::string config(int servers, const std::string& extra = "") {
  std::string text =
      "alpha:\n  listen: 127.0.0.1:22121\n  reload_warmup: 60000\n" + extra + "  servers:\n";
  for (int i = 1; i <= servers; ++i) text += "   - 127.0.0.1:2100" + std::to_string(i) + ":1\n";
  return text;
}

std::string switch_at(int64_t seconds_from_now, int window_ms = 0) {
  std::string s = "  reload_switch_at: " + std::to_string(kUnixSeconds + seconds_from_now) + "\n";
  if (window_ms > 0) s += "  reload_switch_window: " + std::to_string(window_ms) + "\n";
  return s;
}

class PoolCarryTest : public ::testing::Test {
 protected:
  // Builds `text` as generation `generation` after `previous`, `offset_usec`
  // after kMono on both clocks.
  std::shared_ptr<const Topology> build(const std::string& text, uint64_t generation,
                                        const Topology* previous = nullptr,
                                        int64_t offset_usec = 0) {
    conf::LoadResult r = conf::parse_config(text, "test.yml");
    for (const conf::ConfigError& e : r.errors) ADD_FAILURE() << e.to_string();
    if (!r.config) return nullptr;
    notes_.clear();
    return build_topology(*r.config, generation, previous,
                          static_cast<uint64_t>(static_cast<int64_t>(kMono) + offset_usec),
                          kUnix + offset_usec, &notes_);
  }
  static const Pool& pool(const std::shared_ptr<const Topology>& t) { return t->pools.front(); }
  bool noted(const std::string& part) const {
    for (const std::string& n : notes_) {
      if (n.find(part) != std::string::npos) return true;
    }
    return false;
  }
  std::string notes() const {
    std::string all;
    for (const std::string& n : notes_) all += "\n  " + n;
    return all;
  }

  std::vector<std::string> notes_;
};

TEST_F(PoolCarryTest, ASwitchAheadKeepsThePlacementInForceAndTheNewSettings) {
  auto three = build(config(3), 1);
  auto four = build(config(4, "  timeout: 700\n" + switch_at(30, 5000)), 2, three.get());
  const Pool& p = pool(four);
  EXPECT_TRUE(same_placement(p, pool(three))) << "routes by the placement in force";
  EXPECT_EQ(p.config.servers.size(), 3u);
  EXPECT_EQ(p.config.timeout_ms, 700) << "other settings apply at once";
  ASSERT_TRUE(p.pending);
  EXPECT_EQ(p.pending->servers.size(), 4u);
  EXPECT_EQ(p.pending->config.servers.size(), 4u);
  EXPECT_EQ(p.pending->generation, 2u);
  EXPECT_EQ(p.pending->at_usec, kMono + 30'000'000);
  EXPECT_EQ(p.pending->window_usec, 5'000'000u);
  EXPECT_EQ(p.pending->at_unix_ms, (kUnixSeconds + 30) * 1000);
  EXPECT_TRUE(p.past.empty()) << "nothing moved yet";
  EXPECT_NE(p.guard, nullptr) << "writes of keys that will move need the guard";
  EXPECT_TRUE(noted("switches servers at 2026-01-01T00:00:30Z (in 30.000 s)")) << notes();
  EXPECT_EQ(next_window_end(*four), kMono + 35'000'000) << "the timer fires at the window's end";
}

TEST_F(PoolCarryTest, AtTheWindowsEndThePendingPlacementTakesOverAndTheOldOneIsPast) {
  auto three = build(config(3), 1);
  auto four = build(config(4, switch_at(30, 5000)), 2, three.get());
  Pool p = pool(four);
  EXPECT_FALSE(promote_due(p, kMono + 34'999'999));
  ASSERT_TRUE(p.pending);
  ASSERT_TRUE(promote_due(p, kMono + 35'000'000));
  EXPECT_FALSE(p.pending);
  EXPECT_EQ(p.servers.size(), 4u);
  EXPECT_EQ(p.config.servers.size(), 4u);
  ASSERT_EQ(p.past.size(), 1u);
  EXPECT_TRUE(same_placement(
      pool(three),
      Pool{pool(three).config, p.past[0].ring, p.past[0].servers, {}, {}, {}, {}, {}, {}}));
  EXPECT_TRUE(p.past[0].scheduled);
  EXPECT_FALSE(p.past[0].future);
  EXPECT_EQ(p.past[0].until_usec, kMono + 35'000'000 + 60'000'000)
      << "the old servers are the fallback for reload_warmup after the window";
}

TEST_F(PoolCarryTest, AReloadBeforeTheMomentReplacesTheWaitingSwitch) {
  auto three = build(config(3), 1);
  auto four = build(config(4, switch_at(30)), 2, three.get());
  auto five = build(config(5, switch_at(60)), 3, four.get(), 10'000'000);
  const Pool& p = pool(five);
  EXPECT_TRUE(same_placement(p, pool(three))) << "still the placement in force";
  ASSERT_TRUE(p.pending);
  EXPECT_EQ(p.pending->servers.size(), 5u) << "the four-server placement is gone";
  EXPECT_EQ(p.pending->generation, 3u);
  EXPECT_EQ(p.pending->at_usec, kMono + 60'000'000);
  EXPECT_TRUE(p.past.empty()) << "the dropped placement was never in force: no key is there";
  EXPECT_TRUE(noted("the switch to generation 2 waiting for 2026-01-01T00:00:30Z is dropped"))
      << notes();
}

TEST_F(PoolCarryTest, GoingBackToThePlacementInForceCancelsTheSwitch) {
  auto three = build(config(3), 1);
  auto four = build(config(4, switch_at(30)), 2, three.get());
  auto back = build(config(3, switch_at(30)), 3, four.get(), 1'000'000);
  EXPECT_FALSE(pool(back).pending);
  EXPECT_TRUE(pool(back).past.empty());
  EXPECT_TRUE(same_placement(pool(back), pool(three)));
  // And without a switch time at all: the same.
  auto plain = build(config(3), 3, four.get(), 1'000'000);
  EXPECT_FALSE(pool(plain).pending);
  EXPECT_TRUE(pool(plain).past.empty());
}

TEST_F(PoolCarryTest, TheSamePlacementAgainKeepsTheSwitchRescheduledIfItsTimeChanged) {
  auto three = build(config(3), 1);
  auto four = build(config(4, switch_at(30)), 2, three.get());
  auto again = build(config(4, "  timeout: 900\n" + switch_at(30)), 3, four.get(), 1'000'000);
  ASSERT_TRUE(pool(again).pending);
  EXPECT_EQ(pool(again).pending->at_usec, kMono + 30'000'000);
  EXPECT_EQ(pool(again).pending->generation, 3u) << "the newest config waits";
  EXPECT_EQ(pool(again).pending->config.timeout_ms, 900);
  EXPECT_TRUE(notes_.empty()) << notes();
  auto later = build(config(4, switch_at(45)), 4, again.get(), 2'000'000);
  ASSERT_TRUE(pool(later).pending);
  EXPECT_EQ(pool(later).pending->at_usec, kMono + 45'000'000);
  EXPECT_TRUE(noted("rescheduled for 2026-01-01T00:00:45Z")) << notes();
}

TEST_F(PoolCarryTest, ALateConfigSwitchesAtOnceAndSaysHowLate) {
  auto three = build(config(3), 1);
  auto four = build(config(4, switch_at(-7)), 2, three.get());
  const Pool& p = pool(four);
  EXPECT_FALSE(p.pending);
  EXPECT_EQ(p.servers.size(), 4u);
  ASSERT_EQ(p.past.size(), 1u);
  EXPECT_EQ(p.past[0].until_usec, kMono + 60'000'000);
  EXPECT_TRUE(noted("late for its switch at 2025-12-31T23:59:53Z by 7.000 s")) << notes();
}

TEST_F(PoolCarryTest, ALateConfigInsideItsWindowWaitsForTheKeysStillAhead) {
  auto three = build(config(3), 1);
  auto four = build(config(4, switch_at(-2, 10000)), 2, three.get());
  ASSERT_TRUE(pool(four).pending) << "keys whose moment is ahead still wait";
  EXPECT_EQ(pool(four).pending->at_usec, kMono - 2'000'000);
  EXPECT_TRUE(noted("by 2.000 s")) << notes();
}

TEST_F(PoolCarryTest, AReloadAfterTheWindowBeganCompletesTheSwitchFirst) {
  auto three = build(config(3), 1);
  auto four = build(config(4, switch_at(10, 10000)), 2, three.get());
  // 15 s on: the window runs; a config of five servers, switching later.
  auto five = build(config(5, switch_at(60)), 3, four.get(), 15'000'000);
  const Pool& p = pool(five);
  ASSERT_TRUE(p.pending);
  EXPECT_EQ(p.pending->servers.size(), 5u);
  EXPECT_EQ(p.servers.size(), 4u) << "the begun switch completed: four servers in force";
  ASSERT_EQ(p.past.size(), 1u);
  EXPECT_EQ(p.past[0].servers.size(), 3u) << "and the three-server placement is the fallback";
  EXPECT_TRUE(noted("had begun")) << notes();
}

TEST_F(PoolCarryTest, WithoutASwitchTimeAReloadMovesAtOnceAsBefore) {
  auto three = build(config(3), 1);
  auto four = build(config(4), 2, three.get());
  EXPECT_FALSE(pool(four).pending);
  EXPECT_EQ(pool(four).servers.size(), 4u);
  ASSERT_EQ(pool(four).past.size(), 1u);
  EXPECT_FALSE(pool(four).past[0].scheduled);
  EXPECT_TRUE(notes_.empty()) << notes();
}

TEST_F(PoolCarryTest, AStepOfTheWallClockMovesTheSwitch) {
  auto three = build(config(3), 1);
  auto four = build(config(4, switch_at(30)), 2, three.get());
  Pool p = pool(four);
  // 10 s later by the monotonic clock, the wall clock says 15 s later.
  EXPECT_TRUE(retime(p, WallClock{kMono + 10'000'000, kUnix + 15'000'000}));
  EXPECT_EQ(p.pending->at_usec, kMono + 25'000'000);
  EXPECT_FALSE(retime(p, WallClock{kMono + 11'000'000, kUnix + 16'000'500}))
      << "half a millisecond is noise";
}

TEST_F(PoolCarryTest, ASwitchTimeThatMovesNothingSchedulesNothing) {
  auto three = build(config(3), 1);
  auto same = build(config(3, "  timeout: 500\n" + switch_at(30)), 2, three.get());
  EXPECT_FALSE(pool(same).pending);
  EXPECT_TRUE(notes_.empty()) << notes();
}

// mcrouter's hashes have no points: their salt, their list and wch3's
// weights are what places keys.
TEST_F(PoolCarryTest, McrouterHashesCompareSaltListAndWeights) {
  auto a = build(config(3, "  distribution: ch3\n  hash_salt: a\n"), 1);
  EXPECT_TRUE(
      same_placement(pool(a), pool(build(config(3, "  distribution: ch3\n  hash_salt: a\n"), 2))));
  EXPECT_FALSE(
      same_placement(pool(a), pool(build(config(3, "  distribution: ch3\n  hash_salt: b\n"), 2))));
  EXPECT_FALSE(same_placement(
      pool(a), pool(build(config(3, "  distribution: crc32\n  hash_salt: a\n"), 2))));
  auto w = [](const std::string& second) {
    return "alpha:\n  listen: 127.0.0.1:22121\n  reload_warmup: 60000\n  distribution: wch3\n"
           "  servers:\n   - 127.0.0.1:21001:1\n   - 127.0.0.1:21002:" +
           second + "\n";
  };
  auto half = build(w("0.5"), 1);
  EXPECT_TRUE(same_placement(pool(half), pool(build(w("0.50"), 2))));
  EXPECT_FALSE(same_placement(pool(half), pool(build(w("0.25"), 2))));
}

}  // namespace
}  // namespace memshard::proxy
