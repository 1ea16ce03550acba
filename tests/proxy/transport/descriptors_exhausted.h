// Runs part of a test with the process out of file descriptors, as a proxy
// past its `ulimit -n` is: every open(), socket(), accept() or
// io_uring_queue_init() fails with EMFILE until the object is destroyed.
//
// The soft RLIMIT_NOFILE is lowered to just above the highest descriptor
// open, and every free one below it is taken (copies of one /dev/null).
// Destruction closes them and restores the limit, also when an assertion
// ends the test early. Descriptors the test needs meanwhile (sockets,
// listeners) must be opened before.
#pragma once

#include <fcntl.h>
#include <gtest/gtest.h>
#include <sys/resource.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <filesystem>
#include <string>
#include <string_view>
#include <system_error>
#include <vector>

namespace memshard::proxy::test_fds {

// What memcached tells a connection it accepts without a descriptor to
// spare, and what the proxy must tell one too: written out here, not taken
// from protocol/replies.h, so that a change there shows in the tests.
inline constexpr std::string_view kTooMany = "ERROR Too many open connections\r\n";

class DescriptorsExhausted {
 public:
  DescriptorsExhausted() {
    EXPECT_EQ(getrlimit(RLIMIT_NOFILE, &saved_), 0) << strerror(errno);
    int null_fd = open("/dev/null", O_RDONLY | O_CLOEXEC);
    EXPECT_GE(null_fd, 0) << strerror(errno);
    if (null_fd < 0) return;
    taken_.push_back(null_fd);
    rlimit lowered = saved_;
    lowered.rlim_cur = static_cast<rlim_t>(highest_open() + 1);
    EXPECT_EQ(setrlimit(RLIMIT_NOFILE, &lowered), 0) << strerror(errno);
    // Bounded by the new limit: at most that many descriptors are free.
    for (rlim_t i = 0; i < lowered.rlim_cur; ++i) {
      int fd = fcntl(null_fd, F_DUPFD_CLOEXEC, 0);
      if (fd < 0) {
        EXPECT_EQ(errno, EMFILE) << strerror(errno);
        break;
      }
      taken_.push_back(fd);
    }
    // Proof that nothing is left.
    int probe = open("/dev/null", O_RDONLY | O_CLOEXEC);
    EXPECT_EQ(probe, -1);
    EXPECT_EQ(errno, EMFILE);
    if (probe >= 0) close(probe);
  }
  ~DescriptorsExhausted() { end(); }
  DescriptorsExhausted(const DescriptorsExhausted&) = delete;
  DescriptorsExhausted& operator=(const DescriptorsExhausted&) = delete;

  // Gives every descriptor back and restores the limit (once).
  void end() {
    for (int fd : taken_) close(fd);
    taken_.clear();
    if (saved_.rlim_cur != 0) setrlimit(RLIMIT_NOFILE, &saved_);
    saved_.rlim_cur = 0;
  }

 private:
  static int highest_open() {
    int highest = 0;
    std::error_code ec;
    // The iterator's own descriptor is among them: one more taken below.
    for (const auto& entry : std::filesystem::directory_iterator("/proc/self/fd", ec))
      highest = std::max(highest, std::stoi(entry.path().filename().string()));
    EXPECT_FALSE(ec) << ec.message();
    return highest;
  }

  rlimit saved_{};
  std::vector<int> taken_;
};

}  // namespace memshard::proxy::test_fds
