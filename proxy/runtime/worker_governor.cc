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

bool WorkerGovernor::baseline_steady() const {
  if (recent_.size() < kRecentTicks) return false;
  const size_t half = kRecentTicks / 2;
  const double newer = window_rps(half);
  const double older = window_rps(half, half);
  if (std::abs(newer - older) > s_.steady_within * older) return false;
  // Nor a tick that is a lull's, or one where the workers were not
  // saturated: a load's first tick is partial (it began within the tick),
  // and such a tick passed the halves' test among faster ones and pulled
  // the baseline down (23,037 requests/s at 51% busy among 42-50k at 95%:
  // by 6%, and a trial against it reads that much high). The baseline is
  // what the workers give saturated.
  const double mean = window_rps(kRecentTicks);
  return std::none_of(recent_.end() - static_cast<std::ptrdiff_t>(kRecentTicks), recent_.end(),
                      [&](const Tick& t) { return !t.saturated || t.rps < mean * s_.lull_share; });
}

void WorkerGovernor::change(size_t to, uint64_t now_usec, double baseline_rps, std::string why) {
  (void)now_usec;
  from_ = active_;
  active_ = to;
  baseline_rps_ = baseline_rps;
  baseline_ticks_ = std::min(kRecentTicks, recent_.size());
  baseline_variance_ = 0;
  if (baseline_ticks_ > 1) {
    const auto first = recent_.end() - static_cast<std::ptrdiff_t>(baseline_ticks_);
    const double mean = window_rps(baseline_ticks_);
    for (auto it = first; it != recent_.end(); ++it)
      baseline_variance_ += (it->rps - mean) * (it->rps - mean);
    baseline_variance_ /= static_cast<double>(baseline_ticks_ - 1);
  }
  reset_trial_sums();
  trial_connections_ = connections_;
  trial_length_ = s_.trial_ticks;
  state_ = State::settling;
  state_ticks_ = 0;
  saturated_ticks_ = 0;
  light_ticks_ = 0;
  // The ticks before were measured at the old count.
  recent_.clear();
  reason_ = std::move(why);
  ++decisions_;
}

void WorkerGovernor::reset_trial_sums() {
  trial_rps_sum_ = 0;
  trial_rps_squares_ = 0;
  lull_ticks_ = 0;
  trial_busy_sum_ = 0;
  trial_requests_ = 0;
  trial_newcomer_requests_ = 0;
  last_trial_tick_ = {};
}

void WorkerGovernor::measure_after_back(double trial_rps, double threshold) {
  confirming_ = true;
  tried_ = active_;
  tried_rps_ = trial_rps;
  tried_threshold_ = threshold;
  active_ = from_;
  // As long as the trial was (trial_length_ stays), after the same settling.
  reset_trial_sums();
  state_ = State::settling;
  state_ticks_ = 0;
  recent_.clear();
}

void WorkerGovernor::judge_after_back(uint64_t now_usec) {
  confirming_ = false;
  state_ = State::steady;
  state_ticks_ = 0;
  ++decisions_;
  const double after = trial_rps_sum_ / static_cast<double>(trial_length_);
  const double reference = (baseline_rps_ + after) / 2;
  // Only a saturated old count measures what it can do: one that the load
  // no longer keeps busy reads the load's own fall (clients asking less),
  // and needs no more workers.
  const bool saturated = trial_busy_sum_ / static_cast<double>(trial_length_) >= s_.grow_busy;
  if (saturated && tried_rps_ >= reference * (1 + tried_threshold_)) {
    // The growth paid against before and after together: made again, and
    // kept as a growth that passed its trial is (checked again later).
    keep_growth(now_usec);
    active_ = tried_;
    recent_.clear();
    reason_ = describe(
        "%.0f requests/s back at one worker fewer, against %.0f before the trial: the load fell "
        "meanwhile, and the trial's %.0f with one worker more beats the two together: one more "
        "again, kept",
        after, baseline_rps_, tried_rps_);
    return;
  }
  reason_ = describe(
      "%.0f requests/s back at one worker fewer, against %.0f before the trial and %.0f with one "
      "worker more: it did not pay, back it stays",
      after, baseline_rps_, tried_rps_);
}

