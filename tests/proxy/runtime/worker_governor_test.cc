// The governor's decisions alone: a fake clock and a fake load, whose
// throughput and busy share depend on how many workers are active, stand
// in for the workers.
#include "proxy/runtime/worker_governor.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <functional>
#include <memory>
#include <vector>

namespace memshard::proxy {
namespace {

// What the load does with n active workers.
struct Shape {
  double rps = 0;   // requests per second, all workers together
  double busy = 0;  // each active worker's busy share
  // The last active worker's share of the requests, its busy share scaled
  // alike (below 0: an even split, each as busy as `busy`).
  double newcomer_share = -1;
};
using Load = std::function<Shape(size_t active, uint64_t now_usec)>;

class Harness {
 public:
  explicit Harness(size_t workers, WorkerGovernor::Settings s = {}) : figures_(workers) {
    if (s.max_workers == 1) s.max_workers = workers;
    settings_ = s;
    governor_ = std::make_unique<WorkerGovernor>(s);
  }

  // Runs `seconds` of ticks under `load`; returns how many times the count
  // changed.
  int run(double seconds, const Load& load) {
    int changes = 0;
    const auto ticks = static_cast<int>(seconds * 1e6 / static_cast<double>(settings_.tick_usec));
    for (int t = 0; t < ticks; ++t) {
      const size_t n = governor_->active();
      const Shape shape = load(n, now_);
      const double dt = static_cast<double>(settings_.tick_usec) / 1e6;
      const bool even = shape.newcomer_share < 0 || n == 1;
      for (size_t i = 0; i < n && i < figures_.size(); ++i) {
        double share = 1.0 / static_cast<double>(n), busy = shape.busy;
        if (!even) {
          const bool newcomer = i == n - 1;
          share = newcomer ? shape.newcomer_share
                           : (1 - shape.newcomer_share) / static_cast<double>(n - 1);
          busy = std::min(1.0, shape.busy * share * static_cast<double>(n));
        }
        figures_[i].busy_usec += static_cast<uint64_t>(busy * dt * 1e6);
        figures_[i].requests += static_cast<uint64_t>(shape.rps * dt * share);
        figures_[i].wakeups += static_cast<uint64_t>(shape.rps * dt * share / 2);
      }
      now_ += settings_.tick_usec;
      const size_t after = governor_->tick(now_, figures_);
      EXPECT_GE(after, 1u);
      EXPECT_LE(after, settings_.max_workers);
      EXPECT_LE(after, figures_.size());
      max_seen_ = std::max(max_seen_, after);
      if (after != n) ++changes;
      ticks_at_[after] += 1;
    }
    return changes;
  }

  // Client connections open from now on (on the first worker: where they
  // are does not matter to the governor).
  void set_connections(uint64_t n) { figures_[0].connections = n; }

  size_t active() const { return governor_->active(); }
  size_t max_seen() const { return max_seen_; }
  // Ticks spent at `n` active workers since the last reset.
  int ticks_at(size_t n) { return ticks_at_[n]; }
  void reset_counts() { ticks_at_.assign(ticks_at_.size(), 0); }
  const WorkerGovernor& governor() const { return *governor_; }

