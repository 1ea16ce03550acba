// memshard-openloop: the timetable one thread's requests leave on. Pure:
// times are computed, never waited for, so the unit tests read it without a
// clock.
//
// Busy connections: the whole generator sends `busy_rate` requests a second,
// request g (0, 1, 2, ...) at start + g / busy_rate. Thread j of T takes
// g = j, j + T, j + 2T, ... and hands its own k-th request to its busy
// connection k mod (its busy connections): every connection has a fixed
// period, and the threads' requests interleave evenly.
//
// Idle connections: each sends one request, then waits an interval drawn
// uniformly from [idle_min, idle_max] (a fixed seed), and sends again; its
// first request comes a uniform fraction of an interval after start, so they
// do not all send at once.
//
// Burst connections: each sends one request, all of them at burst_at (to
// read what waking many parked connections at once costs).
//
// A request's time is when it is due, whether or not its connection is free
// then: the generator measures its latency from that time (wrk2's correction
// of coordinated omission).
#pragma once

#include <cstdint>
#include <queue>
#include <vector>

namespace memshard::bench {

struct ScheduleConfig {
  double busy_rate = 0;  // requests/s of every thread's busy connections together
  int threads = 1;
  int thread_index = 0;
  int busy_conns = 0;  // this thread's
  int idle_conns = 0;  // this thread's
  int burst_conns = 0;  // this thread's
  int64_t burst_at_ns = 0;
  int64_t idle_min_ns = 1'000'000'000;
  int64_t idle_max_ns = 3'000'000'000;
  uint64_t seed = 1;
  int64_t start_ns = 0;
  int64_t end_ns = 0;  // nothing is due at or after this
};

// The busy rate left once the idle connections' own requests are counted:
// `total_rate` less idle_conns / mean interval; negative when they alone
// exceed it.
double busy_rate_for(double total_rate, int idle_conns, double idle_min_s, double idle_max_s);

class Schedule {
 public:
  struct Due {
    int64_t at;  // when it is due (ns, the clock start_ns is on)
    int conn;    // busy connections 0 .. busy_conns-1, then idle ones, then burst ones
    bool idle;   // an idle or a burst connection's
    bool burst;
  };

  explicit Schedule(const ScheduleConfig& c);

  // When the next request is due; INT64_MAX when none is left before end_ns.
  int64_t next_at() const;
  // The next request in time order (busy before idle at the same moment).
  // Only when next_at() != INT64_MAX.
  Due pop();

  // The time of this thread's k-th busy request.
  int64_t busy_at(uint64_t k) const;
  uint64_t busy_popped() const { return busy_k_; }

 private:
  struct IdleNext {
    int64_t at;
    int conn;
    bool operator>(const IdleNext& o) const { return at != o.at ? at > o.at : conn > o.conn; }
  };
  int64_t draw_interval();
  uint64_t next_random();

  ScheduleConfig c_;
  long double period_ns_ = 0;  // between two requests of the whole generator
  uint64_t busy_k_ = 0;
  uint64_t rng_;
  std::priority_queue<IdleNext, std::vector<IdleNext>, std::greater<IdleNext>> idle_;
};

}  // namespace memshard::bench
