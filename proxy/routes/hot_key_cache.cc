#include "proxy/routes/hot_key_cache.h"

#include <functional>
#include <map>

namespace memshard::proxy {

std::shared_ptr<HotKeyCache> HotKeyCache::for_pool(const std::string& pool, size_t max_bytes,
                                                   uint64_t ttl_usec) {
  static std::mutex mu;
  static std::map<std::string, std::shared_ptr<HotKeyCache>> caches;
  std::lock_guard<std::mutex> lock(mu);
  std::shared_ptr<HotKeyCache>& c = caches[pool];
  if (!c) {
    c = std::make_shared<HotKeyCache>(max_bytes, ttl_usec);
  } else {
    c->set_limits(max_bytes, ttl_usec);
  }
  return c;
}

void HotKeyCache::set_limits(size_t max_bytes, uint64_t ttl_usec) {
  std::lock_guard<std::mutex> lock(mu_);
  max_bytes_ = max_bytes;
  ttl_usec_ = ttl_usec;
  // Entries filled under the old limits must not outstay the new ones.
  while (!entries_.empty()) erase(entries_.begin());
  for (uint64_t& e : epochs_) ++e;
}

size_t HotKeyCache::slot_of(std::string_view key) {
  return std::hash<std::string_view>{}(key) % kSlots;
}

void HotKeyCache::erase(std::unordered_map<std::string, Entry>::iterator it) {
  bytes_ -= cost(it->first, it->second.block);
  present_[slot_of(it->first)].fetch_sub(1, std::memory_order_relaxed);
  entries_.erase(it);
}

bool HotKeyCache::lookup(std::string_view key, uint64_t now_usec, std::string& out, bool cas) {
  if (present_[slot_of(key)].load(std::memory_order_relaxed) == 0) return false;
  std::lock_guard<std::mutex> lock(mu_);
  auto it = entries_.find(std::string(key));
  if (it == entries_.end()) return false;
  if (now_usec - it->second.filled_usec >= ttl_usec_) {
    erase(it);
    return false;
  }
  const Entry& e = it->second;
  if (cas && e.cas_at == 0) return false;
  if (cas || e.cas_at == 0) {
    out.append(e.block);
  } else {
    std::string_view b = e.block;
    out.append(b.substr(0, e.cas_at)).append(b.substr(e.line_end));
  }
  return true;
}

uint64_t HotKeyCache::epoch(std::string_view key) {
  std::lock_guard<std::mutex> lock(mu_);
  return epochs_[slot_of(key)];
}

void HotKeyCache::fill(std::string_view key, std::string_view block, uint64_t epoch,
                       uint64_t now_usec) {
  const size_t need = cost(key, block);
  std::lock_guard<std::mutex> lock(mu_);
  if (epochs_[slot_of(key)] != epoch || need > max_bytes_) return;
  if (auto it = entries_.find(std::string(key)); it != entries_.end()) erase(it);
  if (bytes_ + need > max_bytes_) {
    // Only expired entries make room: the keys in are as hot as this one.
    for (auto it = entries_.begin(); it != entries_.end();) {
      auto next = std::next(it);
      if (now_usec - it->second.filled_usec >= ttl_usec_) erase(it);
      it = next;
    }
    if (bytes_ + need > max_bytes_) return;
  }
  // "VALUE <key> <flags> <bytes>[ <cas>]\r\n": a fifth token is the CAS.
  Entry e{std::string(block), now_usec};
  e.line_end = block.find("\r\n");
  if (e.line_end == std::string_view::npos) return;
  size_t space = 0;
  for (int token = 0; token < 4 && space != std::string_view::npos; ++token)
    space = block.find(' ', space + 1);
  if (space != std::string_view::npos && space < e.line_end) e.cas_at = space;
  entries_.emplace(std::string(key), std::move(e));
  bytes_ += need;
  present_[slot_of(key)].fetch_add(1, std::memory_order_relaxed);
}

void HotKeyCache::invalidate(std::string_view key) {
  const size_t slot = slot_of(key);
  std::lock_guard<std::mutex> lock(mu_);
  ++epochs_[slot];
  if (present_[slot].load(std::memory_order_relaxed) == 0) return;
  if (auto it = entries_.find(std::string(key)); it != entries_.end()) erase(it);
}

void HotKeyCache::clear() {
  std::lock_guard<std::mutex> lock(mu_);
  while (!entries_.empty()) erase(entries_.begin());
  for (uint64_t& e : epochs_) ++e;
}

size_t HotKeyCache::bytes() const {
  std::lock_guard<std::mutex> lock(mu_);
  return bytes_;
}

size_t HotKeyCache::entries() const {
  std::lock_guard<std::mutex> lock(mu_);
  return entries_.size();
}

}  // namespace memshard::proxy
