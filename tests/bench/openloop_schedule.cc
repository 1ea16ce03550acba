#include "openloop_schedule.h"

#include <cmath>

namespace memshard::bench {

namespace {
uint64_t splitmix(uint64_t x) {
  x += 0x9e3779b97f4a7c15ULL;
  x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ULL;
  x = (x ^ (x >> 27)) * 0x94d049bb133111ebULL;
  return x ^ (x >> 31);
}
}  // namespace

double busy_rate_for(double total_rate, int idle_conns, double idle_min_s, double idle_max_s) {
  double mean = (idle_min_s + idle_max_s) / 2;
  double idle_rate = idle_conns > 0 && mean > 0 ? idle_conns / mean : 0;
  return total_rate - idle_rate;
}

Schedule::Schedule(const ScheduleConfig& c)
    : c_(c), rng_(splitmix(c.seed * 0x100000001b3ULL + static_cast<uint64_t>(c.thread_index))) {
  if (c_.busy_rate > 0 && c_.busy_conns > 0)
    period_ns_ = 1e9L / static_cast<long double>(c_.busy_rate);
  for (int i = 0; i < c_.idle_conns; ++i) {
    // The first request a uniform share of an interval in.
    int64_t interval = draw_interval();
    auto first = static_cast<int64_t>(static_cast<double>(next_random() >> 11) * 0x1.0p-53 *
                                      static_cast<double>(interval));
    idle_.push({c_.start_ns + first, c_.busy_conns + i});
  }
  for (int i = 0; i < c_.burst_conns; ++i)
    idle_.push({c_.burst_at_ns, c_.busy_conns + c_.idle_conns + i});
}

uint64_t Schedule::next_random() {
  rng_ = splitmix(rng_);
  return rng_;
}

int64_t Schedule::draw_interval() {
  int64_t span = c_.idle_max_ns - c_.idle_min_ns;
  if (span <= 0) return c_.idle_min_ns;
  return c_.idle_min_ns + static_cast<int64_t>(next_random() % static_cast<uint64_t>(span + 1));
}

int64_t Schedule::busy_at(uint64_t k) const {
  long double g = static_cast<long double>(k) * c_.threads + c_.thread_index;
  return c_.start_ns + static_cast<int64_t>(std::floor(g * period_ns_));
}

int64_t Schedule::next_at() const {
  int64_t best = INT64_MAX;
  if (period_ns_ > 0) {
    int64_t b = busy_at(busy_k_);
    if (b < c_.end_ns) best = b;
  }
  if (!idle_.empty() && idle_.top().at < c_.end_ns && idle_.top().at < best) best = idle_.top().at;
  return best;
}

Schedule::Due Schedule::pop() {
  int64_t b = period_ns_ > 0 ? busy_at(busy_k_) : INT64_MAX;
  if (b >= c_.end_ns) b = INT64_MAX;
  if (!idle_.empty() && idle_.top().at < c_.end_ns && idle_.top().at < b) {
    IdleNext n = idle_.top();
    idle_.pop();
    bool burst = n.conn >= c_.busy_conns + c_.idle_conns;
    if (!burst) idle_.push({n.at + draw_interval(), n.conn});
    return {n.at, n.conn, true, burst};
  }
  Due d{b, static_cast<int>(busy_k_ % static_cast<uint64_t>(c_.busy_conns)), false, false};
  ++busy_k_;
  return d;
}

}  // namespace memshard::bench
