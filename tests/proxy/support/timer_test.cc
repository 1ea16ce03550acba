// Timer (proxy/support/timer.h) on a real libevent loop: one-shot and
// repeating timers, re-arming, cancel, fire_soon, armed(), destruction.
//
// Nothing asserts how long a timer took. What happens "meanwhile" is
// checked against another timer of the same loop (TestLoop::pass_usec):
// libevent runs timers in the order of their deadlines.
#include "proxy/support/timer.h"

#include <gtest/gtest.h>

#include <memory>

#include "tests/proxy/support/test_loop.h"

namespace memshard::proxy {
namespace {

constexpr long kLater = 30'000;                 // usec: long past the timers armed for 0 or 1 ms
constexpr uint64_t kHour = 3600ull * 1000'000;  // usec: never, as far as a test can tell

class TimerTest : public ::testing::Test {
 protected:
  test_loop::TestLoop loop_;
  int fired_ = 0;
};

TEST_F(TimerTest, AOneShotFiresOnceAndIsThenNoLongerArmed) {
  Timer timer(loop_.base(), [this] { ++fired_; });
  EXPECT_FALSE(timer.armed());
  timer.arm_usec(1000);
  EXPECT_TRUE(timer.armed());
  ASSERT_TRUE(loop_.run_until([&] { return fired_ == 1; }));
  EXPECT_FALSE(timer.armed());
  ASSERT_TRUE(loop_.pass_usec(kLater));
  EXPECT_EQ(fired_, 1);
}

TEST_F(TimerTest, ArmedForZeroItFiresOnTheLoopsNextTurn) {
  Timer timer(loop_.base(), [this] { ++fired_; });
  timer.arm_usec(0);
  EXPECT_EQ(fired_, 0);  // not from inside arm_usec
  loop_.turn();
  EXPECT_EQ(fired_, 1);
}

TEST_F(TimerTest, ArmMsCountsMilliseconds) {
  // A timer armed for 40 ms has not fired when a mark of 20 ms armed just
  // before it fires, and has when a mark of 60 ms armed just after it does.
  Timer timer(loop_.base(), [this] { ++fired_; });
  int fired_at_20 = -1, fired_at_60 = -1;
  bool armed_at_20 = false;
  test_loop::TestLoop::Mark at_20(loop_, 20'000, [&] {
    fired_at_20 = fired_;
    armed_at_20 = timer.armed();
  });
  timer.arm_ms(40);
  test_loop::TestLoop::Mark at_60(loop_, 60'000, [&] { fired_at_60 = fired_; });
  ASSERT_TRUE(loop_.run_until(at_60));
  EXPECT_EQ(fired_at_20, 0);
  EXPECT_TRUE(armed_at_20);
  EXPECT_EQ(fired_at_60, 1);
}

TEST_F(TimerTest, ArmingAgainReplacesTheEarlierTime) {
  Timer timer(loop_.base(), [this] { ++fired_; });
  // Sooner than before: fires once, at the new time, and the old time is
  // gone.
  timer.arm_usec(kHour);
  timer.arm_usec(0);
  ASSERT_TRUE(loop_.run_until([&] { return fired_ == 1; }));
  EXPECT_FALSE(timer.armed());
  // Later than before: the earlier time is gone too.
  timer.arm_usec(0);
  timer.arm_usec(kHour);
  ASSERT_TRUE(loop_.pass_usec(kLater));
  EXPECT_EQ(fired_, 1);
  EXPECT_TRUE(timer.armed());
}

TEST_F(TimerTest, CancelKeepsAnArmedTimerFromFiring) {
  Timer timer(loop_.base(), [this] { ++fired_; });
  timer.cancel();  // not armed: nothing to do
  EXPECT_FALSE(timer.armed());
  timer.arm_usec(1000);
  timer.cancel();
  EXPECT_FALSE(timer.armed());
  ASSERT_TRUE(loop_.pass_usec(kLater));
  EXPECT_EQ(fired_, 0);
  // It can be armed again after a cancel.
  timer.arm_usec(0);
  EXPECT_TRUE(loop_.run_until([&] { return fired_ == 1; }));
}

TEST_F(TimerTest, ARepeatingTimerFiresEveryPeriodUntilCancelled) {
  Timer tick(
      loop_.base(), [this] { ++fired_; }, /*repeating=*/true);
  tick.arm_usec(1000);
  ASSERT_TRUE(loop_.run_until([&] { return fired_ >= 3; })) << fired_;
  EXPECT_TRUE(tick.armed());  // still, after firing
  tick.cancel();
  EXPECT_FALSE(tick.armed());
  const int at_cancel = fired_;
  ASSERT_TRUE(loop_.pass_usec(kLater));
  EXPECT_EQ(fired_, at_cancel);
}

TEST_F(TimerTest, ARepeatingTimerCanCancelItselfFromItsCallback) {
  std::unique_ptr<Timer> tick;
  tick = std::make_unique<Timer>(
      loop_.base(),
      [&] {
        if (++fired_ == 3) tick->cancel();
      },
      true);
  tick->arm_usec(1000);
  ASSERT_TRUE(loop_.run_until([&] { return fired_ == 3; }));
  ASSERT_TRUE(loop_.pass_usec(kLater));
  EXPECT_EQ(fired_, 3);
  EXPECT_FALSE(tick->armed());
}

TEST_F(TimerTest, AOneShotCanArmItselfAgainFromItsCallback) {
  // As WarningThrottle and every retry loop do.
  std::unique_ptr<Timer> timer;
  timer = std::make_unique<Timer>(loop_.base(), [&] {
    if (++fired_ < 5) timer->arm_usec(500);
  });
  timer->arm_usec(0);
  ASSERT_TRUE(loop_.run_until([&] { return fired_ == 5; }));
  ASSERT_TRUE(loop_.pass_usec(kLater));
  EXPECT_EQ(fired_, 5);
  EXPECT_FALSE(timer->armed());
}

TEST_F(TimerTest, FireSoonRunsTheCallbackOnTheNextTurnUnarmed) {
  Timer timer(loop_.base(), [this] { ++fired_; });
  timer.fire_soon();
  EXPECT_EQ(fired_, 0);  // deferred, not run inside fire_soon
  loop_.turn();
  EXPECT_EQ(fired_, 1);
  EXPECT_FALSE(timer.armed());
  ASSERT_TRUE(loop_.pass_usec(kLater));
  EXPECT_EQ(fired_, 1);
}

TEST_F(TimerTest, FireSoonTwiceBeforeTheLoopTurnsRunsOnce) {
  // A worker retires several clients in one callback and reaps them all in
  // one go.
  Timer timer(loop_.base(), [this] { ++fired_; });
  timer.fire_soon();
  timer.fire_soon();
  loop_.turn();
  ASSERT_TRUE(loop_.pass_usec(kLater));
  EXPECT_EQ(fired_, 1);
}

TEST_F(TimerTest, FireSoonOnAnArmedOneShotFiresItOnce) {
  Timer timer(loop_.base(), [this] { ++fired_; });
  timer.arm_usec(kHour);
  timer.fire_soon();
  loop_.turn();
  EXPECT_EQ(fired_, 1);
  // A one-shot fires once per arming: this firing was it.
  EXPECT_FALSE(timer.armed());
}

TEST_F(TimerTest, FireSoonOnARepeatingTimerKeepsItsPeriod) {
  Timer tick(
      loop_.base(), [this] { ++fired_; }, true);
  tick.arm_usec(kHour);
  tick.fire_soon();
  loop_.turn();
  EXPECT_EQ(fired_, 1);
  EXPECT_TRUE(tick.armed());
}

TEST_F(TimerTest, CancelAlsoTakesBackAFireSoon) {
  Timer timer(loop_.base(), [this] { ++fired_; });
  timer.fire_soon();
  timer.cancel();
  ASSERT_TRUE(loop_.pass_usec(kLater));
  EXPECT_EQ(fired_, 0);
}

TEST_F(TimerTest, ADestroyedTimerNeverFires) {
  auto timer = std::make_unique<Timer>(loop_.base(), [this] { ++fired_; });
  timer->arm_usec(0);
  auto soon = std::make_unique<Timer>(loop_.base(), [this] { ++fired_; });
  soon->fire_soon();
  timer.reset();
  soon.reset();
  ASSERT_TRUE(loop_.pass_usec(kLater));
  EXPECT_EQ(fired_, 0);
}

}  // namespace
}  // namespace memshard::proxy
