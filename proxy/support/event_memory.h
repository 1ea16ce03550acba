// libevent's memory, served from a small cache per thread of the blocks
// it freed last.
//
// Why: an evbuffer gets a chain (1 KiB and up) when it gains its first
// byte and frees it when it is drained, so every request allocates and
// frees two or three: a client's input, a server's reply copied into the
// client's slot, the client's output. A worker's loop iteration allocates
// dozens before it frees any, past the 7 blocks glibc's per-thread cache
// keeps of a size, and glibc's slower path then cost 11% of the proxy's
// instructions on gets (callgrind, scripts/bench's workload (a)).
//
// Only the chains' sizes are cached: powers of two from 1 KiB to 16 KiB,
// exactly as libevent asks for them. Every block carries a 16-byte header
// naming its class, since libevent frees without saying a size. A thread
// keeps at most 128 blocks or 128 KiB of each size, whichever is less
// (640 KiB in all); a block freed on another thread than its own goes to
// that thread's cache, which is as good. Any other size goes straight to
// malloc.
#pragma once

#include <cstddef>

namespace memshard::proxy::event_memory {

// Makes these libevent's allocator. Call it before anything else uses
// libevent (first thing in main): a block libevent allocated before would
// be freed here without its header. Under AddressSanitizer it does
// nothing, so that a use after free of a buffer's memory is still caught,
// and returns false.
bool install();

// Gives this thread's cached blocks back to malloc: when its clients have
// gone idle, so that the cache (up to 640 KiB a thread) does not hold
// memory the idle ones never use again.
void release_cached();

// What install() hands libevent; public for the unit tests.
void* allocate(size_t bytes);
void* reallocate(void* block, size_t bytes);
void release(void* block);

// The largest size cached: a value's chain can be larger than this one.
inline constexpr size_t kLargestClass = 16384;

// The blocks of `bytes` this thread holds ready, and the most it keeps of
// them (0 for a size not cached).
size_t cached_blocks(size_t bytes);
size_t cache_limit(size_t bytes);

}  // namespace memshard::proxy::event_memory
