// SlabPool (proxy/slab_pool.h): blocks that do not overlap and are reused,
// and slabs that go back to the kernel (checked with mincore, which fails
// on an unmapped address) once every block in them is free.
#include "proxy/support/slab_pool.h"

#include <gtest/gtest.h>
#include <sys/mman.h>
#include <unistd.h>

#include <cerrno>
#include <cstdint>
#include <cstring>
#include <set>
#include <vector>

namespace memshard::proxy {
namespace {

constexpr size_t kBlock = 440;  // about a ClientConn

// Whether the page holding p is resident (mapped and backed by memory).
bool resident(const void* p) {
  auto page = reinterpret_cast<uintptr_t>(p) & ~(static_cast<uintptr_t>(getpagesize()) - 1);
  unsigned char v = 0;
  EXPECT_EQ(mincore(reinterpret_cast<void*>(page), 1, &v), 0) << strerror(errno);
  return (v & 1) != 0;
}

bool mapped(const void* p) {
  auto page = reinterpret_cast<uintptr_t>(p) & ~(static_cast<uintptr_t>(getpagesize()) - 1);
  unsigned char v;
  return mincore(reinterpret_cast<void*>(page), 1, &v) == 0 || errno != ENOMEM;
}

TEST(SlabPool, BlocksAreAlignedAndDoNotOverlap) {
  SlabPool pool(kBlock);
  ASSERT_GE(pool.block_size(), kBlock);
  size_t n = 3 * pool.blocks_per_slab() + 7;
  std::vector<unsigned char*> blocks;
  for (size_t i = 0; i < n; ++i) {
    auto* b = static_cast<unsigned char*>(pool.allocate());
    ASSERT_EQ(reinterpret_cast<uintptr_t>(b) % alignof(std::max_align_t), 0u);
    memset(b, static_cast<int>(i & 0xff), kBlock);
    blocks.push_back(b);
  }
  EXPECT_EQ(pool.live_blocks(), n);
  // Every block still holds its own pattern: none was handed out twice or
  // overlaps another.
  for (size_t i = 0; i < n; ++i) {
    for (size_t j = 0; j < kBlock; ++j) {
      ASSERT_EQ(blocks[i][j], static_cast<unsigned char>(i & 0xff))
          << "block " << i << " byte " << j;
    }
  }
  for (unsigned char* b : blocks) pool.deallocate(b);
  EXPECT_EQ(pool.live_blocks(), 0u);
}

TEST(SlabPool, FreedBlocksAreReusedBeforeNewMemory) {
  if (!SlabPool::kMapsSlabs) GTEST_SKIP() << "sanitizer build: blocks come from operator new";
  SlabPool pool(kBlock);
  std::vector<void*> blocks;
  for (size_t i = 0; i < 10; ++i) blocks.push_back(pool.allocate());
  std::set<void*> freed{blocks[2], blocks[5], blocks[7]};
  for (void* b : freed) pool.deallocate(b);
  std::set<void*> again;
  for (size_t i = 0; i < 3; ++i) again.insert(pool.allocate());
  EXPECT_EQ(again, freed);
  EXPECT_EQ(pool.mapped_slabs(), 1u);
  for (size_t i = 0; i < 10; ++i) {
    if (freed.count(blocks[i]) == 0) pool.deallocate(blocks[i]);
  }
  for (void* b : again) pool.deallocate(b);
}

TEST(SlabPool, EmptySlabsGoBackToTheKernelButOne) {
  if (!SlabPool::kMapsSlabs) GTEST_SKIP() << "sanitizer build: blocks come from operator new";
  SlabPool pool(kBlock);
  size_t per = pool.blocks_per_slab();
  std::vector<void*> blocks;
  for (size_t i = 0; i < 4 * per; ++i) blocks.push_back(pool.allocate());
  ASSERT_EQ(pool.mapped_slabs(), 4u);
  // Blocks of each slab, in allocation order: slab k holds blocks
  // [k*per, (k+1)*per).
  for (size_t k = 0; k < 4; ++k) ASSERT_TRUE(mapped(blocks[k * per]));

  // All but one block of slab 0 freed: it stays.
  for (size_t i = 1; i < per; ++i) pool.deallocate(blocks[i]);
  EXPECT_EQ(pool.mapped_slabs(), 4u);
  EXPECT_TRUE(mapped(blocks[0]));
  // Slabs 1 and 2 emptied: the first is kept as the spare, the second is
  // unmapped.
  for (size_t i = per; i < 3 * per; ++i) pool.deallocate(blocks[i]);
  EXPECT_EQ(pool.mapped_slabs(), 3u);
  EXPECT_TRUE(mapped(blocks[per]));
  EXPECT_FALSE(mapped(blocks[2 * per]));
  // The last block of slab 0 goes: slab 0 is unmapped (the spare exists).
  pool.deallocate(blocks[0]);
  EXPECT_EQ(pool.mapped_slabs(), 2u);
  EXPECT_FALSE(mapped(blocks[0]));
  for (size_t i = 3 * per; i < 4 * per; ++i) pool.deallocate(blocks[i]);
  EXPECT_EQ(pool.mapped_slabs(), 1u);  // the spare
  EXPECT_EQ(pool.live_blocks(), 0u);

  // The spare serves the next allocation: nothing new is mapped.
  void* b = pool.allocate();
  EXPECT_EQ(pool.mapped_slabs(), 1u);
  pool.deallocate(b);
  // And goes too when asked.
  pool.release_spare();
  EXPECT_EQ(pool.mapped_slabs(), 0u);
  EXPECT_FALSE(mapped(b));
}

// A few live blocks must not keep the pages of the many freed around them.
TEST(SlabPool, FreePagesInsideALiveSlabGoBackToTheKernel) {
  if (!SlabPool::kMapsSlabs) GTEST_SKIP() << "sanitizer build: blocks come from operator new";
  SlabPool pool(kBlock);
  size_t per = pool.blocks_per_slab();
  std::vector<unsigned char*> blocks;
  for (size_t i = 0; i < per; ++i) {
    blocks.push_back(static_cast<unsigned char*>(pool.allocate()));
    memset(blocks.back(), 0x5a, kBlock);  // every page of the slab resident
  }
  ASSERT_EQ(pool.mapped_slabs(), 1u);
  size_t middle = per / 2;
  for (size_t i = 1; i + 1 < per; ++i) {
    if (i != middle) pool.deallocate(blocks[i]);
  }
  // Three live blocks: the first, the middle one and the last.
  size_t released = pool.release_free_pages();
  size_t page = static_cast<size_t>(getpagesize());
  size_t pages = SlabPool::kSlabBytes / page;
  // Every page but the header's and those the three blocks lie on (each may
  // straddle two).
  EXPECT_GE(released, pages - 1 - 6) << "of " << pages << " pages";
  size_t resident_pages = 0;
  auto* slab = reinterpret_cast<unsigned char*>(reinterpret_cast<uintptr_t>(blocks[0]) &
                                                ~(SlabPool::kSlabBytes - 1));
  for (size_t p = 0; p < pages; ++p) resident_pages += resident(slab + p * page) ? 1 : 0;
  EXPECT_EQ(resident_pages, pages - released);
  EXPECT_LE(resident_pages, 7u);
  // The live blocks kept their bytes; a page is given back once only.
  for (size_t i : {size_t{0}, middle, per - 1}) {
    for (size_t j = 0; j < kBlock; ++j) ASSERT_EQ(blocks[i][j], 0x5a) << "block " << i;
    EXPECT_TRUE(resident(blocks[i]));
  }
  EXPECT_EQ(pool.release_free_pages(), 0u);

  // Blocks allocated again on given-back pages work like any other.
  std::vector<unsigned char*> again;
  for (size_t i = 0; i + 3 < per; ++i) {
    again.push_back(static_cast<unsigned char*>(pool.allocate()));
    memset(again.back(), static_cast<int>(i & 0xff), kBlock);
  }
  EXPECT_EQ(pool.mapped_slabs(), 1u) << "the freed blocks were not reused";
  for (size_t i = 0; i < again.size(); ++i) {
    ASSERT_EQ(again[i][kBlock - 1], static_cast<unsigned char>(i & 0xff));
  }
  for (unsigned char* b : again) pool.deallocate(b);
  for (size_t i : {size_t{0}, middle, per - 1}) pool.deallocate(blocks[i]);
  EXPECT_EQ(pool.live_blocks(), 0u);
}

TEST(SlabPool, AFullSlabWithAFreedBlockServesAgain) {
  if (!SlabPool::kMapsSlabs) GTEST_SKIP() << "sanitizer build: blocks come from operator new";
  SlabPool pool(kBlock);
  size_t per = pool.blocks_per_slab();
  std::vector<void*> blocks;
  for (size_t i = 0; i < 2 * per; ++i) blocks.push_back(pool.allocate());
  ASSERT_EQ(pool.mapped_slabs(), 2u);
  pool.deallocate(blocks[3]);  // slab 0 was full
  EXPECT_EQ(pool.allocate(), blocks[3]);
  EXPECT_EQ(pool.mapped_slabs(), 2u);
  for (void* b : blocks) pool.deallocate(b);
}

}  // namespace
}  // namespace memshard::proxy
