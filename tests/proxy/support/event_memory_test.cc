// event_memory (proxy/support/event_memory.h): the chains libevent frees
// are kept per thread, by size, up to a bound, and handed out again; a
// grown block keeps its bytes; other sizes and blocks past the bound go
// back to malloc. Real evbuffers over the installed
// allocator: a binary of its own, since installing it is for the whole
// process and must come before libevent allocates anything.
#include "proxy/support/event_memory.h"

#include <event2/buffer.h>
#include <event2/event.h>
#include <gtest/gtest.h>

#include <cstring>
#include <string>
#include <thread>
#include <vector>

namespace memshard::proxy::event_memory {
namespace {

TEST(EventMemory, AFreedChainIsHandedOutAgainForTheSameSize) {
  void* a = allocate(1024);
  ASSERT_NE(a, nullptr);
  const size_t before = cached_blocks(1024);
  release(a);
  EXPECT_EQ(cached_blocks(1024), before + 1);
  void* b = allocate(1024);
  EXPECT_EQ(b, a);
  EXPECT_EQ(cached_blocks(1024), before);
  void* c = allocate(2048);  // another size: not the block just taken
  EXPECT_NE(c, b);
  release(b);
  release(c);
}

// Anything but a chain's size keeps malloc's size: rounded up, the records
// libevent keeps for every parked connection would grow.
TEST(EventMemory, OtherSizesAreNotCached) {
  for (size_t bytes : {64ul, 136ul, 1000ul, 1025ul, 3000ul}) {
    EXPECT_EQ(cache_limit(bytes), 0u) << bytes;
    release(allocate(bytes));
    EXPECT_EQ(cached_blocks(bytes), 0u) << bytes;
  }
}

TEST(EventMemory, BlocksAreAlignedAsMallocsAndWritableToTheirSize) {
  for (size_t bytes : {1ul, 63ul, 64ul, 65ul, 1024ul, 4000ul, 16384ul, 16385ul, 100000ul}) {
    void* p = allocate(bytes);
    ASSERT_NE(p, nullptr) << bytes;
    EXPECT_EQ(reinterpret_cast<uintptr_t>(p) % 16, 0u) << bytes;
    std::memset(p, 0xab, bytes);
    release(p);
  }
}

TEST(EventMemory, TheCacheKeepsAtMostItsBoundPerClass) {
  EXPECT_EQ(cache_limit(1024), 128u);  // 128 blocks
  EXPECT_EQ(cache_limit(4096), 32u);   // 128 KiB
  EXPECT_EQ(cache_limit(kLargestClass), 8u);
  for (size_t bytes : {1024ul, 2048ul, kLargestClass}) {
    const size_t limit = cache_limit(bytes);
    std::vector<void*> blocks;
    for (size_t i = 0; i < limit + 10; ++i) blocks.push_back(allocate(bytes));
    for (void* b : blocks) release(b);
    EXPECT_EQ(cached_blocks(bytes), limit) << bytes;
    // Taken back out, it empties; the next one comes from malloc.
    blocks.clear();
    for (size_t i = 0; i < limit; ++i) blocks.push_back(allocate(bytes));
    EXPECT_EQ(cached_blocks(bytes), 0u) << bytes;
    for (void* b : blocks) release(b);
  }
}

TEST(EventMemory, ReleasingTheCacheEmptiesItAndItFillsAgain) {
  std::vector<void*> blocks;
  for (int i = 0; i < 5; ++i) blocks.push_back(allocate(1024));
  for (void* b : blocks) release(b);
  ASSERT_GE(cached_blocks(1024), 5u);
  release_cached();
  EXPECT_EQ(cached_blocks(1024), 0u);
  EXPECT_EQ(cached_blocks(2048), 0u);
  release(allocate(1024));
  EXPECT_EQ(cached_blocks(1024), 1u);
}

TEST(EventMemory, SizesPastTheLargestClassAreNotCached) {
  EXPECT_EQ(cached_blocks(kLargestClass + 1), 0u);
  void* p = allocate(kLargestClass + 1);
  release(p);
  EXPECT_EQ(cached_blocks(kLargestClass + 1), 0u);
}

TEST(EventMemory, GrowingKeepsTheBytesAndShrinkingKeepsTheBlock) {
  auto* p = static_cast<char*>(reallocate(nullptr, 100));
  ASSERT_NE(p, nullptr);
  std::memcpy(p, "abcdefghij", 10);
  EXPECT_EQ(reallocate(p, 10), p) << "room enough";
  auto* q = static_cast<char*>(reallocate(p, 50000));
  ASSERT_NE(q, nullptr);
  EXPECT_EQ(std::string(q, 10), "abcdefghij");
  q[49999] = 'z';
  auto* r = static_cast<char*>(reallocate(q, 70000));  // past the largest class, grown again
  EXPECT_EQ(std::string(r, 10), "abcdefghij");
  EXPECT_EQ(r[49999], 'z');
  release(r);
  release(nullptr);  // as free() takes it
}

TEST(EventMemory, EachThreadHasItsOwnCache) {
  void* mine = allocate(4096);
  release(mine);
  const size_t here = cached_blocks(4096);
  size_t there_before = 99, there_after = 99;
  void* theirs = nullptr;
  std::thread t([&] {
    there_before = cached_blocks(4096);
    theirs = allocate(4096);
    release(theirs);
    there_after = cached_blocks(4096);
  });
  t.join();
  EXPECT_EQ(there_before, 0u);
  EXPECT_EQ(there_after, 1u);
  EXPECT_NE(theirs, mine) << "a thread took a block from another's cache";
  EXPECT_EQ(cached_blocks(4096), here);
}

// Installed as libevent's allocator, evbuffers work over it and their
// chains come back to the cache when drained: the case it is for.
TEST(EventMemory, EvbuffersRunOverItAndTheirChainsAreReused) {
  if (!install()) GTEST_SKIP() << "AddressSanitizer build: libevent keeps malloc";
  event_base* base = event_base_new();  // allocated through the cache
  ASSERT_NE(base, nullptr);
  std::string data(3000, 'x');
  for (size_t i = 0; i < data.size(); ++i) data[i] = static_cast<char>('a' + i % 26);
  for (int round = 0; round < 50; ++round) {
    evbuffer* b = evbuffer_new();
    evbuffer* moved = evbuffer_new();
    evbuffer_add(b, data.data(), data.size());
    evbuffer_remove_buffer(b, moved, 1234);  // a partial chain: copied
    evbuffer_add_buffer(moved, b);
    ASSERT_EQ(evbuffer_get_length(moved), data.size());
    std::string back(data.size(), '\0');
    ASSERT_EQ(evbuffer_remove(moved, back.data(), back.size()), static_cast<int>(back.size()));
    ASSERT_EQ(back, data) << "round " << round;
    evbuffer_free(b);
    evbuffer_free(moved);
  }
  EXPECT_GT(cached_blocks(1024) + cached_blocks(2048) + cached_blocks(4096), 0u)
      << "no chain came back to the cache";
  event_base_free(base);
}

}  // namespace
}  // namespace memshard::proxy::event_memory
