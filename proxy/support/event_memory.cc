#include "proxy/support/event_memory.h"

#include <event2/event.h>

#include <array>
#include <cstdint>
#include <cstdlib>
#include <cstring>

#include "proxy/support/address_sanitizer.h"

namespace memshard::proxy::event_memory {

namespace {

// The classes: the sizes libevent asks for its chains, powers of two from
// 1 KiB. Only those sizes exactly are cached. Anything else (an event, an
// evbuffer, the per-descriptor tables) is allocated as asked: rounded up
// to a class, the records that parked connections keep would grow.
constexpr size_t kSmallestClass = 1024;
constexpr size_t kClasses = 5;
static_assert(kSmallestClass << (kClasses - 1) == kLargestClass);

// Before every block, keeping the payload 16-byte aligned as malloc's is.
struct alignas(16) Header {
  size_t klass;  // kClasses: none, the payload is `bytes` long
  size_t bytes;  // what the payload holds room for
};
static_assert(sizeof(Header) == 16);

constexpr size_t kMostBlocks = 128;
constexpr size_t kMostBytes = 128 * 1024;

constexpr size_t limit_of(size_t klass) {
  const size_t blocks = kMostBytes / (kSmallestClass << klass);
  return blocks < kMostBlocks ? blocks : kMostBlocks;
}

size_t class_of(size_t bytes) {
  for (size_t k = 0; k < kClasses; ++k) {
    if (bytes == kSmallestClass << k) return k;
  }
  return kClasses;
}

struct FreeBlock {
  FreeBlock* next;
};

// A thread's spare blocks, given back to malloc when the thread ends. What
// is freed after that (the main thread's event bases, freed by static
// destructors) goes straight to malloc too.
struct Cache {
  std::array<FreeBlock*, kClasses> head{};
  std::array<size_t, kClasses> count{};
  bool closed = false;
  ~Cache() {
    closed = true;
    empty();
  }
  void empty() {
    for (size_t k = 0; k < kClasses; ++k) {
      while (head[k] != nullptr) {
        FreeBlock* b = head[k];
        head[k] = b->next;
        std::free(reinterpret_cast<Header*>(b) - 1);
      }
      count[k] = 0;
    }
  }
};

thread_local Cache cache;

void* payload(Header* h) {
  return h + 1;
}

Header* header(void* block) {
  return static_cast<Header*>(block) - 1;
}

}  // namespace

void* allocate(size_t bytes) {
  const size_t k = class_of(bytes);
  if (k < kClasses && cache.head[k] != nullptr) {
    FreeBlock* b = cache.head[k];
    cache.head[k] = b->next;
    --cache.count[k];
    return b;
  }
  auto* h = static_cast<Header*>(std::malloc(sizeof(Header) + bytes));
  if (h == nullptr) return nullptr;
  h->klass = k;
  h->bytes = bytes;
  return payload(h);
}

void release(void* block) {
  if (block == nullptr) return;
  Header* h = header(block);
  const size_t k = h->klass;
  if (k < kClasses && cache.count[k] < limit_of(k) && !cache.closed) {
    auto* b = static_cast<FreeBlock*>(block);
    b->next = cache.head[k];
    cache.head[k] = b;
    ++cache.count[k];
    return;
  }
  std::free(h);
}

void* reallocate(void* block, size_t bytes) {
  if (block == nullptr) return allocate(bytes);
  const size_t had = header(block)->bytes;
  if (bytes <= had) return block;
  void* grown = allocate(bytes);
  if (grown == nullptr) return nullptr;
  std::memcpy(grown, block, had);
  release(block);
  return grown;
}

void release_cached() {
  cache.empty();
}

size_t cached_blocks(size_t bytes) {
  const size_t k = class_of(bytes);
  return k < kClasses ? cache.count[k] : 0;
}

size_t cache_limit(size_t bytes) {
  const size_t k = class_of(bytes);
  return k < kClasses ? limit_of(k) : 0;
}

bool install() {
  if constexpr (kAddressSanitizer) return false;
  event_set_mem_functions(allocate, reallocate, release);
  return true;
}

}  // namespace memshard::proxy::event_memory
