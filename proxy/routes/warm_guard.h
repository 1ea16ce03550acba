// What keeps reload warm-up from bringing a deleted or overwritten value
// back. After a reload a read that misses a moved key on its new server
// finds the value on the old one and copies it over (add). Should a
// delete of that key through memshard land on the new server between the
// old server's answer and the copy, the copy would resurrect the value
// for good, after the client was told DELETED. memcached has no
// conditional add that would refuse it, so the proxy orders the two
// itself, with a table shared by every worker (and the background
// migration) of one pool:
//
//   a write of a moved key     begin(key) before it is sent, end(key) once
//                              every copy (new server, old copies deleted)
//                              answered; poison(key) when an old copy
//                              could not be deleted;
//   a fallback read            sample(key) when it sees the miss: no
//                              fallback at all for a poisoned key, no copy
//                              while a write is in flight; after the copy
//                              is stored, changed(key, sample) says that a
//                              write began meanwhile, and the copy is
//                              deleted again.
//
// Why this suffices: a write that began after the sample bumps `version`
// before its delete reaches the new server; if that delete was applied
// before the copy, the copy's answer comes after, so the check that
// follows it sees the bump. A write that ended before the sample had its
// old copy deleted first, so the fallback read found nothing to copy.
//
// Keys share slots by hash: a collision only costs a copy (a miss later),
// never a stale value. Poisoned slots stay so until the window ends.
#pragma once

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <string_view>

namespace memshard::proxy {

class WarmGuard {
 public:
  struct Sample {
    uint32_t version = 0;
    bool writing = false;   // a write of a key of this slot is in flight
    bool poisoned = false;  // an old copy may hold a stale value: no fallback
  };

  explicit WarmGuard(size_t slots = kDefaultSlots);

  void begin(std::string_view key);
  void end(std::string_view key);
  void poison(std::string_view key);
  Sample sample(std::string_view key) const;
  bool changed(std::string_view key, const Sample& before) const;

  static constexpr size_t kDefaultSlots = 16384;

 private:
  struct Slot {
    std::atomic<uint32_t> version{0};
    std::atomic<uint32_t> writing{0};
    std::atomic<bool> poisoned{false};
  };
  Slot& slot(std::string_view key) const;

  size_t mask_;
  std::unique_ptr<Slot[]> slots_;
};

}  // namespace memshard::proxy
