// The hot-key cache's rules on a fake clock: TTL, size bound, and the
// epoch that refuses a fill whose read raced a write.
#include "proxy/routes/hot_key_cache.h"

#include <gtest/gtest.h>

namespace memshard::proxy {
namespace {

constexpr std::string_view kBlock = "VALUE k 0 1\r\nv\r\n";

TEST(HotKeyCache, ServesAFillUntilItsTtl) {
  HotKeyCache c(1 << 20, 1000);
  std::string out;
  EXPECT_FALSE(c.lookup("k", 0, out));
  c.fill("k", kBlock, c.epoch("k"), 100);
  EXPECT_TRUE(c.lookup("k", 1099, out));
  EXPECT_EQ(out, kBlock);
  out.clear();
  EXPECT_FALSE(c.lookup("k", 1100, out));
  EXPECT_EQ(out, "");
  EXPECT_EQ(c.entries(), 0u);
}

TEST(HotKeyCache, AGetsFillServesBothGetAndGets) {
  HotKeyCache c(1 << 20, 1000000);
  c.fill("k", "VALUE k 5 1\r\nv\r\n", c.epoch("k"), 0);
  std::string out;
  EXPECT_FALSE(c.lookup("k", 1, out, true));  // a get's fill has no CAS to give
  c.fill("k", "VALUE k 5 1 77\r\nv\r\n", c.epoch("k"), 0);
  EXPECT_TRUE(c.lookup("k", 1, out, true));
  EXPECT_EQ(out, "VALUE k 5 1 77\r\nv\r\n");
  out.clear();
  EXPECT_TRUE(c.lookup("k", 1, out));
  EXPECT_EQ(out, "VALUE k 5 1\r\nv\r\n");
  // Spaces in the data are not tokens of the VALUE line.
  c.fill("j", "VALUE j 0 5\r\na b c\r\n", c.epoch("j"), 0);
  out.clear();
  EXPECT_TRUE(c.lookup("j", 1, out));
  EXPECT_EQ(out, "VALUE j 0 5\r\na b c\r\n");
  EXPECT_FALSE(c.lookup("j", 1, out, true));
}

TEST(HotKeyCache, AWriteDropsTheKey) {
  HotKeyCache c(1 << 20, 1000000);
  c.fill("k", kBlock, c.epoch("k"), 0);
  c.fill("j", kBlock, c.epoch("j"), 0);
  c.invalidate("k");
  std::string out;
  EXPECT_FALSE(c.lookup("k", 1, out));
  EXPECT_TRUE(c.lookup("j", 1, out));
}

TEST(HotKeyCache, AFillWhoseReadRacedAWriteIsRefused) {
  HotKeyCache c(1 << 20, 1000000);
  uint64_t e = c.epoch("k");  // the read is sent
  c.invalidate("k");          // a write is answered meanwhile
  c.fill("k", kBlock, e, 0);  // the read's old value comes back
  std::string out;
  EXPECT_FALSE(c.lookup("k", 1, out));
  c.fill("k", kBlock, c.epoch("k"), 0);
  EXPECT_TRUE(c.lookup("k", 1, out));
}

TEST(HotKeyCache, FlushDropsEverythingAndRefusesFillsInFlight) {
  HotKeyCache c(1 << 20, 1000000);
  uint64_t e = c.epoch("j");
  c.fill("k", kBlock, c.epoch("k"), 0);
  c.clear();
  c.fill("j", kBlock, e, 0);
  std::string out;
  EXPECT_FALSE(c.lookup("k", 1, out));
  EXPECT_FALSE(c.lookup("j", 1, out));
  EXPECT_EQ(c.bytes(), 0u);
}

TEST(HotKeyCache, MemoryStaysWithinItsBound) {
  HotKeyCache c(4096, 1000000);
  const std::string big = "VALUE k 0 1000\r\n" + std::string(1000, 'x') + "\r\n";
  for (int i = 0; i < 100; ++i) {
    std::string k = "k" + std::to_string(i);
    c.fill(k, big, c.epoch(k), 0);
    EXPECT_LE(c.bytes(), 4096u);
  }
  EXPECT_GT(c.entries(), 0u);
  EXPECT_LT(c.entries(), 5u);
  // Expired entries make room.
  c.fill("late", big, c.epoch("late"), 2000000);
  std::string out;
  EXPECT_TRUE(c.lookup("late", 2000001, out));
}

}  // namespace
}  // namespace memshard::proxy