 private:
  WorkerGovernor::Settings settings_;
  std::unique_ptr<WorkerGovernor> governor_;
  std::vector<WorkerGovernor::Figures> figures_;
  std::vector<int> ticks_at_ = std::vector<int>(17, 0);
  uint64_t now_ = 1'000'000;
  size_t max_seen_ = 0;
};

// A closed-loop load that saturates one worker and gains `gain` from a
// second (negative: loses), which serves `newcomer_share` of the requests
// (below 0: half).
Load saturating(double one_rps, double gain, double newcomer_share = -1) {
  return [=](size_t n, uint64_t) {
    if (n == 1) return Shape{one_rps, 0.95};
    return Shape{one_rps * (1 + gain), 0.75, newcomer_share};
  };
}

// Long enough for a load to saturate one worker, steady, and for a whole
// growth trial after it (1.25 s, then six 1 s segments), and a little more.
constexpr double kToVerdict = 9;
// The same, ending before an undecided trial's next try could start.
constexpr double kToFirstVerdict = 8;

// A load whose throughput at one worker is `one_rps`, and at two is
// `one_rps` times the next of `two_ratios` in each stretch at two workers
// (the last one from then on), the second worker serving half.
Load by_stretch(double one_rps, std::vector<double> two_ratios) {
  auto stretch = std::make_shared<size_t>(0);
  auto last_n = std::make_shared<size_t>(1);
  return [=](size_t n, uint64_t) {
    if (n == 2 && *last_n != 2) ++*stretch;
    *last_n = n;
    if (n == 1) return Shape{one_rps, 0.95};
    const size_t k = std::min(*stretch, two_ratios.size()) - 1;
    return Shape{one_rps * two_ratios[k], 0.8};
  };
}

TEST(WorkerGovernor, StartsWithOneWorker) {
  Harness h(2);
  EXPECT_EQ(h.active(), 1u);
  h.run(2, [](size_t, uint64_t) { return Shape{0, 0}; });
  EXPECT_EQ(h.active(), 1u);
}

TEST(WorkerGovernor, GrowsUnderSustainedSaturationWhenItPays) {
  Harness h(2);
  h.run(kToVerdict, saturating(36'000, 0.19));
  EXPECT_EQ(h.active(), 2u) << h.governor().reason();
  EXPECT_NE(h.governor().reason().find("+19.0%"), std::string::npos) << h.governor().reason();
  EXPECT_NE(h.governor().reason().find("kept"), std::string::npos) << h.governor().reason();
  // And stays: a steady load does not take it back (its recheck, after
  // 30 s, alternates for a few seconds and comes back).
  h.reset_counts();
  h.run(60, saturating(36'000, 0.19));
  EXPECT_EQ(h.active(), 2u);
  EXPECT_GE(h.ticks_at(2), h.ticks_at(1) * 15);
}

// A growth's trial alternates: a second at two workers, a second at one,
// and so on, six in all, ending at one; then the verdict. A growth that
// does not pay stays there, having spent three of those seconds at two
// workers.
TEST(WorkerGovernor, AGrowthsTrialAlternatesBetweenTheTwoCounts) {
  WorkerGovernor::Settings s;
  Harness h(2, s);
  const int changes = h.run(kToVerdict, saturating(40'000, -0.1));
  EXPECT_EQ(h.active(), 1u) << h.governor().reason();
  EXPECT_EQ(changes, s.trial_segments) << "into the trial and between its segments";
  EXPECT_EQ(h.ticks_at(2), s.trial_segments / 2 * (s.settle_ticks + s.trial_ticks));
  EXPECT_NE(h.governor().reason().find("-10.0%"), std::string::npos) << h.governor().reason();
  EXPECT_NE(h.governor().reason().find("back, and no new try"), std::string::npos)
      << h.governor().reason();
}

// The load's own throughput drifts through the trial (on a shared 2-vCPU
// machine it moved by a third within seconds, whatever the worker count).
// Each second at the new count is read against the seconds at the old one
// either side of it, so a steady drift cancels: two workers' gain of 8%
// shows while the load falls by 6% a second, and their loss of 8% while
// it rises as fast. (Against the seconds before the trial alone, the first
// read as a loss of a tenth and more, the second as a gain.)
TEST(WorkerGovernor, ADriftThroughTheTrialCancelsOut) {
  for (const double drift : {-0.06, 0.06}) {
    const double gain = drift < 0 ? 0.08 : -0.08;
    Harness h(2);
    uint64_t drift_from = 0;  // when two workers were first tried
    const Load drifting = [&](size_t n, uint64_t now_usec) {
      if (n == 2 && drift_from == 0) drift_from = now_usec;
      double one = 40'000;
      if (drift_from != 0) one *= 1 + drift * static_cast<double>(now_usec - drift_from) / 1e6;
      return n == 1 ? Shape{one, 0.95} : Shape{one * (1 + gain), 0.8};
    };
    h.run(kToVerdict, drifting);
    ASSERT_NE(drift_from, 0u) << "it must have tried";
    EXPECT_EQ(h.active(), gain > 0 ? 2u : 1u) << "drift " << drift << ": " << h.governor().reason();
    EXPECT_NE(h.governor().reason().find(gain > 0 ? ": kept" : ": back"), std::string::npos)
        << "drift " << drift << ": " << h.governor().reason();
  }
}

// The workers are no longer kept busy at the count tried (clients asking
// less): that says nothing about whether one worker more pays. Back,
// undecided, and free to try again.
TEST(WorkerGovernor, ALoadThatStopsSaturatingDuringTheTrialDecidesNothing) {
  // Its made-up load is as steady as an open loop's: that rule is not what
  // this test reads.
  WorkerGovernor::Settings closed;
  closed.clients_set_rate = -1;
  Harness h(2, closed);
  h.run(kToFirstVerdict, [](size_t n, uint64_t) {
    return n == 1 ? Shape{40'000, 0.95} : Shape{40'000, 0.3};
  });
  ASSERT_EQ(h.max_seen(), 2u) << "it must have tried";
  EXPECT_EQ(h.active(), 1u) << h.governor().reason();
  EXPECT_NE(h.governor().reason().find("back, undecided"), std::string::npos)
      << h.governor().reason();
}

// A trial's reading within one standard error (from its ratios' own
// spread) of grow_gain is undecided, either side of it: the trial goes on
// for two more seconds, once, and is judged on the whole. Here the first
// three seconds at two workers read +0%, +8% and +2% (3.3% against 3%,
// within its standard error of 2.4%); a fourth at +10% keeps it, one at
// -5% does not.
TEST(WorkerGovernor, AReadingNearTheThresholdIsMeasuredTwoSecondsLonger) {
  // Its made-up load is as steady as an open loop's: that rule is not what
  // this test reads.
  WorkerGovernor::Settings closed;
  closed.clients_set_rate = -1;
  for (const double fourth : {1.10, 0.95}) {
    Harness h(2, closed);
    h.run(kToVerdict + 2, by_stretch(40'000, {1.00, 1.08, 1.02, fourth}));
    EXPECT_EQ(h.active(), fourth > 1 ? 2u : 1u) << h.governor().reason();
    EXPECT_NE(h.governor().reason().find("alternating for 8 s"), std::string::npos)
        << h.governor().reason();
  }
}

// A clear reading is judged after the first six seconds: a loss of 22%
// (one client thread's load, where every request handed between the CPUs
// pays a wake-up) and a gain of 19% (here not kept at once: that rule is
// not what this test reads).
TEST(WorkerGovernor, AClearReadingIsJudgedWithoutMore) {
  WorkerGovernor::Settings alternating;
  alternating.keep_at_once_share = -1;
  for (const double gain : {-0.22, 0.19}) {
    Harness h(2, alternating);
    h.run(kToVerdict + 2, saturating(40'000, gain));
    EXPECT_EQ(h.active(), gain > 0 ? 2u : 1u) << h.governor().reason();
    EXPECT_NE(h.governor().reason().find("alternating for 6 s"), std::string::npos)
        << h.governor().reason();
  }
}

// However noisy, a trial ends: after max_trial_segments it is judged on
// the whole.
TEST(WorkerGovernor, ANoisyTrialIsJudgedAfterItsLongestLength) {
  WorkerGovernor::Settings s;
  s.clients_set_rate = -1;  // its made-up load is as steady as an open loop's
  Harness h(2, s);
  // Two workers read 0%, +8%, -1%, +7% ... by turns: never clear of the
  // error around 3%.
  h.run(kToVerdict + 4, by_stretch(40'000, {1.00, 1.08, 0.99, 1.07, 1.00, 1.08, 0.99, 1.07}));
  EXPECT_EQ(h.max_seen(), 2u);
  EXPECT_NE(h.governor().reason().find("alternating for 8 s"), std::string::npos)
      << h.governor().reason();
}

// A growth must gain grow_gain whatever share of the requests its new
// worker took: on a 100-key multi-get from two client threads the second
// worker took half of them and two fixed workers made 8% less than one.
// Half the requests and -2% goes back; +5% stays.
// A load whose connections spread over both workers (two client threads')
// and that gains clearly from the second is there within two seconds of
// saturating one: one second of baseline, a tick to settle and one second
// at two workers, kept at once (issue 64: the alternating trial took the
// default nine seconds to reach two workers on memcaslap 2 x 16).
TEST(WorkerGovernor, AGrowthThatClearlyPaysIsKeptAtOnce) {
  Harness h(2);
  const int changes = h.run(3, saturating(40'000, 0.12));
  EXPECT_EQ(h.active(), 2u) << h.governor().reason();
  EXPECT_EQ(changes, 1) << "one change, no alternating";
  EXPECT_NE(h.governor().reason().find("+12.0%"), std::string::npos) << h.governor().reason();
  EXPECT_NE(h.governor().reason().find("kept at once"), std::string::npos) << h.governor().reason();
  EXPECT_LE(h.ticks_at(1), 9) << "at two workers 2.25 s after the load began";
}

// Not kept at once: a gain under keep_at_once_gain (a second's noise could
// make it), and a new worker that served under half its even share (the
// connections could not follow it: a clear second would be the old
// count's drift). Both go through the alternating trial.
TEST(WorkerGovernor, ASmallOrPoorlySpreadGainGoesThroughTheAlternatingTrial) {
  struct Case {
    double gain, newcomer_share;
  };
  for (const Case c : {Case{0.025, 0.5}, Case{0.12, 0.2}}) {
    Harness h(2);
    h.run(kToFirstVerdict, saturating(40'000, c.gain, c.newcomer_share));
    EXPECT_EQ(h.active(), c.gain >= 0.03 ? 2u : 1u) << h.governor().reason();
    EXPECT_NE(h.governor().reason().find("alternating for 6 s"), std::string::npos)
        << c.gain << " " << c.newcomer_share << ": " << h.governor().reason();
  }
}

// A growth kept at once on a lucky second is undone by its check, and the
// same load's next growths go through the alternating trial: a load that
// once fooled the first second is not judged on one again until it
// changes.
TEST(WorkerGovernor, AfterAGrowthKeptAtOnceFailsItsCheckGrowthsAlternate) {
  Harness h(2);
  // Two workers lose 8%, but the first second of the first growth, and of
  // the first one after 50 s, reads +10%.
  struct State {
    size_t last_n = 1;
    int lucky_ticks = 0;  // left in this stretch at two workers
    int lucky_stretches = 0;
  };
  auto st = std::make_shared<State>();
  const Load lucky = [=](size_t n, uint64_t now_usec) {
    if (n == 2 && st->last_n != 2 &&
        (st->lucky_stretches == 0 || (st->lucky_stretches == 1 && now_usec > 50'000'000))) {
      ++st->lucky_stretches;
      st->lucky_ticks = 4;
    }
    st->last_n = n;
    if (n == 1) return Shape{40'000, 0.95};
    return Shape{st->lucky_ticks-- > 0 ? 44'000.0 : 36'800.0, 0.75};
  };
  h.run(3, lucky);
  ASSERT_EQ(h.active(), 2u) << h.governor().reason();
  ASSERT_NE(h.governor().reason().find("kept at once"), std::string::npos) << h.governor().reason();
  h.run(40, lucky);
  EXPECT_EQ(h.active(), 1u) << h.governor().reason();
  EXPECT_NE(h.governor().reason().find("did not pay"), std::string::npos) << h.governor().reason();
  // Its backoff passes, and it tries again, alternating, and goes back,
  // though its first second is as lucky.
  h.run(30, lucky);
  ASSERT_EQ(st->lucky_stretches, 2) << "it must have tried again";
  EXPECT_EQ(h.active(), 1u) << h.governor().reason();
  EXPECT_NE(h.governor().reason().find("alternating"), std::string::npos) << h.governor().reason();
}

TEST(WorkerGovernor, AGrowthMustPayWhateverShareItsNewWorkerTook) {
  for (const double gain : {-0.02, 0.05}) {
    Harness h(2);
    h.run(kToVerdict, saturating(40'000, gain, 0.5));
    ASSERT_EQ(h.max_seen(), 2u) << "it must have tried";
    EXPECT_EQ(h.active(), gain > 0 ? 2u : 1u) << h.governor().reason();
  }
}

// The trial saw a gain that was luck (a noisy few seconds): the recheck
// finds one worker fewer does as well and stays at it, and growth is not
// tried again at once.
TEST(WorkerGovernor, ALuckyGrowthIsUndoneByItsRecheck) {
  Harness h(2);
  // A second worker seems to pay 12% during the first trial only.
  const Load fluke = [](size_t n, uint64_t now_usec) {
    const bool lucky = n == 2 && now_usec < 10'000'000;
    return Shape{lucky ? 44'800.0 : 40'000.0, n == 1 ? 0.95 : 0.6};
  };
  h.run(kToVerdict, fluke);
  ASSERT_EQ(h.active(), 2u) << "the fluke must pass the trial: " << h.governor().reason();
  h.run(40, fluke);
  EXPECT_EQ(h.active(), 1u) << h.governor().reason();
  EXPECT_NE(h.governor().reason().find("did not pay"), std::string::npos) << h.governor().reason();
  // From then on it is a growth that does not pay: mostly at one worker.
  h.reset_counts();
  h.run(300, fluke);
  EXPECT_GE(h.ticks_at(1), h.ticks_at(2) * 20);
}

// A real gain passes every recheck, and they come ever rarer (30 s,
// doubling up to 4 minutes): over ten minutes it spends nearly all its
// time at two workers.
TEST(WorkerGovernor, ARealGainSurvivesItsRechecksWhichGetRarer) {
  WorkerGovernor::Settings s;
  Harness h(2, s);
  h.run(kToVerdict, saturating(36'000, 0.19));
  ASSERT_EQ(h.active(), 2u);
  h.reset_counts();
  // Rechecks about 30, 90, 210 and 450 s after the growth: each one worker
  // fewer, alternating, and back.
  const int changes = h.run(600, saturating(36'000, 0.19));
  EXPECT_GE(changes, s.trial_segments + 1);
  EXPECT_LE(changes, (s.trial_segments + 1) * 5);
  EXPECT_GE(h.ticks_at(2), h.ticks_at(1) * 30);
  EXPECT_EQ(h.active(), 2u);
  EXPECT_NE(h.governor().reason().find("the last growth pays"), std::string::npos)
      << h.governor().reason();
}

// A load that pauses every second (clients taking turns with others, a
// batch's passes) gives a recheck nothing to read but its pauses: the
// check of a kept growth waits until the load runs steady for 2 s.
TEST(WorkerGovernor, ARecheckWaitsForASteadyLoad) {
  Harness h(2);
  h.run(kToVerdict, saturating(36'000, 0.19));
  ASSERT_EQ(h.active(), 2u);
  // On for 0.5 s, off for 0.75 s, for 45 s: past the 30 s recheck.
  const Load pausing = [](size_t n, uint64_t now_usec) {
    if (now_usec / 250'000 % 5 >= 2) return Shape{0, 0.0};
    return saturating(36'000, 0.19)(n, now_usec);
  };
  h.reset_counts();
  h.run(45, pausing);
  EXPECT_EQ(h.ticks_at(1), 0) << h.governor().reason();
  // Steady again: the recheck comes, and the growth still pays.
  h.run(12, saturating(36'000, 0.19));
  EXPECT_GT(h.ticks_at(1), 0) << h.governor().reason();
  EXPECT_EQ(h.active(), 2u) << h.governor().reason();
}

// A kept growth's recheck came due while its load paused every second (no
// steady load to read), and then the clients all went away: 2 s of no load
// at all is steady, and a recheck of it read +0.0% and, as after any
// failed growth, held the next clients back from a second worker for 20 s
// (seen after every kept growth of a scripts/bench --interleave pass). An
// idle proxy is the light-load rule's to shrink, which leaves the next
// load free to grow.
TEST(WorkerGovernor, NoRecheckOfALoadThatHasGone) {
  Harness h(2);
  h.set_connections(32);
  h.run(kToVerdict, saturating(36'000, 0.19));
  ASSERT_EQ(h.active(), 2u);
  const Load pausing = [](size_t n, uint64_t now_usec) {
    if (now_usec / 250'000 % 5 >= 2) return Shape{0, 0.0};
    return saturating(36'000, 0.19)(n, now_usec);
  };
  h.run(35, pausing);
  ASSERT_EQ(h.active(), 2u) << h.governor().reason();
  h.set_connections(0);
  h.run(12, [](size_t, uint64_t) { return Shape{0, 0.0}; });
  EXPECT_EQ(h.governor().reason().find("did not pay"), std::string::npos) << h.governor().reason();
  EXPECT_EQ(h.active(), 1u) << h.governor().reason();
  // The next clients, with the same gain from a second worker, get it.
  h.set_connections(32);
  h.run(kToVerdict, saturating(36'000, 0.19));
  EXPECT_EQ(h.active(), 2u) << h.governor().reason();
}

TEST(WorkerGovernor, ABriefBurstDoesNotGrow) {
  Harness h(2);
  // Saturated for two ticks in every eight: never three in a row.
  int t = 0;
  h.run(30, [&](size_t, uint64_t) { return Shape{30'000, (t++ % 8) < 2 ? 0.95 : 0.3}; });
  EXPECT_EQ(h.max_seen(), 1u);
}

// An open loop (clients on a timetable: memshard-openloop, scripts/bench
// --latency) sends the same requests/s at any worker count; one worker is
// 88% busy with it. The trial stops after its first second at two workers,
// which read the same rate as the steady seconds before it: six seconds of
// alternating could read no gain either, and on two shared cores each
// second at two workers queued the requests longer.
TEST(WorkerGovernor, AnOpenLoopsGrowthEndsAfterOneSecond) {
  WorkerGovernor::Settings s;
  Harness h(2, s);
  const Load open_loop = [](size_t n, uint64_t) { return Shape{46'800, n == 1 ? 0.88 : 0.5}; };
  h.run(kToVerdict, open_loop);
  EXPECT_EQ(h.active(), 1u) << h.governor().reason();
  EXPECT_EQ(h.max_seen(), 2u) << "it must have tried";
  EXPECT_EQ(h.ticks_at(2), s.settle_ticks + s.trial_ticks);
  EXPECT_NE(h.governor().reason().find("the clients set the rate"), std::string::npos)
      << h.governor().reason();
  // And backs off as after any growth that did not pay.
  h.reset_counts();
  h.run(600, open_loop);
  EXPECT_GE(h.ticks_at(1), h.ticks_at(2) * 50);
}

// A closed loop whose throughput strays from tick to tick is tried in full,
// even when its first second at two workers reads the baseline again.
TEST(WorkerGovernor, AClosedLoopsNoisyBaselineGetsTheWholeTrial) {
  WorkerGovernor::Settings s;
  Harness h(2, s);
  int t = 0;
  const Load noisy = [&](size_t n, uint64_t) {
    const double wobble = (t++ % 2) ? 1.04 : 0.96;
    return Shape{40'000 * wobble * (n == 2 ? 1.1 : 1.0), n == 1 ? 0.95 : 0.75};
  };
  h.run(kToVerdict + 2, noisy);
  EXPECT_EQ(h.active(), 2u) << h.governor().reason();
  EXPECT_NE(h.governor().reason().find("kept"), std::string::npos) << h.governor().reason();
}

TEST(WorkerGovernor, GoesBackWhenAnotherWorkerDoesNotPay) {
  WorkerGovernor::Settings s;
  Harness h(2, s);
  // A second worker costs 22% of the throughput.
  h.run(kToVerdict, saturating(47'000, -0.22));
  EXPECT_EQ(h.active(), 1u) << h.governor().reason();
  EXPECT_EQ(h.max_seen(), 2u) << "it must have tried";
  // Backs off: over the next ten minutes at the same load, a handful of
  // tries (20 s, then doubling), most of the time at one worker.
  h.reset_counts();
  const int changes = h.run(600, saturating(47'000, -0.22));
  EXPECT_LE(changes, (s.trial_segments + 1) * 6);
  EXPECT_GE(h.ticks_at(1), h.ticks_at(2) * 20) << "time at 2 workers must be a sliver";
}

// A new load ramps up over its first seconds (connections opening, caches
// filling): a trial judged against that slower start would keep a worker
// that costs a fifth of the throughput. It waits for a steady baseline, and
// then finds that the worker does not pay.
TEST(WorkerGovernor, ARampingLoadIsNotJudgedUntilItIsSteady) {
  WorkerGovernor::Settings s;
  Harness h(2, s);
  const Load ramp = [](size_t n, uint64_t now_usec) {
    const double t = static_cast<double>(now_usec - 1'000'000) / 1e6;
    const double one = std::min(40'000.0, 20'000.0 + 20'000.0 * t / 3);
    return n == 1 ? Shape{one, 0.95} : Shape{one * 0.8, 0.9};
  };
  h.run(12, ramp);
  EXPECT_EQ(h.active(), 1u) << h.governor().reason();
  EXPECT_LE(h.ticks_at(2), s.trial_segments / 2 * (s.settle_ticks + s.trial_ticks))
      << "one failed trial at most";
}

// The load stops for a moment during the trial (a client between two
// runs): the workers idle and throughput collapses, which is no verdict on
// the worker count. It goes back undecided and tries again as soon as the
// load is steady, not after a backoff.
TEST(WorkerGovernor, ALullDuringTheTrialDecidesNothing) {
  Harness h(2);
  bool lull_seen = false;
  const Load gap = [&](size_t n, uint64_t now_usec) {
    // The first trial's ticks at two workers (the clock's first 5 s) see
    // no load.
    if (n == 2 && now_usec < 5'000'000) {
      lull_seen = true;
      return Shape{500, 0.02};
    }
    return saturating(36'000, 0.19)(n, now_usec);
  };
  // The trial's ticks are lulls, left out until max_lull_ticks of them
  // end it.
  h.run(4, gap);
  ASSERT_TRUE(lull_seen);
  EXPECT_EQ(h.active(), 1u) << h.governor().reason();
  EXPECT_NE(h.governor().reason().find("undecided"), std::string::npos) << h.governor().reason();
  // Well within the 20 s a failed growth would wait.
  h.run(kToVerdict + 1, gap);
  EXPECT_EQ(h.active(), 2u) << h.governor().reason();
}

// Clients that pause between two runs (a benchmark's warm-up, then its
// measured run) for less than max_lull_ticks during a trial: the pause's
// ticks are left out, and the trial goes on over the next run's.
TEST(WorkerGovernor, AShortPauseDuringTheTrialIsLeftOut) {
  WorkerGovernor::Settings s;
  s.keep_at_once_share = -1;  // the alternating trial's handling is read here
  Harness h(2, s);
  int ticks_at_two = 0;
  const Load paused = [&](size_t n, uint64_t) {
    if (n == 1) return Shape{40'000, 0.95};
    // After the settling and one tick of the trial, 1.25 s of nothing.
    const int t = ticks_at_two++;
    if (t >= s.settle_ticks + 1 && t < s.settle_ticks + 1 + 5) return Shape{300, 0.01};
    return Shape{47'600, 0.8};
  };
  h.run(kToVerdict + 2, paused);
  EXPECT_EQ(h.active(), 2u) << h.governor().reason();
  EXPECT_NE(h.governor().reason().find("kept"), std::string::npos) << h.governor().reason();
  EXPECT_NE(h.governor().reason().find("alternating for 6 s"), std::string::npos)
      << "judged, not ended: " << h.governor().reason();
}

// One worker's ticks open with `partial` ones, then `saturated` ones at
// those rates (the harness's first tick only starts the count: its
// figures are not read), then run at `one_rps`, saturated; two workers
// give `two`.
Load opening_then(std::vector<Shape> partial, const std::vector<double>& saturated, double one_rps,
                  Shape two) {
  for (double rps : saturated) partial.push_back({rps, 0.95});
  auto ticks = std::make_shared<size_t>(0);
  return [=](size_t n, uint64_t) {
    if (n == 2) return two;
    const size_t t = (*ticks)++;
    return t < partial.size() ? partial[t] : Shape{one_rps, 0.95};
  };
}

// A load's first tick is partial (it began within the tick), and the next
// few run fast: together they can pass the baseline's steadiness test. No
// baseline holds such a tick: this gain of 12% over the steady throughput
// is kept after the trial's first six seconds.
TEST(WorkerGovernor, ALoadsPartialFirstTickIsNoPartOfTheBaseline) {
  Harness h(2);
  h.run(kToVerdict + 1,
        opening_then({}, {0, 7'600, 62'800, 63'700, 66'900, 51'700, 48'900, 50'500, 51'500}, 50'000,
                     {58'500, 0.8}));
  EXPECT_EQ(h.active(), 2u) << h.governor().reason();
  EXPECT_NE(h.governor().reason().find("alternating for 6 s"), std::string::npos)
      << h.governor().reason();
}

// The same from the bench's log: the partial tick (23,037 requests/s, the
// workers 51% busy) sat among noisy saturated ones and passed the halves'
// test; with it the baseline read 43,773 instead of 46,735, and a second
// worker worth 1% read as more. A baseline's ticks are each saturated.
TEST(WorkerGovernor, AnUnsaturatedTickIsNoPartOfTheBaseline) {
  Harness h(2);
  h.run(kToVerdict + 1, opening_then({{0, 0}, {23'037, 0.51}},
                                     {49'819, 49'970, 50'493, 42'970, 43'324, 41'991, 48'580},
                                     46'735, {46'735 * 1.01, 0.8}));
  ASSERT_EQ(h.max_seen(), 2u) << "it must have tried";
  EXPECT_EQ(h.active(), 1u) << h.governor().reason();
}

// The ticks on either side of a pause are partial: the load stopped, or
// started again, within them (memcaslap's warm-up ending and its measured
// run beginning during a trial). Both are left out with the pause: here a
// growth worth 15% is kept at the first reading; with the partial ones
// counted its first second read -16%.
TEST(WorkerGovernor, TheTicksAroundAPauseAreLeftOutWithIt) {
  WorkerGovernor::Settings s;
  Harness h(2, s);
  int two = 0;
  h.run(kToVerdict + 2, [&](size_t n, uint64_t) {
    if (n == 1) return Shape{40'000, 0.95};
    const int t = two++ - s.settle_ticks;  // the trial's ticks at two from 0
    if (t == 1) return Shape{21'000, 0.4};
    if (t >= 2 && t < 6) return Shape{300, 0.01};
    if (t == 6) return Shape{22'000, 0.45};
    return Shape{46'000, 0.8};
  });
  EXPECT_EQ(h.active(), 2u) << h.governor().reason();
  EXPECT_NE(h.governor().reason().find("+15.0%"), std::string::npos) << h.governor().reason();
}

// One client thread's connections all arrive on its CPU, so none moves to
// a second worker, which serves nothing; throughput swings by a tenth from
// one second to the next all the same. A trial that reads such a swing as
// a gain of 12% must not keep the idle worker: the clients' next
// connections would spread over both (memcaslap 1 x 32: 0.65x of one).
Load one_thread_clients(double one_rps, double trial_reading) {
  return [=](size_t n, uint64_t) {
    if (n == 1) return Shape{one_rps, 0.95};
    return Shape{one_rps * trial_reading, 0.95, 0.0};
  };
}

TEST(WorkerGovernor, AGrowthNoConnectionCouldReachIsNotKeptByLuck) {
  Harness h(2);
  h.set_connections(32);
  h.run(5, one_thread_clients(47'000, 1.12));
  EXPECT_EQ(h.active(), 1u) << h.governor().reason();
  ASSERT_EQ(h.max_seen(), 2u) << "it must have tried";
  EXPECT_NE(h.governor().reason().find("served 0.0% of the requests"), std::string::npos)
      << h.governor().reason();
  // The machine slows down by a third with the same clients connected: a
  // change of throughput beyond load_change, which does not move their
  // connections either. No new trial before the backoff ends.
  h.reset_counts();
  h.run(10, one_thread_clients(47'000 * 0.66, 1.12));
  EXPECT_EQ(h.ticks_at(2), 0) << h.governor().reason();
  // Half the clients leave, the rest still saturating the worker: the same
  // clients, fewer of them. No new trial either.
  h.set_connections(16);
  h.run(4, one_thread_clients(47'000, 1.12));
  EXPECT_EQ(h.ticks_at(2), 0) << h.governor().reason();
}

// The same trial, where the second worker took a fair share of the
// requests: a gain of 12% is kept (the rule above is about placement, not
// about distrusting gains).
// Clients whose connections a second worker can take: it serves
// `newcomer_share` of the requests, and throughput reads `gain` more.
Load movable_clients(double one_rps, double gain, double newcomer_share) {
  return [=](size_t n, uint64_t) {
    return n == 1 ? Shape{one_rps, 0.95} : Shape{one_rps * (1 + gain), 0.8, newcomer_share};
  };
}

TEST(WorkerGovernor, AGrowthWhoseNewcomerServesIsJudgedOnThroughput) {
  Harness h(2);
  h.set_connections(32);
  h.run(kToVerdict, movable_clients(47'000, 0.12, 0.45));
  EXPECT_EQ(h.active(), 2u) << h.governor().reason();
}

// After such a failure, more clients connect (a second client thread, say):
// their connections are the change that counts, and they are tried at once.
TEST(WorkerGovernor, MoreClientsAfterAGrowthNoConnectionReachedAreTriedAgain) {
  Harness h(2);
  h.set_connections(32);
  h.run(5, one_thread_clients(47'000, 1.12));
  ASSERT_EQ(h.active(), 1u) << h.governor().reason();
  h.set_connections(64);
  h.run(kToVerdict, movable_clients(47'000, 0.19, 0.5));
  EXPECT_EQ(h.active(), 2u) << h.governor().reason();
}

TEST(WorkerGovernor, AChangedLoadIsTriedAgainOnceItHolds) {
  WorkerGovernor::Settings s;
  Harness h(2, s);
  h.run(kToVerdict, saturating(47'000, -0.22));
  ASSERT_EQ(h.active(), 1u);
  // The load changes (more clients, fewer requests each: a second worker
  // now pays) and stays: no waiting out the 20 s backoff, only the hold.
  const double hold = static_cast<double>(s.load_change_hold_usec) / 1e6;
  h.reset_counts();
  h.run(hold, saturating(30'000, 0.19));
  EXPECT_EQ(h.ticks_at(2), 0) << "not before it has held: " << h.governor().reason();
  // 2 s to read it steady, the hold, the trial.
  h.run(kToVerdict, saturating(30'000, 0.19));
  EXPECT_EQ(h.active(), 2u) << h.governor().reason();
}

// The same clients' throughput at one worker drifts by a third and back
// within seconds, more than load_change, several times over: no new load,
// so the growth that did not pay is not tried again before its backoff.
TEST(WorkerGovernor, TheSameLoadsDriftIsNoNewLoad) {
  WorkerGovernor::Settings s;
  Harness h(2, s);
  h.run(kToVerdict, saturating(47'000, -0.22));
  ASSERT_EQ(h.active(), 1u);
  ASSERT_EQ(h.max_seen(), 2u) << "it must have tried";
  // Up by 32% for 4.5 s, twice, with a second between where the clients
  // slow down and leave the worker unsaturated: each stretch up is steady
  // and saturating after 2 s, and read changed for 2.5 s, under the hold.
  // (Together they are more than the hold: the second worker would be
  // tried if the hold did not start again after the second's break.)
  ASSERT_GT(s.load_change_hold_usec, 2'500'000u);
  ASSERT_LT(s.load_change_hold_usec, 5'000'000u);
  const Load slower = [](size_t, uint64_t) { return Shape{40'000, 0.6}; };
  h.reset_counts();
  h.run(4.5, saturating(62'000, -0.22));
  h.run(1, slower);
  h.run(4.5, saturating(62'000, -0.22));
  EXPECT_EQ(h.ticks_at(2), 0) << h.governor().reason();
}

// The same clients stop for a moment and start again (a benchmark's runs,
// a batch job's passes): the pause is no new load, so the growth that did
// not pay is not tried again before its backoff ends.
TEST(WorkerGovernor, APauseBetweenRunsOfTheSameLoadKeepsTheBackoff) {
  Harness h(2);
  h.run(kToVerdict, saturating(47'000, -0.22));
  ASSERT_EQ(h.active(), 1u);
  ASSERT_EQ(h.max_seen(), 2u) << "it must have tried";
  const Load idle = [](size_t, uint64_t) { return Shape{0, 0.0}; };
  for (int pass = 0; pass < 2; ++pass) {
    h.reset_counts();
    h.run(1.5, idle);
    h.run(6, saturating(47'000, -0.22));
    EXPECT_EQ(h.ticks_at(2), 0) << "pass " << pass << ": " << h.governor().reason();
  }
}

// 32 connected clients for which one worker more did not pay: the
// governor has tried it and holds the verdict.
void fail_a_growth_with_32_clients(Harness& h) {
  h.set_connections(32);
  h.run(kToVerdict, saturating(47'000, -0.22));
  ASSERT_EQ(h.active(), 1u);
  ASSERT_EQ(h.max_seen(), 2u) << "it must have tried";
}

// `seconds` of no requests, with `connections` open meanwhile; then the 32
// clients again, with `gain` from a second worker.
void pause_then_load(Harness& h, uint64_t connections, double seconds, double gain) {
  const Load idle = [](size_t, uint64_t) { return Shape{0, 0.0}; };
  h.set_connections(connections);
  h.reset_counts();
  h.run(seconds, idle);
  h.set_connections(32);
  h.run(kToVerdict, saturating(47'000, gain));
}

// The same, with the clients' connections held open through the pause
// (pooled clients that stop sending): the backoff holds.
TEST(WorkerGovernor, AnIdlePauseOfConnectedClientsKeepsTheBackoff) {
  Harness h(2);
  fail_a_growth_with_32_clients(h);
  pause_then_load(h, 32, 3, -0.22);
  EXPECT_EQ(h.ticks_at(2), 0) << h.governor().reason();
}

// Every client the failed growth was judged with went away; new ones came
// with the same throughput at one worker but a shape that a second worker
// serves better (memcaslap's 1 x 32 connections, then 2 x 16): they are
// judged afresh, not held to the old clients' verdict.
TEST(WorkerGovernor, NewClientsAfterAllLeftAreJudgedAfresh) {
  Harness h(2);
  fail_a_growth_with_32_clients(h);
  pause_then_load(h, 0, 3, 0.13);
  EXPECT_EQ(h.active(), 2u) << h.governor().reason();
}

// Clients that close and reconnect at once (a benchmark's warm-up run,
// then its measured run of the same shape; a client restarting) are the
// same clients: the verdict holds.
TEST(WorkerGovernor, ClientsThatReconnectAtOnceKeepTheBackoff) {
  Harness h(2);
  fail_a_growth_with_32_clients(h);
  pause_then_load(h, 0, 0.5, -0.22);
  EXPECT_EQ(h.ticks_at(2), 0) << h.governor().reason();
}

// The clients close just as the verdict comes (the run's end), then the
// same number connect at once for the next run: they are the same clients,
// not more of them, and the verdict holds.
TEST(WorkerGovernor, ClientsClosingAsTheVerdictComesAreTheSameWhenTheyReconnect) {
  WorkerGovernor::Settings s;
  Harness h(2, s);
  h.set_connections(32);
  int ticks_at_two = 0;
  h.run(5, [&](size_t n, uint64_t now) {
    if (n == 2 && ++ticks_at_two == s.settle_ticks + s.trial_ticks) h.set_connections(6);
    return one_thread_clients(47'000, 1.12)(n, now);
  });
  ASSERT_EQ(h.max_seen(), 2u) << "it must have tried";
  ASSERT_EQ(h.active(), 1u) << h.governor().reason();
  pause_then_load(h, 0, 1, 0.12);
  EXPECT_EQ(h.ticks_at(2), 0) << h.governor().reason();
}

TEST(WorkerGovernor, DoesNotFlapUnderASteadyLoadAtTheThreshold) {
  WorkerGovernor::Settings s;
  Harness h(2, s);
  // Busy right at the threshold, jittering across it; more workers change
  // nothing.
  int t = 0;
  const int changes = h.run(600, [&](size_t n, uint64_t) {
    const double jitter = (t++ % 2) ? 0.01 : -0.01;
    return Shape{40'000, (n == 1 ? s.grow_busy : s.grow_busy / 2) + jitter};
  });
  EXPECT_LE(changes, 2 * 6);
  EXPECT_GE(h.ticks_at(1), h.ticks_at(2) * 50);
}

TEST(WorkerGovernor, ShrinksAfterSustainedIdleness) {
  Harness h(2);
  h.run(kToVerdict, saturating(36'000, 0.19));
  ASSERT_EQ(h.active(), 2u);
  // A second of quiet is not enough.
  h.run(1, [](size_t, uint64_t) { return Shape{100, 0.01}; });
  EXPECT_EQ(h.active(), 2u);
  h.run(10, [](size_t, uint64_t) { return Shape{100, 0.01}; });
  EXPECT_EQ(h.active(), 1u) << h.governor().reason();
}

TEST(WorkerGovernor, AShrinkThatCostsThroughputIsUndone) {
  Harness h(2);
  h.run(kToVerdict, saturating(36'000, 0.19));
  ASSERT_EQ(h.active(), 2u);
  // Light by busy share, yet one worker serves 30% less (a latency-bound
  // load): back to two, and no new shrink soon.
  const int changes = h.run(15, [](size_t n, uint64_t) {
    return n == 2 ? Shape{20'000, 0.15} : Shape{14'000, 0.3};
  });
  EXPECT_EQ(h.active(), 2u) << h.governor().reason();
  EXPECT_LE(changes, 2);
}

TEST(WorkerGovernor, NeverExceedsTheMaximum) {
  WorkerGovernor::Settings s;
  s.max_workers = 3;
  Harness h(8, s);
  // Every worker more pays, forever.
  h.run(120, [](size_t n, uint64_t) { return Shape{10'000.0 * static_cast<double>(n), 0.99}; });
  EXPECT_EQ(h.active(), 3u);
  EXPECT_EQ(h.max_seen(), 3u);

  WorkerGovernor::Settings one;
  one.max_workers = 1;
  Harness single(1, one);
  single.run(60, [](size_t n, uint64_t) { return Shape{10'000.0 * static_cast<double>(n), 0.99}; });
  EXPECT_EQ(single.max_seen(), 1u);
}

TEST(WorkerGovernor, GrowsStepByStepWhileEachStepPays) {
  WorkerGovernor::Settings s;
  s.max_workers = 4;
  Harness h(4, s);
  // Up to three workers pay; a fourth does not.
  h.run(60, [](size_t n, uint64_t) {
    const double rps = 10'000.0 * static_cast<double>(std::min<size_t>(n, 3));
    return Shape{rps, 0.95};
  });
  EXPECT_EQ(h.active(), 3u) << h.governor().reason();
}

// An eleventh worker's even share is 9% of the requests: that is a fair
// share of a large fleet's, not a placement that failed (which a fixed 10%
// made it, holding a 12-core host at ten workers).
TEST(WorkerGovernor, ManyWorkersGrowPastTenWhenEachPays) {
  WorkerGovernor::Settings s;
  s.max_workers = 12;
  Harness h(12, s);
  h.run(120, [](size_t n, uint64_t) { return Shape{10'000.0 * static_cast<double>(n), 0.95}; });
  EXPECT_EQ(h.active(), 12u) << h.governor().reason();
}

}  // namespace
}  // namespace memshard::proxy