void WorkerGovernor::no_growth_for_a_while(uint64_t now_usec, double judged_at_rps,
                                           bool placement) {
  failed_at_rps_ = judged_at_rps;
  failed_for_placement_ = placement;
  // The most seen since the change: at the verdict the clients may be
  // closing already (a run's end), and counted then, the next run's same
  // number looked like more clients.
  judged_with_connections_ = std::max(connections_, trial_connections_);
  grow_after_usec_ = now_usec + backoff_usec_;
  backoff_usec_ = std::min(backoff_usec_ * 2, s_.max_backoff_usec);
}

bool WorkerGovernor::load_changed_since_failure() const {
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
  return then > 0 && (now > then * (1 + s_.load_change) || now < then * (1 - s_.load_change));
}

void WorkerGovernor::forget_failed_growth() {
  failed_for_placement_ = false;
  grow_after_usec_ = 0;
  backoff_usec_ = s_.backoff_usec;
  judged_with_connections_ = 0;
}

void WorkerGovernor::keep_growth(uint64_t now_usec) {
  forget_failed_growth();
  recheck_interval_usec_ = s_.recheck_usec;
  recheck_at_usec_ = now_usec + recheck_interval_usec_;
}

double WorkerGovernor::trial_error() const {
  const auto n = static_cast<double>(trial_length_);
  if (trial_length_ < 2 || baseline_ticks_ < 2 || baseline_rps_ <= 0) return 0;
  const double variance =
      std::max(0.0, (trial_rps_squares_ - trial_rps_sum_ * trial_rps_sum_ / n) / (n - 1));
  return std::sqrt(variance / n + baseline_variance_ / static_cast<double>(baseline_ticks_)) /
         baseline_rps_;
}

void WorkerGovernor::end_trial_back(std::string why) {
  ++decisions_;
  rechecking_ = false;
  confirming_ = false;
  state_ = State::steady;
  state_ticks_ = 0;
  active_ = from_;
  recent_.clear();
  reason_ = std::move(why);
}

void WorkerGovernor::count_trial_tick(const TrialTick& t, int sign) {
  const double d = sign;
  trial_rps_sum_ += d * t.rps;
  trial_rps_squares_ += d * t.rps * t.rps;
  trial_busy_sum_ += d * t.busy;
  trial_requests_ = sign > 0 ? trial_requests_ + t.requests : trial_requests_ - t.requests;
  trial_newcomer_requests_ = sign > 0 ? trial_newcomer_requests_ + t.newcomer_requests
                                      : trial_newcomer_requests_ - t.newcomer_requests;
}

void WorkerGovernor::uncount_last_trial_tick() {
  if (!last_trial_tick_.counted) return;  // change() clears it
  count_trial_tick(last_trial_tick_, -1);
  last_trial_tick_.counted = false;
  --state_ticks_;
}

