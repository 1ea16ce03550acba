// Mailbox (proxy/support/mailbox.h): posts from other threads run on the
// loop's thread, in the order each thread posted them, and wake a loop that
// has nothing else to wake it; run_pending() after the loop's end; tasks
// that post tasks; pending tasks dropped with the mailbox.
//
// The loop thread's loop has no timer of its own, so only the mailbox can
// wake it. libevent's thread support lets the test stop it from outside
// (event_base_loopbreak) even if the mailbox never does.
#include "proxy/support/mailbox.h"

#include <event2/event.h>
#include <event2/thread.h>
#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <functional>
#include <memory>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "tests/proxy/support/test_loop.h"

namespace memshard::proxy {
namespace {

using Clock = std::chrono::steady_clock;

// Polls `done` from the test's thread until it holds, within a deadline
// and a poll budget.
bool eventually(const std::function<bool()>& done) {
  const auto until = Clock::now() + test_loop::kDeadline;
  for (int i = 0; i < 20'000 && Clock::now() < until; ++i) {
    if (done()) return true;
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
  }
  return done();
}

// A loop running on a thread of its own, blocked in its wait until
// something wakes it.
class LoopThread {
 public:
  LoopThread() {
    evthread_use_pthreads();
    base_ = event_base_new();
    mailbox_ = std::make_unique<Mailbox>(base_);
    // The way out, made active from the test's thread: an active event
    // waits for the loop even if the loop has not begun yet (a loopbreak
    // made before it begins would be forgotten), and libevent's thread
    // support wakes a loop that waits.
    exit_ = event_new(
        base_, -1, 0,
        [](evutil_socket_t, short, void* base) {
          event_base_loopbreak(static_cast<event_base*>(base));
        },
        base_);
    thread_ = std::thread([this] { event_base_dispatch(base_); });
    id_ = thread_.get_id();
  }
  ~LoopThread() {
    stop();
    mailbox_.reset();
    event_free(exit_);
    event_base_free(base_);
  }
  LoopThread(const LoopThread&) = delete;
  LoopThread& operator=(const LoopThread&) = delete;

  Mailbox& mailbox() { return *mailbox_; }
  std::thread::id id() const { return id_; }
  // Ends the loop and joins its thread; the mailbox stays, for
  // run_pending().
  void stop() {
    if (!thread_.joinable()) return;
    event_active(exit_, EV_TIMEOUT, 0);
    thread_.join();
  }

