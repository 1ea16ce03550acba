// Sends on many sockets with one system call, through io_uring.
//
// Why: a worker's loop iteration ends by writing every socket it produced
// output for (StreamLoop::flush). One writev per socket lets the kernel
// switch away after each of them: a write wakes its reader (the client, or
// memcached), and on a shared core the woken reader often runs at once,
// before the proxy has made its next write, reads one reply, and sleeps
// again. Measured on 2 cores, a worker was preempted about once for every
// three requests that way. Handing all of an iteration's sends to the kernel
// at once lets every reader wake to all of its bytes, and the proxy is
// preempted at most once per iteration, after the last send.
//
// Sends never wait: each is made with MSG_DONTWAIT, so a full socket comes
// back as -EAGAIN and the caller waits for write readiness as usual.
#pragma once

#include <sys/socket.h>
#include <sys/uio.h>

#include <cstddef>
#include <memory>
#include <span>
#include <vector>

struct io_uring;

namespace memshard::proxy {

class WriteBatch {
 public:
  // Sends per submission: add() takes no more until submit().
  static constexpr size_t kMaxSends = 256;

  // Sets up the ring. When the kernel refuses (no io_uring, or a seccomp
  // profile or sysctl that forbids it), available() is false and the
  // caller writes each socket itself.
  WriteBatch();
  ~WriteBatch();
  WriteBatch(const WriteBatch&) = delete;
  WriteBatch& operator=(const WriteBatch&) = delete;

  // False also after a submission the kernel would not take (submit()).
  bool available() const { return ring_ != nullptr; }
  // Why the ring could not be set up (an errno), 0 when it was.
  int setup_error() const { return setup_error_; }

  // Queues a send of `count` iovecs on `fd`. They must stay valid until
  // submit() returns. At most kMaxSends between submits.
  void add(int fd, const iovec* iov, size_t count);
  // Makes every queued send and returns, in the order they were added, the
  // bytes each sent or -errno (-EAGAIN: the socket's buffer was full),
  // valid until the next add().
  std::span<const int> submit();

 private:
  static constexpr int kPending = -(1 << 30);
  std::unique_ptr<io_uring> ring_;
  int setup_error_ = 0;
  std::vector<msghdr> messages_;
  std::vector<int> results_;  // kMaxSends long; the first queued_ are this batch's
  size_t queued_ = 0;
};

}  // namespace memshard::proxy
