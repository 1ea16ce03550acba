#include "proxy/runtime/worker_governor.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <numeric>

namespace memshard::proxy {

namespace {
constexpr size_t kRecentTicks = 8;

// `what` takes two or three %f conversions.
std::string describe(const char* what, double a, double b, double c = 0) {
  char buf[256];
  std::snprintf(buf, sizeof buf, what, a, b, c);
  return buf;
}
}  // namespace

WorkerGovernor::WorkerGovernor(Settings settings) : s_(settings) {
  if (s_.max_workers == 0) s_.max_workers = 1;
  backoff_usec_ = s_.backoff_usec;
  recheck_interval_usec_ = s_.recheck_usec;
}

double WorkerGovernor::window_rps(size_t ticks, size_t skip_newest) const {
  if (recent_.size() < skip_newest) return 0;
  ticks = std::min(ticks, recent_.size() - skip_newest);
  if (ticks == 0) return 0;
  const auto end = recent_.end() - static_cast<std::ptrdiff_t>(skip_newest);
  return std::accumulate(end - static_cast<std::ptrdiff_t>(ticks), end, 0.0,
                         [](double sum, const Tick& t) { return sum + t.rps; }) /
         static_cast<double>(ticks);
}

bool WorkerGovernor::steady_over(size_t ticks) const {
  if (ticks < 2 || recent_.size() < ticks) return false;
  const size_t half = ticks / 2;
  const double newer = window_rps(half);
  const double older = window_rps(half, half);
  if (std::abs(newer - older) > s_.steady_within * older) return false;
  const double mean = window_rps(ticks);
  return std::none_of(recent_.end() - static_cast<std::ptrdiff_t>(ticks), recent_.end(),
                      [&](const Tick& t) { return t.rps < mean * s_.lull_share; });
}

bool WorkerGovernor::load_steady() const {
  return steady_over(kRecentTicks);
}

bool WorkerGovernor::baseline_steady() const {
  // Nor a tick where the workers were not saturated: a load's first tick
  // is partial (it began within the tick), and such a tick passed the
  // halves' test among faster ones and pulled the baseline down (23,037
  // requests/s at 51% busy among 42-50k at 95%: by 6%, and a trial against
  // it reads that much high). The baseline is what the workers give
  // saturated.
  const auto ticks =
      std::clamp<size_t>(static_cast<size_t>(std::max(s_.baseline_ticks, 0)), 2, kRecentTicks);
  return steady_over(ticks) &&
         std::all_of(recent_.end() - static_cast<std::ptrdiff_t>(ticks), recent_.end(),
                     [](const Tick& t) { return t.saturated; });
}

void WorkerGovernor::change(size_t to, uint64_t now_usec, double baseline_rps, std::string why,
                            bool alternate) {
  (void)now_usec;
  from_ = active_;
  tried_ = to;
  active_ = to;
  baseline_rps_ = baseline_rps;
  segment_rps_.assign(1, baseline_rps);
  segments_ = alternate ? s_.trial_segments : 1;
  reset_segment_sums();
  tried_ticks_ = 0;
  tried_busy_sum_ = 0;
  tried_requests_ = 0;
  tried_newcomer_requests_ = 0;
  trial_connections_ = connections_;
  state_ = State::settling;
  state_ticks_ = 0;
  saturated_ticks_ = 0;
  light_ticks_ = 0;
  // The ticks before were measured at the old count.
  recent_.clear();
  reason_ = std::move(why);
  ++decisions_;
}

void WorkerGovernor::reset_segment_sums() {
  segment_rps_sum_ = 0;
  lull_ticks_ = 0;
  last_trial_tick_ = {};
}

void WorkerGovernor::switch_count() {
  active_ = active_ == tried_ ? from_ : tried_;
  reset_segment_sums();
  state_ = State::settling;
  state_ticks_ = 0;
  char buf[160];
  std::snprintf(buf, sizeof buf,
                "trial, alternating: %zu workers for a second (%zu of %d), after %.0f requests/s "
                "at %zu",
                active_, segment_rps_.size(), segments_, segment_rps_.back(),
                active_ == tried_ ? from_ : tried_);
  reason_ = buf;
}

void WorkerGovernor::no_growth_for_a_while(uint64_t now_usec, double judged_at_rps,
                                           bool placement) {
  failed_at_rps_ = judged_at_rps;
  failed_for_placement_ = placement;
  load_changed_since_usec_ = 0;
  // The most seen since the change: at the verdict the clients may be
  // closing already (a run's end), and counted then, the next run's same
  // number looked like more clients.
  judged_with_connections_ = std::max(connections_, trial_connections_);
  grow_after_usec_ = now_usec + backoff_usec_;
  backoff_usec_ = std::min(backoff_usec_ * 2, s_.max_backoff_usec);
}

bool WorkerGovernor::load_changed_since_failure(uint64_t now_usec) {
  // Clients whose connections could not move keep them where they are
  // however fast the machine serves them: more of them (another client
  // thread, perhaps) is the change that counts. (Read as a change of load,
  // a machine slowing down by a quarter bought a trial at two workers that
  // was bound to fail.) Fewer is not: those are the same clients leaving,
  // and a saturated tick as they close bought a trial of nothing.
  if (failed_for_placement_)
    return static_cast<double>(connections_) >
           static_cast<double>(judged_with_connections_) * (1 + s_.load_change);
  const double now = window_rps(kRecentTicks), then = failed_at_rps_;
  if (then <= 0 || (now <= then * (1 + s_.load_change) && now >= then * (1 - s_.load_change))) {
    load_changed_since_usec_ = 0;
    return false;
  }
  if (load_changed_since_usec_ == 0) load_changed_since_usec_ = now_usec;
  return now_usec - load_changed_since_usec_ >= s_.load_change_hold_usec;
}

void WorkerGovernor::forget_failed_growth() {
  failed_for_placement_ = false;
  alternate_only_ = false;
  grow_after_usec_ = 0;
  backoff_usec_ = s_.backoff_usec;
  judged_with_connections_ = 0;
  load_changed_since_usec_ = 0;
}

void WorkerGovernor::keep_growth(uint64_t now_usec) {
  forget_failed_growth();
  recheck_interval_usec_ = s_.recheck_usec;
  recheck_at_usec_ = now_usec + recheck_interval_usec_;
}

double WorkerGovernor::tried_over_other(double& error) const {
  std::vector<double> ratios;
  for (size_t k = 1; k + 1 < segment_rps_.size(); k += 2) {
    const double other = (segment_rps_[k - 1] + segment_rps_[k + 1]) / 2;
    if (other > 0) ratios.push_back(segment_rps_[k] / other);
  }
  error = 0;
  if (ratios.empty()) return 1;
  const auto n = static_cast<double>(ratios.size());
  const double mean = std::accumulate(ratios.begin(), ratios.end(), 0.0) / n;
  if (ratios.size() > 1) {
    double squares = 0;
    for (double r : ratios) squares += (r - mean) * (r - mean);
    error = std::sqrt(squares / (n - 1) / n);
  }
  return mean;
}

double WorkerGovernor::tried_newcomer_share() const {
  return tried_requests_ == 0
             ? 0
             : static_cast<double>(tried_newcomer_requests_) / static_cast<double>(tried_requests_);
}

double WorkerGovernor::segments_mean(size_t first) const {
  double sum = 0;
  size_t n = 0;
  for (size_t k = first; k < segment_rps_.size(); k += 2, ++n) sum += segment_rps_[k];
  return n == 0 ? 0 : sum / static_cast<double>(n);
}

void WorkerGovernor::end_trial_back(std::string why) {
  ++decisions_;
  rechecking_ = false;
  state_ = State::steady;
  state_ticks_ = 0;
  active_ = from_;
  recent_.clear();
  reason_ = std::move(why);
}

void WorkerGovernor::count_trial_tick(const TrialTick& t, int sign) {
  segment_rps_sum_ += sign * t.rps;
  if (!t.at_tried) return;
  tried_ticks_ += sign;
  tried_busy_sum_ += sign * t.busy;
  tried_requests_ = sign > 0 ? tried_requests_ + t.requests : tried_requests_ - t.requests;
  tried_newcomer_requests_ = sign > 0 ? tried_newcomer_requests_ + t.newcomer_requests
                                      : tried_newcomer_requests_ - t.newcomer_requests;
}

void WorkerGovernor::uncount_last_trial_tick() {
  if (!last_trial_tick_.counted) return;  // reset_segment_sums() clears it
  count_trial_tick(last_trial_tick_, -1);
  last_trial_tick_.counted = false;
  --state_ticks_;
}

void WorkerGovernor::end_segment(uint64_t now_usec) {
  segment_rps_.push_back(segment_rps_sum_ / static_cast<double>(s_.trial_ticks));
  const size_t done = segment_rps_.size() - 1;
  const double newcomer_share = tried_newcomer_share();
  // The new workers' share if the requests were split evenly.
  const double even_share =
      static_cast<double>(tried_ - from_) / static_cast<double>(std::max<size_t>(tried_, 1));
  // Checked after the first second: an idle newcomer halves the mean busy
  // share, so its trial can look like a lull, and its throughput is the
  // old count's. (Ticks where the requests themselves stopped were left
  // out as lulls.)
  if (done == 1 && tried_ > from_ && newcomer_share < s_.newcomer_share * even_share) {
    end_trial_back(describe(
        "one worker more served %.1f%% of the requests (%.0f requests/s against %.0f): no "
        "connection could move to it, as when one client thread holds them all: back, and no new "
        "try for a while with these clients",
        newcomer_share * 100, segment_rps_.back(), baseline_rps_));
    no_growth_for_a_while(now_usec, baseline_rps_, true);
    return;
  }
  // An open loop: clients that send on a timetable of their own, at a rate
  // no worker count changes. Its baseline is as steady as a clock, and the
  // first second at one worker more reads the same requests/s again, so
  // the trial could read no gain from its six seconds either, while each
  // second at two workers on two shared cores queued the requests longer
  // (memshard-openloop at half of direct memcached's rate here: p99 2 ms
  // at one fixed worker, 7 to 22 ms at two). A closed loop's throughput
  // strays from second to second by several percent here, so both
  // readings within a hair of the baseline by chance are rare, and cost
  // only the backoff.
  if (done == 1 && tried_ > from_ && baseline_rps_ > 0 &&
      baseline_spread_ <= 2 * s_.clients_set_rate &&
      std::abs(segment_rps_.back() / baseline_rps_ - 1) <= s_.clients_set_rate) {
    end_trial_back(describe(
        "one worker more served the same %.0f requests/s as the %.0f before it, which held within "
        "%.1f%%: the clients set the rate, not the workers: back, and no new try for a while at "
        "this load",
        segment_rps_.back(), baseline_rps_, baseline_spread_ * 100));
    no_growth_for_a_while(now_usec, baseline_rps_);
    return;
  }
  // Connections from more CPUs than there were workers moved to the new
  // ones, and the first second beat the baseline clearly: kept at once,
  // its check (recheck_usec later) alternating.
  if (done == 1 && tried_ > from_ && !rechecking_ && !alternate_only_ &&
      s_.keep_at_once_share >= 0 && baseline_rps_ > 0 &&
      newcomer_share >= s_.keep_at_once_share * even_share &&
      segment_rps_.back() >= baseline_rps_ * (1 + s_.keep_at_once_gain)) {
    ++decisions_;
    state_ = State::steady;
    state_ticks_ = 0;
    recent_.clear();
    keep_growth(now_usec);
    reason_ = describe(
        "one worker more: %+.1f%% requests/s in its first second, %.0f%% of the requests its: "
        "kept at once, checked alternating later",
        (segment_rps_.back() / baseline_rps_ - 1) * 100, newcomer_share * 100);
    return;
  }
  if (static_cast<int>(done) < segments_) {
    switch_count();
    return;
  }
  if (segments_ == 1) {
    judge_shrink(now_usec);
    return;
  }
  judge_trial(now_usec);
}

void WorkerGovernor::judge_trial(uint64_t now_usec) {
  double error = 0;
  const double ratio = tried_over_other(error);
  const bool growth = tried_ > from_;
  // One more worker against one fewer, whichever the trial tried.
  const double more_over_fewer = growth ? ratio : 1 / ratio;
  const double busy = tried_ticks_ == 0 ? 0 : tried_busy_sum_ / static_cast<double>(tried_ticks_);
  if (growth && busy < s_.shrink_busy) {
    // The workers were not kept busy: the load fell during the trial (a
    // client between runs, a lull), which says nothing about whether one
    // worker more pays. Back, free to try again.
    end_trial_back(describe(
        "the load fell during the trial (%.0f requests/s against %.0f, workers %.0f%% busy): "
        "back, undecided",
        segment_rps_.back(), baseline_rps_, busy * 100));
    return;
  }
  // Undecided either side of the threshold: a reading just over it is as
  // much the seconds' swing as one just under it.
  if (std::abs(more_over_fewer - 1 - s_.grow_gain) < s_.undecided_errors * error &&
      segments_ + 2 <= s_.max_trial_segments) {
    segments_ += 2;
    switch_count();
    return;
  }
  ++decisions_;
  rechecking_ = false;
  state_ = State::steady;
  state_ticks_ = 0;
  recent_.clear();
  const bool pays = more_over_fewer >= 1 + s_.grow_gain;
  const double seconds = static_cast<double>(segments_ * (s_.settle_ticks + s_.trial_ticks)) *
                         static_cast<double>(s_.tick_usec) / 1e6;
  const double newcomer_share = tried_newcomer_share();
  // What the trial read, for the reason: the gain, how long, and each
  // count's mean throughput.
  char read[256];
  std::snprintf(read, sizeof read,
                "one worker %s: %+.1f%% requests/s against one %s, alternating for %.0f s (%.0f "
                "requests/s at %zu, %.0f at %zu",
                growth ? "more" : "fewer", (ratio - 1) * 100, growth ? "fewer" : "more", seconds,
                segments_mean(1), tried_, segments_mean(0), from_);
  reason_ = read;
  if (growth) {
    reason_ += describe("; %.0f%% of the requests its)", newcomer_share * 100, 0);
    if (pays) {
      keep_growth(now_usec);
      active_ = tried_;
      reason_ += ": kept";
      return;
    }
    // Did not pay: back, and not again for a while at this load: the old
    // count's throughput through the trial, not just before it (a load's
    // first seconds can run a quarter faster than the rest, and judged
    // against those, the same load read as changed at once).
    no_growth_for_a_while(now_usec, segments_mean(0));
    reason_ += ": back, and no new try for a while at this load";
    return;
  }
  // A recheck: one worker fewer tried.
  reason_ += ")";
  if (!pays) {
    // The growth did not pay after all: as after a failed trial, no new
    // try for a while at this load. A growth it had made kept before
    // (three workers, now two) is checked again in its turn.
    no_growth_for_a_while(now_usec, segments_mean(1));
    alternate_only_ = true;
    recheck_interval_usec_ = s_.recheck_usec;
    active_ = tried_;
    recheck_at_usec_ = active_ > 1 ? now_usec + recheck_interval_usec_ : 0;
    reason_ += ": the last growth did not pay, fewer kept";
    return;
  }
  // The growth still pays: checked again after twice as long.
  recheck_interval_usec_ = std::min(recheck_interval_usec_ * 2, s_.max_recheck_usec);
  recheck_at_usec_ = now_usec + recheck_interval_usec_;
  reason_ += ": the last growth pays, back";
}

void WorkerGovernor::judge_shrink(uint64_t now_usec) {
  const double rps = segment_rps_.back();
  ++decisions_;
  rechecking_ = false;
  state_ = State::steady;
  state_ticks_ = 0;
  if (rps >= baseline_rps_ * (1 - s_.shrink_loss)) {
    recheck_at_usec_ = 0;
    reason_ =
        describe("%.0f requests/s with one worker fewer, against %.0f: kept", rps, baseline_rps_);
    return;
  }
  reason_ =
      describe("%.0f requests/s with one worker fewer, down from %.0f: back", rps, baseline_rps_);
  shrink_after_usec_ = now_usec + s_.backoff_usec;
  active_ = from_;
  recent_.clear();
}

size_t WorkerGovernor::tick(uint64_t now_usec, std::span<const Figures> workers) {
  const size_t max = std::min(s_.max_workers, std::max<size_t>(workers.size(), 1));
  active_ = std::clamp<size_t>(active_, 1, max);
  if (last_.size() != workers.size() || last_usec_ == 0 || now_usec <= last_usec_) {
    last_.assign(workers.begin(), workers.end());
    last_usec_ = now_usec;
    return active_;
  }
  const double seconds = static_cast<double>(now_usec - last_usec_) / 1e6;
  double busy_sum = 0;
  uint64_t requests = 0, active_requests = 0, active_wakeups = 0;
  uint64_t newcomer_requests = 0;  // of the workers a trial added
  connections_ = 0;
  for (size_t i = 0; i < workers.size(); ++i) {
    connections_ += workers[i].connections;
    const uint64_t busy = workers[i].busy_usec - last_[i].busy_usec;
    const uint64_t req = workers[i].requests - last_[i].requests;
    requests += req;
    if (i >= from_ && i < tried_) newcomer_requests += req;
    if (i < active_) {
      busy_sum += std::min(1.0, static_cast<double>(busy) / 1e6 / seconds);
      active_requests += req;
      active_wakeups += workers[i].wakeups - last_[i].wakeups;
    }
  }
  last_.assign(workers.begin(), workers.end());
  last_usec_ = now_usec;
  if (state_ != State::steady) trial_connections_ = std::max(trial_connections_, connections_);
  // Every client the failed growth was judged with is gone: the verdict
  // was theirs.
  if (connections_ > 0) {
    no_clients_since_usec_ = 0;
  } else if (no_clients_since_usec_ == 0) {
    no_clients_since_usec_ = now_usec;
  } else if (now_usec - no_clients_since_usec_ >= s_.clients_gone_usec && grow_after_usec_ != 0 &&
             judged_with_connections_ > 0) {
    forget_failed_growth();
  }
  const double rps = static_cast<double>(requests) / seconds;
  last_rps_ = rps;
  last_busy_ = busy_sum / static_cast<double>(active_);
  last_per_wakeup_ = active_wakeups == 0 ? 0
                                         : static_cast<double>(active_requests) /
                                               static_cast<double>(active_wakeups);

  switch (state_) {
    case State::settling:
      // A lull as the trial begins: its first tick after it is partial.
      lull_ticks_ = rps < baseline_rps_ * s_.lull_share ? lull_ticks_ + 1 : 0;
      if (++state_ticks_ >= s_.settle_ticks) {
        state_ = State::trial;
        state_ticks_ = 0;
      }
      return active_;
    case State::trial:
      if (rps < baseline_rps_ * s_.lull_share) {
        // The tick before a lull is partial too: the load stopped within
        // it (on memcaslap 2 x 16, 24,750 requests/s at 40% busy among
        // 42-56k at 80-88%, and kept in, a gain of a tenth read as 2.5%).
        if (lull_ticks_ == 0) uncount_last_trial_tick();
        if (++lull_ticks_ >= s_.max_lull_ticks)
          end_trial_back(describe(
              "the load fell during the trial (%.0f requests/s against %.0f for %.2f s): back, "
              "undecided",
              rps, baseline_rps_,
              static_cast<double>(lull_ticks_) * static_cast<double>(s_.tick_usec) / 1e6));
        return active_;
      }
      if (lull_ticks_ > 0) {
        // And so is the first after it: the load started again within it.
        lull_ticks_ = 0;
        return active_;
      }
      last_trial_tick_ = {rps, last_busy_, requests, newcomer_requests, active_ == tried_, true};
      count_trial_tick(last_trial_tick_, 1);
      if (++state_ticks_ >= s_.trial_ticks) end_segment(now_usec);
      return active_;
    case State::steady:
      break;
  }

  const bool saturated = last_busy_ >= s_.grow_busy;
  recent_.push_back({rps, saturated});
  if (recent_.size() > kRecentTicks) recent_.erase(recent_.begin());

  saturated_ticks_ = saturated ? saturated_ticks_ + 1 : 0;
  const bool light = active_ > 1 && busy_sum < s_.shrink_busy * static_cast<double>(active_ - 1);
  light_ticks_ = light ? light_ticks_ + 1 : 0;

  const bool may_grow = saturated_ticks_ >= s_.grow_ticks && active_ < max && baseline_steady();
  // A change of load holds only through ticks that each read it.
  if (!may_grow) load_changed_since_usec_ = 0;
  if (may_grow && grow_after_usec_ != 0) {
    // A growth that did not pay holds until its time is up, or until the
    // load has been another than the one it was judged at for a few
    // seconds. Asked only here, of a
    // steady load that saturates the workers again: a pause between two
    // runs of the same clients (seconds of no load, then the same load
    // anew) is no new load, and must not buy the same failed trial again.
    if (load_changed_since_failure(now_usec)) {
      forget_failed_growth();
    } else if (now_usec >= grow_after_usec_) {
      grow_after_usec_ = 0;
    }
  }

  if (may_grow && grow_after_usec_ == 0) {
    const auto ticks =
        std::clamp<size_t>(static_cast<size_t>(std::max(s_.baseline_ticks, 0)), 2, kRecentTicks);
    const double base = window_rps(ticks);
    // How far the baseline's ticks stray from their mean: an open loop's
    // hardly do (end_segment).
    baseline_spread_ = 0;
    for (auto t = recent_.end() - static_cast<std::ptrdiff_t>(ticks); t != recent_.end(); ++t)
      baseline_spread_ =
          std::max(baseline_spread_, base > 0 ? std::abs(t->rps - base) / base : 1.0);
    change(active_ + 1, now_usec, base,
           describe("workers saturated (%.0f%% busy, %.1f requests per wake-up): one more",
                    last_busy_ * 100, last_per_wakeup_),
           true);
  } else if (light_ticks_ >= s_.shrink_ticks && now_usec >= shrink_after_usec_) {
    const double base = window_rps(kRecentTicks);
    change(active_ - 1, now_usec, base,
           describe("load light (%.0f%% busy, %.1f requests per wake-up): one worker fewer",
                    last_busy_ * 100, last_per_wakeup_),
           false);
  } else if (recheck_at_usec_ != 0 && now_usec >= recheck_at_usec_ && active_ > 1 &&
             light_ticks_ == 0 && load_steady()) {
    // Not of a light load: that is the shrink's to judge (4 s later), and
    // a recheck of no load at all read +0.0%, failed the growth and held
    // the next clients back from a second worker for the backoff.
    const double base = window_rps(kRecentTicks);
    change(active_ - 1, now_usec, base,
           describe("checking that the last growth still pays (%.0f requests/s, %.0f%% busy): "
                    "one worker fewer",
                    base, last_busy_ * 100),
           true);
    rechecking_ = true;
  }
  return active_;
}

}  // namespace memshard::proxy