void WorkerGovernor::judge_trial(uint64_t now_usec) {
  if (confirming_) {
    judge_after_back(now_usec);
    return;
  }
  const double ticks = static_cast<double>(trial_length_);
  const double rps = trial_rps_sum_ / ticks;
  const bool busy = trial_busy_sum_ / ticks >= s_.shrink_busy;
  const double newcomer_share =
      trial_requests_ == 0
          ? 0
          : static_cast<double>(trial_newcomer_requests_) / static_cast<double>(trial_requests_);
  // The new workers' share if the requests were split evenly.
  const double even_share =
      static_cast<double>(active_ - from_) / static_cast<double>(std::max<size_t>(active_, 1));
  // Checked first: an idle newcomer halves the mean busy share, so its
  // trial can look like a lull, and its throughput is the old count's.
  // (Ticks where the requests themselves stopped were left out as lulls.)
  if (active_ > from_ && newcomer_share < s_.newcomer_share * even_share) {
    end_trial_back(describe(
        "one worker more served %.1f%% of the requests (%.0f requests/s against %.0f): no "
        "connection could move to it, as when one client thread holds them all: back, and no new "
        "try for a while with these clients",
        newcomer_share * 100, rps, baseline_rps_));
    no_growth_for_a_while(now_usec, baseline_rps_, true);
    return;
  }
  // What a growth must read to stay: a gain of grow_gain, or, where its
  // new workers took a fair share of the clients and the old ones kept
  // theirs, no loss over shrink_loss. (One client thread that moved to the
  // new worker's CPU during the trial takes all its connections along: a
  // new worker with everything is one worker again, not the spread.)
  const bool fair = active_ > from_ && newcomer_share >= s_.fair_share * even_share &&
                    1 - newcomer_share >= s_.fair_share * (1 - even_share);
  const double threshold = fair ? -s_.shrink_loss : s_.grow_gain;
  // Undecided either side of the threshold: a reading just over it is as
  // much the seconds' swing as one just under it. The first reading is
  // measured again within `undecided_within`; any, while within the
  // error the ticks' spread gives it, up to `max_trial_ticks`.
  const bool first_near = trial_length_ == s_.trial_ticks &&
                          rps < baseline_rps_ * (1 + threshold + s_.undecided_within) &&
                          rps >= baseline_rps_ * (1 + threshold - s_.undecided_within);
  const bool within_error =
      trial_length_ < s_.max_trial_ticks && baseline_rps_ > 0 &&
      std::abs(rps / baseline_rps_ - 1 - threshold) < s_.undecided_errors * trial_error();
  if (active_ > from_ && busy && (first_near || within_error)) {
    trial_length_ += s_.trial_ticks;  // undecided: the trial goes on
    return;
  }
  if (active_ > from_ && !busy) {
    // The workers were not kept busy: the load fell during the trial (a
    // client between runs, a lull), which says nothing about whether one
    // worker more pays. Back, free to try again.
    end_trial_back(describe(
        "the load fell during the trial (%.0f requests/s against %.0f, workers %.0f%% busy): "
        "back, undecided",
        rps, baseline_rps_, trial_busy_sum_ / ticks * 100));
    return;
  }
  const std::string longer =
      trial_length_ > s_.trial_ticks
          ? describe(" (over a longer trial, %.2f s: the first reading was undecided)",
                     static_cast<double>(trial_length_) * static_cast<double>(s_.tick_usec) / 1e6,
                     0)
          : std::string();
  ++decisions_;
  const bool recheck = rechecking_;
  rechecking_ = false;
  state_ = State::steady;
  state_ticks_ = 0;
  if (active_ > from_) {
    if (rps >= baseline_rps_ * (1 + threshold)) {
      keep_growth(now_usec);
      reason_ = describe(
          fair ? "%.0f requests/s with one worker more (%.0f%% of them its: clients on its own "
                 "CPU), against %.0f: kept"
               : "%.0f requests/s with one worker more (%.0f%% of them its), up from %.0f: kept",
          rps, newcomer_share * 100, baseline_rps_);
      reason_ += longer;
      return;
    }
    // Did not pay: back, and not again for a while at this load.
    no_growth_for_a_while(now_usec, baseline_rps_);
    reason_ = describe(
        "%.0f requests/s with one worker more (%.0f%% of them its), against %.0f: back, and no "
        "new try for a while at this load",
        rps, newcomer_share * 100, baseline_rps_);
    reason_ += longer;
    reason_ += "; measuring it again";
    measure_after_back(rps, threshold);
    return;
  }
  if (rps >= baseline_rps_ * (1 - s_.shrink_loss)) {
    if (recheck) {
      // The growth did not pay after all: as after a failed trial, no new
      // try for a while at this load. A growth it had made kept before
      // (three workers, now two) is checked again in its turn.
      no_growth_for_a_while(now_usec, rps);
      recheck_interval_usec_ = s_.recheck_usec;
      recheck_at_usec_ = active_ > 1 ? now_usec + recheck_interval_usec_ : 0;
      reason_ = describe(
          "%.0f requests/s with one worker fewer, against %.0f: the last growth did not pay, "
          "kept",
          rps, baseline_rps_);
      return;
    }
    recheck_at_usec_ = 0;
    reason_ =
        describe("%.0f requests/s with one worker fewer, against %.0f: kept", rps, baseline_rps_);
    return;
  }
  if (recheck) {
    // The growth still pays: checked again after twice as long.
    recheck_interval_usec_ = std::min(recheck_interval_usec_ * 2, s_.max_recheck_usec);
    recheck_at_usec_ = now_usec + recheck_interval_usec_;
    reason_ = describe(
        "%.0f requests/s with one worker fewer, down from %.0f: the last growth pays, back", rps,
        baseline_rps_);
  } else {
    reason_ =
        describe("%.0f requests/s with one worker fewer, down from %.0f: back", rps, baseline_rps_);
    shrink_after_usec_ = now_usec + s_.backoff_usec;
  }
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
    if (i >= from_ && i < active_) newcomer_requests += req;
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
              confirming_ ? "the load fell while measuring again (%.0f requests/s against %.0f for "
                            "%.2f s): back it stays"
                          : "the load fell during the trial (%.0f requests/s against %.0f for "
                            "%.2f s): back, undecided",
              rps, baseline_rps_,
              static_cast<double>(lull_ticks_) * static_cast<double>(s_.tick_usec) / 1e6));
        return active_;
      }
      if (lull_ticks_ > 0) {
        // And so is the first after it: the load started again within it.
        lull_ticks_ = 0;
        return active_;
      }
      last_trial_tick_ = {rps, last_busy_, requests, newcomer_requests, true};
      count_trial_tick(last_trial_tick_, 1);
      if (++state_ticks_ >= trial_length_) judge_trial(now_usec);
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
  if (may_grow && grow_after_usec_ != 0) {
    // A growth that did not pay holds until its time is up, or until the
    // load is no longer the one it was judged at. Asked only here, of a
    // steady load that saturates the workers again: a pause between two
    // runs of the same clients (seconds of no load, then the same load
    // anew) is no new load, and must not buy the same failed trial again.
    if (load_changed_since_failure()) {
      forget_failed_growth();
    } else if (now_usec >= grow_after_usec_) {
      grow_after_usec_ = 0;
    }
  }

  if (may_grow && grow_after_usec_ == 0) {
    const double base = window_rps(kRecentTicks);
    change(active_ + 1, now_usec, base,
           describe("workers saturated (%.0f%% busy, %.1f requests per wake-up): one more",
                    last_busy_ * 100, last_per_wakeup_));
  } else if (light_ticks_ >= s_.shrink_ticks && now_usec >= shrink_after_usec_) {
    const double base = window_rps(kRecentTicks);
    change(active_ - 1, now_usec, base,
           describe("load light (%.0f%% busy, %.1f requests per wake-up): one worker fewer",
                    last_busy_ * 100, last_per_wakeup_));
  } else if (recheck_at_usec_ != 0 && now_usec >= recheck_at_usec_ && active_ > 1 &&
             recent_.size() >= kRecentTicks) {
    const double base = window_rps(kRecentTicks);
    change(active_ - 1, now_usec, base,
           describe("checking that the last growth still pays (%.0f requests/s, %.0f%% busy): "
                    "one worker fewer",
                    base, last_busy_ * 100));
    rechecking_ = true;
  }
  return active_;
}

}  // namespace memshard::proxy
