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
  // Marks armed as the first report starts the throttle's second: half of
  // it, and a little more than all of it.
  owner.after_report = [&] {
    half = std::make_unique<Mark>(loop_, kSecond / 2);
    past = std::make_unique<Mark>(loop_, kSecond + kSecond / 10);
  };
  owner.happened();
  ASSERT_EQ(owner.reports(), std::vector<int>{1});
  owner.happened(5);
  EXPECT_EQ(owner.reports(), std::vector<int>{1});  // not one report each
  ASSERT_TRUE(half && past);
  ASSERT_TRUE(loop_.run_until(*half));
  owner.happened(2);
  EXPECT_EQ(owner.reports(), std::vector<int>{1});  // half a second in: still waiting
  ASSERT_TRUE(loop_.run_until(*past));
  // One report of all seven, none lost.
  EXPECT_EQ(owner.reports(), (std::vector<int>{1, 7}));
}

TEST_F(WarningThrottleTest, WhileWarningsKeepComingEachSecondEndsWithOneReport) {
  Owner owner(loop_);
  std::unique_ptr<Mark> almost;  // nine tenths into the second the last report began
  auto arm_mark = [&] { almost = std::make_unique<Mark>(loop_, kSecond * 9 / 10); };
  owner.after_report = arm_mark;
  owner.happened();
  for (size_t round = 1; round <= 3; ++round) {
    ASSERT_TRUE(almost);
    owner.happened(static_cast<int>(round));
    ASSERT_TRUE(loop_.run_until(*almost));
    EXPECT_EQ(owner.reports().size(), round) << "a report came before its second was over";
    owner.happened();
    owner.after_report = arm_mark;
    ASSERT_TRUE(loop_.run_until([&] { return owner.reports().size() == round + 1; }));
  }
  EXPECT_EQ(owner.reports(), (std::vector<int>{1, 2, 3, 4}));
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
