// WarningThrottle (proxy/support/warning_throttle.h) on a real libevent
// loop: the first warning is reported at once, those of the following
// second are summed into one report when it is over, none is lost, and a
// quiet second lets the next one through at once again.
//
// "The following second" is checked against marks (TestLoop::Mark) armed
// next to the throttle's own timer, never by measuring time.
#include "proxy/support/warning_throttle.h"

#include <gtest/gtest.h>

#include <functional>
#include <memory>
#include <utility>
#include <vector>

#include "tests/proxy/support/test_loop.h"

namespace memshard::proxy {
namespace {

using Mark = test_loop::TestLoop::Mark;

constexpr long kSecond = 1'000'000;  // usec: the throttle's period

// The owner of a throttle: counts what happened, and each report takes
// the count since the last one, as the proxy's warnings do.
class Owner {
 public:
  explicit Owner(test_loop::TestLoop& loop) : throttle_(loop.base(), [this] { on_report(); }) {}

  void happened(int times = 1) {
    for (int i = 0; i < times; ++i) {
      ++count_;
      throttle_.note();
    }
  }
  const std::vector<int>& reports() const { return reports_; }
  // Runs once after the next report (in its callback), to arm marks at
  // the moment the throttle's timer starts its second.
  std::function<void()> after_report;

 private:
  void on_report() {
    reports_.push_back(count_);
    count_ = 0;
    if (after_report) std::exchange(after_report, nullptr)();
  }
  int count_ = 0;
  std::vector<int> reports_;
  WarningThrottle throttle_;
};

class WarningThrottleTest : public ::testing::Test {
 protected:
  test_loop::TestLoop loop_;
};

TEST_F(WarningThrottleTest, TheFirstWarningIsReportedAtOnce) {
  Owner owner(loop_);
  owner.happened();
  EXPECT_EQ(owner.reports(), std::vector<int>{1});  // inside note(), no loop turn needed
}

TEST_F(WarningThrottleTest, WarningsOfTheNextSecondAreSummedIntoOneReportWhenItEnds) {
  Owner owner(loop_);
  std::unique_ptr<Mark> half, past;
  size_t reports_at_half = 0;
  std::vector<int> reports_past;
  // Marks armed as the first report starts the throttle's second: halfway
  // through it (two more warnings then), and a little after its end.
  owner.after_report = [&] {
    half = std::make_unique<Mark>(loop_, kSecond / 2, [&] {
      reports_at_half = owner.reports().size();
      owner.happened(2);
    });
    past = std::make_unique<Mark>(loop_, kSecond + kSecond / 10,
                                  [&] { reports_past = owner.reports(); });
  };
  owner.happened();
  ASSERT_EQ(owner.reports(), std::vector<int>{1});
  owner.happened(5);
  EXPECT_EQ(owner.reports(), std::vector<int>{1});  // not one report each
  ASSERT_TRUE(half && past);
  ASSERT_TRUE(loop_.run_until(*past));
  EXPECT_EQ(reports_at_half, 1u);  // half a second in: still waiting
  // One report of all seven, when the second was over; none lost.
  EXPECT_EQ(reports_past, (std::vector<int>{1, 7}));
}

TEST_F(WarningThrottleTest, WhileWarningsKeepComingEachSecondEndsWithOneReport) {
  Owner owner(loop_);
  // At each report, for three seconds: `round` warnings a tenth into the
  // second it begins, one more nine tenths in, and how many reports had
  // come by then.
  std::unique_ptr<Mark> early, almost;
  std::vector<size_t> reports_at_almost;
  int round = 0;
  std::function<void()> arm_marks = [&] {
    ++round;
    early = std::make_unique<Mark>(loop_, kSecond / 10, [&, n = round] { owner.happened(n); });
    almost = std::make_unique<Mark>(loop_, kSecond * 9 / 10, [&] {
      reports_at_almost.push_back(owner.reports().size());
      owner.happened();
    });
    if (round < 3) owner.after_report = arm_marks;
  };
  owner.after_report = arm_marks;
  owner.happened();
  ASSERT_TRUE(loop_.run_until([&] { return owner.reports().size() == 4; }));
  EXPECT_EQ(owner.reports(), (std::vector<int>{1, 2, 3, 4}));
  EXPECT_EQ(reports_at_almost, (std::vector<size_t>{1, 2, 3}));  // none before its second ended
}

TEST_F(WarningThrottleTest, AfterAQuietSecondTheNextWarningIsReportedAtOnce) {
  Owner owner(loop_);
  std::unique_ptr<Mark> past;
  owner.after_report = [&] { past = std::make_unique<Mark>(loop_, kSecond + kSecond / 10); };
  owner.happened();
  ASSERT_TRUE(past);
  // Nothing comes during the second: its end reports nothing...
  ASSERT_TRUE(loop_.run_until(*past));
  EXPECT_EQ(owner.reports(), std::vector<int>{1});
  // ...and starts no other, so the next warning goes through at once.
  owner.happened();
  EXPECT_EQ(owner.reports(), (std::vector<int>{1, 1}));
}

TEST_F(WarningThrottleTest, EachThrottleKeepsItsOwnSecond) {
  Owner a(loop_), b(loop_);
  a.happened();
  a.happened();
  b.happened();  // not held back by a's second
  EXPECT_EQ(a.reports(), std::vector<int>{1});
  EXPECT_EQ(b.reports(), std::vector<int>{1});
  ASSERT_TRUE(loop_.run_until([&] { return a.reports().size() == 2; }));
  EXPECT_EQ(a.reports(), (std::vector<int>{1, 1}));
  EXPECT_EQ(b.reports(), std::vector<int>{1});
}

}  // namespace
}  // namespace memshard::proxy