 private:
  event_base* base_ = nullptr;
  std::unique_ptr<Mailbox> mailbox_;
  event* exit_ = nullptr;
  std::thread thread_;
  std::thread::id id_;
};

TEST(Mailbox, APostFromAnotherThreadWakesTheLoopAndRunsOnItsThread) {
  LoopThread loop;
  std::thread::id loop_id = loop.id();
  std::atomic<bool> ran{false};
  std::thread::id ran_on;
  loop.mailbox().post([&] {
    ran_on = std::this_thread::get_id();
    ran = true;
  });
  ASSERT_TRUE(eventually([&] { return ran.load(); })) << "the post did not wake the loop";
  EXPECT_EQ(ran_on, loop_id);
  EXPECT_NE(ran_on, std::this_thread::get_id());
  // Again, once the loop has gone back to sleep: every post wakes it.
  ran = false;
  loop.mailbox().post([&] { ran = true; });
  EXPECT_TRUE(eventually([&] { return ran.load(); }));
}

TEST(Mailbox, PostsFromManyThreadsRunInEachThreadsOrder) {
  constexpr int kPosters = 4;
  constexpr int kPosts = 2000;
  LoopThread loop;
  std::thread::id loop_id = loop.id();
  // Touched only on the loop's thread (checked), read after `done`.
  std::vector<std::vector<int>> seen(kPosters);
  std::atomic<int> done{0};
  std::atomic<int> off_thread{0};
  std::vector<std::thread> posters;
  for (int p = 0; p < kPosters; ++p) {
    posters.emplace_back([&, p] {
      for (int i = 0; i < kPosts; ++i) {
        loop.mailbox().post([&, p, i] {
          if (std::this_thread::get_id() != loop_id) ++off_thread;
          seen[static_cast<size_t>(p)].push_back(i);
          ++done;
        });
      }
    });
  }
  for (std::thread& t : posters) t.join();
  ASSERT_TRUE(eventually([&] { return done.load() == kPosters * kPosts; })) << done.load();
  EXPECT_EQ(off_thread.load(), 0);
  for (int p = 0; p < kPosters; ++p) {
    const auto& got = seen[static_cast<size_t>(p)];
    ASSERT_EQ(got.size(), static_cast<size_t>(kPosts));
    for (int i = 0; i < kPosts; ++i) ASSERT_EQ(got[static_cast<size_t>(i)], i) << "poster " << p;
  }
}

TEST(Mailbox, RunPendingRunsWhatTheEndedLoopLeftInOrderOnTheCaller) {
  LoopThread loop;
  loop.stop();  // the loop's thread has ended (joined)
  std::vector<int> order;
  std::thread::id ran_on;
  std::thread poster([&] {
    for (int i = 0; i < 5; ++i) loop.mailbox().post([&, i] { order.push_back(i); });
    loop.mailbox().post([&] { ran_on = std::this_thread::get_id(); });
  });
  poster.join();
  EXPECT_TRUE(order.empty());
  loop.mailbox().run_pending();
  EXPECT_EQ(order, (std::vector<int>{0, 1, 2, 3, 4}));
  EXPECT_EQ(ran_on, std::this_thread::get_id());
  // Nothing runs twice.
  loop.mailbox().run_pending();
  EXPECT_EQ(order.size(), 5u);
}

TEST(Mailbox, ATaskRunsOnceEvenWhenRunPendingTookItBeforeTheWake) {
  test_loop::TestLoop loop;
  Mailbox mailbox(loop.base());
  int runs = 0;
  mailbox.post([&] { ++runs; });
  mailbox.run_pending();
  EXPECT_EQ(runs, 1);
  // The wake-up written by the post is still there: the loop reads it and
  // finds nothing left to run.
  for (int i = 0; i < 3; ++i) loop.turn();
  EXPECT_EQ(runs, 1);
}

TEST(Mailbox, APostFromTheLoopsOwnThreadRunsOnALaterTurnNotInline) {
  test_loop::TestLoop loop;
  Mailbox mailbox(loop.base());
  int runs = 0;
  mailbox.post([&] { ++runs; });
  EXPECT_EQ(runs, 0);
  EXPECT_TRUE(loop.run_until([&] { return runs == 1; }));
}

TEST(Mailbox, ATaskThatPostsRunsItsPostOnTheNextWake) {
  test_loop::TestLoop loop;
  Mailbox mailbox(loop.base());
  std::vector<std::string> order;
  bool second_ran_within_first_run = false;
  mailbox.post([&] {
    order.push_back("first");
    // Posting from a task must not deadlock on the mailbox's lock, and
    // the new task waits for the next wake rather than running in this one.
    mailbox.post([&] { order.push_back("posted by first"); });
  });
  mailbox.post([&] {
    order.push_back("second");
    second_ran_within_first_run = order.size() == 2;
  });
  ASSERT_TRUE(loop.run_until([&] { return order.size() == 3; })) << order.size();
  EXPECT_EQ(order, (std::vector<std::string>{"first", "second", "posted by first"}));
  EXPECT_TRUE(second_ran_within_first_run);
}

TEST(Mailbox, TasksStillPendingAreDroppedWithTheMailboxAndFreeWhatTheyHold) {
  test_loop::TestLoop loop;
  auto held = std::make_shared<int>(1);
  bool ran = false;
  {
    Mailbox mailbox(loop.base());
    mailbox.post([held, &ran] { ran = true; });
    EXPECT_EQ(held.use_count(), 2);
  }
  EXPECT_EQ(held.use_count(), 1);
  for (int i = 0; i < 3; ++i) loop.turn();
  EXPECT_FALSE(ran);
}

}  // namespace
}  // namespace memshard::proxy
