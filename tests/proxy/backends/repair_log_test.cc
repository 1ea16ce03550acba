// RepairLog (proxy/backends/repair_log.h): what is recorded, what a read
// must delete first, what a repair or a replacing write forgets, and how
// an overflow turns into a flush owed.
#include "proxy/backends/repair_log.h"

#include <gtest/gtest.h>

#include <cstdint>
#include <limits>
#include <string>
#include <vector>

namespace memshard::proxy {
namespace {

constexpr uint64_t kAnyTime = std::numeric_limits<uint64_t>::max();

std::vector<RepairLog::Item> take_all(const RepairLog& log, bool with_fallbacks = true) {
  std::vector<RepairLog::Item> items;
  log.take(1000, 0, kAnyTime, with_fallbacks, items);
  return items;
}

TEST(RepairLog, NothingRecordedGatesNothing) {
  RepairLog log("p", "s");
  EXPECT_TRUE(log.clear());
  EXPECT_FALSE(log.gates("k"));
  EXPECT_EQ(log.keys(), 0u);
}

TEST(RepairLog, ARecordedKeyIsGatedAndOthersAreNot) {
  RepairLog log("p", "s");
  log.record("k");
  EXPECT_FALSE(log.clear());
  EXPECT_TRUE(log.gates("k"));
  EXPECT_FALSE(log.gates("other"));
  EXPECT_EQ(log.keys(), 1u);
  log.record("k");  // once per key
  EXPECT_EQ(log.keys(), 1u);
  EXPECT_EQ(log.recorded(), 2u);
}

TEST(RepairLog, ARepairForgetsTheKeyUnlessRecordedAgainSince) {
  RepairLog log("p", "s");
  log.record("a");
  log.record("b");
  std::vector<RepairLog::Item> items = take_all(log);
  ASSERT_EQ(items.size(), 2u);
  log.record(items[0].key);  // written and missed again while the repair was out
  for (const RepairLog::Item& i : items) log.repaired(i, true);
  EXPECT_TRUE(log.gates(items[0].key)) << "a record newer than the repair stays";
  EXPECT_FALSE(log.gates(items[1].key));
  EXPECT_EQ(log.keys(), 1u);
  EXPECT_EQ(log.repairs(), 1u);
}

TEST(RepairLog, AReplacingWriteForgetsOnlyWhatWasRecordedBeforeItWasSent) {
  RepairLog log("p", "s");
  log.record("k");
  const uint64_t sent = log.sequence();  // a set of k is sent now
  log.replaced("k", sent);
  EXPECT_FALSE(log.gates("k"));

  log.record("k");
  const uint64_t earlier = log.sequence() - 1;  // a set sent before this record
  log.replaced("k", earlier);
  EXPECT_TRUE(log.gates("k")) << "the write it missed came after the set was sent";
}

TEST(RepairLog, AGuestCopyIsReleasedToItsServerOnceTheHomeIsBack) {
  RepairLog home("p", "home"), guest("p", "guest");
  home.record("k", &guest);
  EXPECT_TRUE(home.gates("k"));
  EXPECT_FALSE(guest.gates("k")) << "the guest serves the key while its home is out";
  // Before re-admission the home is repaired, but the entry stays for
  // its guest.
  home.record("j", &guest);
  std::vector<RepairLog::Item> items = take_all(home);
  ASSERT_EQ(items.size(), 2u);
  const RepairLog::Item& k = items[0].key == "k" ? items[0] : items[1];
  EXPECT_TRUE(home.repaired(k, false).empty());
  EXPECT_EQ(home.keys(), 2u);
  EXPECT_EQ(home.repairs(), 1u);
  EXPECT_EQ(take_all(home).size(), 1u) << "a key deleted on its home is not taken again";
  EXPECT_EQ(home.release_fallbacks(), 2u);
  EXPECT_TRUE(guest.gates("k"));
  EXPECT_TRUE(guest.gates("j"));
  // Released: k was repaired on its home already and goes; j stays for
  // its home's repair.
  EXPECT_EQ(home.keys(), 1u);
  EXPECT_FALSE(home.gates("k"));
  items = take_all(home);
  ASSERT_EQ(items.size(), 1u);
  EXPECT_EQ(items[0].key, "j");
  EXPECT_TRUE(items[0].fallbacks.empty());
  home.repaired(items[0], true);
  EXPECT_EQ(home.keys(), 0u);
}

TEST(RepairLog, ARepairOfALiveHomeHandsItsGuestsBack) {
  RepairLog home("p", "home"), guest("p", "guest");
  home.record("k", &guest);
  std::vector<RepairLog::Item> items = take_all(home);
  ASSERT_EQ(items.size(), 1u);
  std::vector<RepairLog*> guests = home.repaired(items[0], true);
  ASSERT_EQ(guests.size(), 1u);
  EXPECT_EQ(guests[0], &guest);
  EXPECT_EQ(home.keys(), 0u);
}

TEST(RepairLog, TakeSkipsWhatIsTooRecentAlreadyTakenOrHasGuests) {
  RepairLog home("p", "home"), guest("p", "guest");
  home.record("a");
  const uint64_t after_a = home.sequence();
  home.record("b", &guest);
  EXPECT_EQ(take_all(home, false).size(), 1u) << "entries with guests are left";
  std::vector<RepairLog::Item> items;
  home.take(10, after_a, kAnyTime, true, items);
  ASSERT_EQ(items.size(), 1u);
  EXPECT_EQ(items[0].key, "b");
  items.clear();
  home.take(10, 0, 0, true, items);
  EXPECT_TRUE(items.empty()) << "nothing was recorded at or before time 0";
}

TEST(RepairLog, AnOverflowOwesAFlushAndGatesEveryKey) {
  RepairLog log("p", "s"), guest("p", "guest");
  log.set_limit(3 * (RepairLog::kEntryOverhead + 1));
  log.record("a");
  log.record("b", &guest);
  log.record("c");
  EXPECT_FALSE(log.flush_owed());
  log.record("d");
  EXPECT_TRUE(log.flush_owed());
  EXPECT_EQ(log.overflows(), 1u);
  EXPECT_EQ(log.keys(), 0u) << "the keys are dropped: the flush covers them";
  EXPECT_TRUE(log.gates("never-recorded")) << "until the flush, any key may be stale";
  EXPECT_TRUE(guest.gates("b")) << "the flush does not reach a guest copy";
  const uint64_t before = log.sequence();
  log.flushed(before);
  EXPECT_FALSE(log.flush_owed());
  EXPECT_TRUE(log.clear());
  EXPECT_EQ(log.flushes(), 1u);
}

TEST(RepairLog, AFlushMissedAfterTheRepairReadTheSequenceStaysOwed) {
  RepairLog log("p", "s");
  log.record_flush();
  const uint64_t before = log.sequence();
  log.record_flush();  // a client's flush_all missed it while the repair's flush was out
  log.flushed(before);
  EXPECT_TRUE(log.flush_owed());
  log.flushed(log.sequence());
  EXPECT_FALSE(log.flush_owed());
}

TEST(RepairLog, AZeroLimitOwesAFlushAtTheFirstMissedWrite) {
  RepairLog log("p", "s");
  log.set_limit(0);
  log.record("k");
  EXPECT_TRUE(log.flush_owed());
}

TEST(RepairLog, OneLogPerServerOfAPool) {
  RepairLog& a = RepairLog::of("pool-a", "127.0.0.1:1");
  EXPECT_EQ(&a, &RepairLog::of("pool-a", "127.0.0.1:1"));
  EXPECT_NE(&a, &RepairLog::of("pool-b", "127.0.0.1:1"));
  EXPECT_EQ(RepairLog::find("pool-a", "127.0.0.1:1"), &a);
  EXPECT_EQ(RepairLog::find("pool-a", "127.0.0.1:2"), nullptr);
}

}  // namespace
}  // namespace memshard::proxy
