#include "proxy/slab_pool.h"

#include <sys/mman.h>

#include <cassert>
#include <cstdint>
#include <new>

namespace memshard::proxy {

// A slab starts with this header; its blocks follow. Slabs are aligned to
// their size, so a block finds its slab by masking its address.
struct SlabPool::Slab {
  Slab* prev = nullptr;  // in with_room_
  Slab* next = nullptr;
  void* free_list = nullptr;  // freed blocks, linked through their first word
  size_t untouched = 0;       // blocks never handed out yet, from the end of the slab
  size_t live = 0;
  bool listed = false;
};

namespace {

constexpr size_t kAlign = alignof(std::max_align_t);

size_t round_up(size_t n, size_t to) {
  return (n + to - 1) / to * to;
}

}  // namespace

SlabPool::SlabPool(size_t block_size)
    : block_size_(round_up(block_size < sizeof(void*) ? sizeof(void*) : block_size, kAlign)),
      first_offset_(round_up(sizeof(Slab), kAlign)) {
  per_slab_ = (kSlabBytes - first_offset_) / block_size_;
  assert(per_slab_ > 0);
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
  void* block;
  if (s->free_list != nullptr) {
    block = s->free_list;
    s->free_list = *static_cast<void**>(block);
  } else {
    // Blocks are handed out in address order the first time, so a slab's
    // pages are touched only as they are needed.
    block = reinterpret_cast<char*>(s) + first_offset_ + (per_slab_ - s->untouched) * block_size_;
    --s->untouched;
  }
  ++s->live;
  ++live_;
  if (s->free_list == nullptr && s->untouched == 0) unlink(s);  // full
  return block;
}

void SlabPool::deallocate(void* block) {
  if (block == nullptr) return;
  --live_;
  if constexpr (!kMapsSlabs) {
    ::operator delete(block);
    return;
  }
  auto* s = reinterpret_cast<Slab*>(reinterpret_cast<uintptr_t>(block) & ~(kSlabBytes - 1));
  *static_cast<void**>(block) = s->free_list;
  s->free_list = block;
  --s->live;
  if (s->live == 0) {
    if (s->listed) unlink(s);
    if (spare_ == nullptr) {
      // Reset, so it is handed out in address order again.
      s->free_list = nullptr;
      s->untouched = per_slab_;
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
  s->untouched = per_slab_;
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
