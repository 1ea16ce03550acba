// Fixed-size blocks for objects that live as long as a client connection,
// carved from slabs mapped straight from the kernel.
//
// Why not malloc: connection objects are freed when their connection closes
// or parks (see parked_clients.h), but malloc keeps freed memory in its heap
// (memshard tells it to: main.cc), and libevent's per-descriptor records,
// allocated between them and kept for good, would pin the pages anyway. A
// slab holds only these blocks: once every block of a slab is free the slab
// goes back to the kernel, and release_free_pages() hands back the pages
// inside slabs whose blocks are all free, so a few connections still active
// do not keep the memory of the thousands parked around them.
#pragma once

#include <cstddef>
#include <cstdint>

#include "proxy/support/address_sanitizer.h"

namespace memshard::proxy {

class SlabPool {
 public:
  // Under AddressSanitizer the blocks come from operator new, so that a use
  // after free of a connection is still caught.
  static constexpr bool kMapsSlabs = !kAddressSanitizer;
  static constexpr size_t kSlabBytes = 64 * 1024;
  // Blocks are at least this big, which bounds the slab header.
  static constexpr size_t kMinBlock = 64;

  explicit SlabPool(size_t block_size);
  ~SlabPool();  // unmaps every slab: every block must have been freed
  SlabPool(const SlabPool&) = delete;
  SlabPool& operator=(const SlabPool&) = delete;

  // Throws std::bad_alloc when the kernel has no memory to map.
  void* allocate();
  void deallocate(void* block);
  // Unmaps the spare slab, if any (after many blocks were freed at once).
  void release_spare();
  // Gives the kernel back every page, inside the slabs still mapped, that
  // holds no live block (madvise MADV_DONTNEED: a block later allocated
  // there faults in a zeroed page). Returns the pages given back now.
  size_t release_free_pages();

  size_t block_size() const { return block_size_; }
  size_t blocks_per_slab() const { return per_slab_; }
  size_t live_blocks() const { return live_; }
  size_t mapped_slabs() const { return mapped_; }

 private:
  struct Slab;
  Slab* map_slab();
  void unmap_slab(Slab* slab);
  void link_front(Slab* slab);
  void unlink(Slab* slab);
  // The pages block `index` of a slab lies on, first and last.
  size_t first_page(size_t index) const;
  size_t last_page(size_t index) const;

  size_t block_size_;
  size_t per_slab_;
  size_t first_offset_;  // of the first block, past the slab's header
  size_t page_size_;
  size_t pages_ = 0;           // per slab; 0 when pages are not tracked
  Slab* with_room_ = nullptr;  // slabs that have a free block, most recent first
  Slab* spare_ = nullptr;      // one empty slab kept, so that a connection
                               // opening and closing does not map and unmap
  size_t live_ = 0;
  size_t mapped_ = 0;
};

}  // namespace memshard::proxy
