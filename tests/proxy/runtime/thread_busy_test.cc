// thread_busy_usec (proxy/runtime/thread_busy.h): a thread's time on a CPU
// or waiting for one, as the worker governor reads it. Real threads: one
// that spins, one blocked in a read.
#include "proxy/runtime/thread_busy.h"

#include <fcntl.h>
#include <gtest/gtest.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <atomic>
#include <cstdio>
#include <fstream>
#include <string>
#include <thread>

#include "bounded_wait.h"

namespace memshard::proxy {
namespace {

pid_t this_tid() {
  return static_cast<pid_t>(syscall(SYS_gettid));
}

// The state letter of /proc/self/task/TID/stat ('S' sleeping, 'R' running).
char state_of(pid_t tid) {
  std::ifstream f("/proc/self/task/" + std::to_string(tid) + "/stat");
  std::string stat((std::istreambuf_iterator<char>(f)), std::istreambuf_iterator<char>());
  const size_t paren = stat.rfind(')');
  return paren == std::string::npos || paren + 2 >= stat.size() ? '?' : stat[paren + 2];
}

// Spins this thread until its busy time has grown past `from` (bounded by
// the deadline and a budget of rounds).
bool spin_past(uint64_t from) {
  constexpr int kRounds = 100'000;
  const auto until = test::Clock::now() + test::kDeadline;
  for (int round = 0; round < kRounds && test::Clock::now() < until; ++round) {
    volatile uint64_t sink = 0;
    for (int i = 0; i < 10'000; ++i) sink = sink + static_cast<uint64_t>(i);
    if (thread_busy_usec(this_tid()) > from) return true;
  }
  return false;
}

TEST(ThreadBusyTest, GrowsWhileTheThreadRuns) {
  const uint64_t start = thread_busy_usec(this_tid());
  EXPECT_GT(start, 0u) << "this thread has run";
  EXPECT_TRUE(spin_past(start + 20'000)) << "20 ms of spinning were not counted";
}

TEST(ThreadBusyTest, StandsStillWhileTheThreadIsBlocked) {
  int pipe_fds[2];
  ASSERT_EQ(pipe2(pipe_fds, O_CLOEXEC), 0);
  std::atomic<pid_t> tid{0};
  std::thread blocked([&] {
    tid.store(this_tid());
    char c;
    (void)!read(pipe_fds[0], &c, 1);  // blocks until the test writes
  });
  ASSERT_TRUE(test::eventually([&] { return tid.load() != 0 && state_of(tid.load()) == 'S'; }));
  const uint64_t asleep = thread_busy_usec(tid.load());
  EXPECT_GT(asleep, 0u);
  // Time passes (this thread is busy meanwhile); the blocked one's does not.
  EXPECT_TRUE(spin_past(thread_busy_usec(this_tid()) + 20'000));
  const bool still_blocked = state_of(tid.load()) == 'S';
  const uint64_t later = thread_busy_usec(tid.load());
  (void)!write(pipe_fds[1], "x", 1);
  blocked.join();
  close(pipe_fds[0]);
  close(pipe_fds[1]);
  ASSERT_TRUE(still_blocked);
  EXPECT_EQ(later, asleep);
}

TEST(ThreadBusyTest, AThreadThatIsGoneOrNoneIsZero) {
  std::atomic<pid_t> tid{0};
  std::thread([&] { tid.store(this_tid()); }).join();
  ASSERT_NE(tid.load(), 0);
  // Joined, it may still be in /proc for a moment while the kernel reaps it.
  EXPECT_TRUE(test::eventually([&] { return thread_busy_usec(tid.load()) == 0; }));
  EXPECT_EQ(thread_busy_usec(0), 0u);
  EXPECT_EQ(thread_busy_usec(-1), 0u);
}

}  // namespace
}  // namespace memshard::proxy
