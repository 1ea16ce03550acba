#include "proxy/support/hot_key_tracker.h"

#include <algorithm>
#include <map>

#include "proxy/support/log.h"

namespace memshard::proxy {

namespace {

constexpr uint64_t kLogEveryUsec = 60'000'000;

// At most one line a minute per key, whichever worker saw it: the first
// worker to log a key speaks for all.
bool may_log(const std::string& pool, const std::string& key, uint64_t now_usec) {
  static std::mutex mu;
  static std::map<std::string, uint64_t> last;
  std::lock_guard<std::mutex> lock(mu);
  if (last.size() > 4096)
    std::erase_if(last, [&](const auto& e) { return now_usec - e.second >= kLogEveryUsec; });
  std::string id = pool + '\0' + key;
  auto [it, fresh] = last.try_emplace(id, now_usec);
  if (!fresh && now_usec - it->second < kLogEveryUsec) return false;
  it->second = now_usec;
  return true;
}

// Bytes a log line can show as they are.
std::string printable(std::string_view key) {
  std::string out;
  for (unsigned char c : key) {
    if (c > 0x20 && c < 0x7f && c != '\\') {
      out.push_back(static_cast<char>(c));
    } else {
      static const char* hex = "0123456789abcdef";
      out.append("\\x").push_back(hex[c >> 4]);
      out.push_back(hex[c & 15]);
    }
  }
  return out;
}

}  // namespace

void HotKeyTracker::configure(std::string_view pool, double share) {
  std::lock_guard<std::mutex> lock(mu_);
  pool_.assign(pool);
  share_ = share;
}

bool HotKeyTracker::is_hot(std::string_view key) const {
  return std::find(hot_.begin(), hot_.end(), key) != hot_.end();
}

void HotKeyTracker::tick(uint64_t now_usec) {
  const bool first = next_tick_usec_ == 0;
  next_tick_usec_ = now_usec + kTickUsec;
  if (first) return;
  HotKeySummary s = summary();
  double share = threshold();
  hot_.clear();
  if (s.total >= kMinSamples) {
    for (const HotKeyReport& r : merge_hot_keys({s}, share, kCapacity)) {
      hot_.push_back(r.key);
      if (may_log(pool_, r.key, now_usec)) {
        log_write(LogLevel::notice,
                  "hot key in pool %s: %s takes %.1f%% (+/- %.1f%%) of this worker's requests, "
                  "server %s",
                  pool_.c_str(), printable(r.key).c_str(), r.share * 100, r.error * 100,
                  r.server.c_str());
      }
    }
  }
  if (++ticks_ % kHalveEvery == 0) {
    std::lock_guard<std::mutex> lock(mu_);
    sketch_.halve();
  }
}

HotKeySummary HotKeyTracker::summary() const {
  std::lock_guard<std::mutex> lock(mu_);
  return sketch_.summary();
}

double HotKeyTracker::threshold() const {
  std::lock_guard<std::mutex> lock(mu_);
  return share_;
}

}  // namespace memshard::proxy
