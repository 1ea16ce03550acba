#include "proxy/support/slab_pool.h"

#include <sys/mman.h>
#include <unistd.h>

#include <bit>
#include <cassert>
#include <cstdint>
#include <new>

namespace memshard::proxy {

namespace {

constexpr size_t kAlign = alignof(std::max_align_t);
constexpr size_t kMaxBlocks = SlabPool::kSlabBytes / SlabPool::kMinBlock;
constexpr size_t kMaxPages = 16;  // 4 KiB pages; larger pages give fewer

size_t round_up(size_t n, size_t to) {
  return (n + to - 1) / to * to;
}

}  // namespace

// A slab starts with this header; its blocks follow. Slabs are aligned to
// their size, so a block finds its slab by masking its address. Which blocks
// are free is kept here rather than in the free blocks themselves, so that
// the pages of free blocks can be handed back to the kernel.
struct SlabPool::Slab {
  Slab* prev = nullptr;  // in with_room_
  Slab* next = nullptr;
  uint64_t free_bits[kMaxBlocks / 64] = {};  // bit set: block free
  uint16_t page_live[kMaxPages] = {};        // live blocks on each page
  uint32_t released = 0;                     // pages handed back (bit per page)
  size_t live = 0;
  bool listed = false;
};

SlabPool::SlabPool(size_t block_size)
    : block_size_(round_up(block_size < kMinBlock ? kMinBlock : block_size, kAlign)),
      first_offset_(round_up(sizeof(Slab), kAlign)),
      page_size_(static_cast<size_t>(sysconf(_SC_PAGESIZE))) {
  per_slab_ = (kSlabBytes - first_offset_) / block_size_;
  assert(per_slab_ > 0 && per_slab_ <= kMaxBlocks);
  // The header's page is never handed back; with pages this large or this
  // many, none are tracked.
  size_t pages = kSlabBytes / page_size_;
  if (pages >= 2 && pages <= kMaxPages && first_offset_ <= page_size_) pages_ = pages;
}

SlabPool::~SlabPool() {
  assert(live_ == 0);
  while (with_room_ != nullptr) {
    Slab* s = with_room_;
    unlink(s);
    unmap_slab(s);
  }
  if (spare_ != nullptr) unmap_slab(spare_);
}

size_t SlabPool::first_page(size_t index) const {
  return (first_offset_ + index * block_size_) / page_size_;
}

size_t SlabPool::last_page(size_t index) const {
  return (first_offset_ + (index + 1) * block_size_ - 1) / page_size_;
}

void* SlabPool::allocate() {
  if constexpr (!kMapsSlabs) {
    ++live_;
    return ::operator new(block_size_);
  }
  Slab* s = with_room_;
  if (s == nullptr) {
    if (spare_ != nullptr) {
      s = spare_;
      spare_ = nullptr;
    } else {
      s = map_slab();
    }
    link_front(s);
  }
  // The lowest free block: live blocks gather at the start of the slab, so
  // its later pages are the ones left free to hand back.
  size_t word = 0;
  while (s->free_bits[word] == 0) ++word;
  size_t index = word * 64 + static_cast<size_t>(std::countr_zero(s->free_bits[word]));
  s->free_bits[word] &= s->free_bits[word] - 1;
  if (pages_ != 0) {
    for (size_t p = first_page(index); p <= last_page(index); ++p) {
      ++s->page_live[p];
      s->released &= ~(uint32_t{1} << p);  // faulted in again when written
    }
  }
  ++s->live;
  ++live_;
  if (s->live == per_slab_) unlink(s);  // full
  return reinterpret_cast<char*>(s) + first_offset_ + index * block_size_;
}

void SlabPool::deallocate(void* block) {
  if (block == nullptr) return;
  --live_;
  if constexpr (!kMapsSlabs) {
    ::operator delete(block);
    return;
  }
  auto* s = reinterpret_cast<Slab*>(reinterpret_cast<uintptr_t>(block) & ~(kSlabBytes - 1));
  size_t index = (static_cast<size_t>(static_cast<char*>(block) - reinterpret_cast<char*>(s)) -
                  first_offset_) /
                 block_size_;
  s->free_bits[index / 64] |= uint64_t{1} << (index % 64);
  if (pages_ != 0) {
    for (size_t p = first_page(index); p <= last_page(index); ++p) --s->page_live[p];
  }
  --s->live;
  if (s->live == 0) {
    if (s->listed) unlink(s);
    if (spare_ == nullptr) {
      spare_ = s;
    } else {
      unmap_slab(s);
    }
    return;
  }
  if (!s->listed) link_front(s);  // was full
}

void SlabPool::release_spare() {
  if (spare_ == nullptr) return;
  unmap_slab(spare_);
  spare_ = nullptr;
}

size_t SlabPool::release_free_pages() {
  if (!kMapsSlabs || pages_ == 0) return 0;
  size_t released = 0;
  auto release = [&](Slab* s) {
    // Page 0 holds the header. Runs of free pages go in one call.
    size_t p = 1;
    while (p < pages_) {
      auto free_here = [&](size_t q) {
        return s->page_live[q] == 0 && (s->released & (uint32_t{1} << q)) == 0;
      };
      if (!free_here(p)) {
        ++p;
        continue;
      }
      size_t end = p;
      while (end < pages_ && free_here(end)) ++end;
      char* start = reinterpret_cast<char*>(s) + p * page_size_;
      if (madvise(start, (end - p) * page_size_, MADV_DONTNEED) == 0) {
        for (size_t q = p; q < end; ++q) s->released |= uint32_t{1} << q;
        released += end - p;
      }
      p = end;
    }
  };
  // Full slabs have no free page; every other slab is listed or the spare.
  for (Slab* s = with_room_; s != nullptr; s = s->next) release(s);
  if (spare_ != nullptr) release(spare_);
  return released;
}

SlabPool::Slab* SlabPool::map_slab() {
  // Map twice the size and keep the aligned half.
  size_t len = 2 * kSlabBytes;
  void* p = mmap(nullptr, len, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  if (p == MAP_FAILED) throw std::bad_alloc();
  auto start = reinterpret_cast<uintptr_t>(p);
  uintptr_t aligned = (start + kSlabBytes - 1) & ~(kSlabBytes - 1);
  if (aligned > start) munmap(p, aligned - start);
  uintptr_t end = start + len, aligned_end = aligned + kSlabBytes;
  if (end > aligned_end) munmap(reinterpret_cast<void*>(aligned_end), end - aligned_end);
  auto* s = new (reinterpret_cast<void*>(aligned)) Slab();
  for (size_t i = 0; i < per_slab_; ++i) s->free_bits[i / 64] |= uint64_t{1} << (i % 64);
  // Fresh pages are not resident until written: as good as released.
  for (size_t q = 1; q < pages_; ++q) s->released |= uint32_t{1} << q;
  ++mapped_;
  return s;
}

void SlabPool::unmap_slab(Slab* slab) {
  slab->~Slab();
  munmap(slab, kSlabBytes);
  --mapped_;
}

void SlabPool::link_front(Slab* slab) {
  slab->prev = nullptr;
  slab->next = with_room_;
  if (with_room_ != nullptr) with_room_->prev = slab;
  with_room_ = slab;
  slab->listed = true;
}

void SlabPool::unlink(Slab* slab) {
  if (slab->prev != nullptr) slab->prev->next = slab->next;
  if (slab->next != nullptr) slab->next->prev = slab->prev;
  if (with_room_ == slab) with_room_ = slab->next;
  slab->prev = slab->next = nullptr;
  slab->listed = false;
}

}  // namespace memshard::proxy
