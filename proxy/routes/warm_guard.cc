#include "proxy/routes/warm_guard.h"

#include <bit>
#include <functional>

namespace memshard::proxy {

WarmGuard::WarmGuard(size_t slots)
    : mask_(std::bit_ceil(slots < 1 ? size_t{1} : slots) - 1),
      slots_(std::make_unique<Slot[]>(mask_ + 1)) {}

WarmGuard::Slot& WarmGuard::slot(std::string_view key) const {
  return slots_[std::hash<std::string_view>{}(key)&mask_];
}

// seq_cst throughout: the argument in the header leans on a write's bump
// being ordered before what it sends, and a read's check after what it
// received; these are rare operations (writes of moved keys in a window).
void WarmGuard::begin(std::string_view key) {
  Slot& s = slot(key);
  s.writing.fetch_add(1);
  s.version.fetch_add(1);
}

void WarmGuard::end(std::string_view key) {
  slot(key).writing.fetch_sub(1);
}

void WarmGuard::poison(std::string_view key) {
  slot(key).poisoned.store(true);
}

WarmGuard::Sample WarmGuard::sample(std::string_view key) const {
  const Slot& s = slot(key);
  Sample out;
  // version before writing, the reverse of begin(): a write that bumped
  // the version read here had already raised `writing`, and one that had
  // not bumped it yet is seen by changed().
  out.version = s.version.load();
  out.writing = s.writing.load() != 0;
  out.poisoned = s.poisoned.load();
  return out;
}

bool WarmGuard::changed(std::string_view key, const Sample& before) const {
  return slot(key).version.load() != before.version;
}

}  // namespace memshard::proxy
