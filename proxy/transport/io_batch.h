// Sends (or receives) on many sockets with one system call, through
// io_uring.
//
// Why sends: a worker's loop iteration ends by writing every socket it produced
// output for (StreamLoop::flush). One writev per socket lets the kernel
// switch away after each of them: a write wakes its reader (the client, or
// memcached), and on a shared core the woken reader often runs at once,
// before the proxy has made its next write, reads one reply, and sleeps
// again. Handing all of an iteration's sends to the kernel at once lets
// every reader wake to all of its bytes, and the proxy is preempted at most
// once per iteration, after the last send.
//
// Why receives: a system call costs about as much as the rest of a small
// request's work in user space on the bench's virtual machine, and without
// batching a worker made one read per client request. The sockets that
// epoll reported readable in one iteration are read together instead
// (StreamLoop::read_ready).
//
// What each saved, and the system calls per request now, are measured by
// scripts/bench's syscall pass; the figures of the last measurement are in
// docs/design.md ("Reading and writing sockets").
//
// Neither ever waits: each is made with MSG_DONTWAIT, so a full socket (or
// an empty one) comes back as -EAGAIN and the caller waits for readiness as
// usual.
#pragma once

#include <sys/socket.h>
#include <sys/uio.h>

#include <cstddef>
#include <memory>
#include <span>
#include <vector>

struct io_uring;

namespace memshard::proxy {

class IoBatch {
 public:
  // Operations per submission: add_*() takes no more until submit().
  static constexpr size_t kMaxOps = 256;

  // Sets up the ring. When the kernel refuses (no io_uring, or a seccomp
  // profile or sysctl that forbids it), available() is false and the
  // caller writes each socket itself.
  IoBatch();
  ~IoBatch();
  IoBatch(const IoBatch&) = delete;
  IoBatch& operator=(const IoBatch&) = delete;

  // False also after a submission the kernel would not take (submit()).
  bool available() const { return ring_ != nullptr; }
  // Why the ring could not be set up (an errno), 0 when it was.
  int setup_error() const { return setup_error_; }

  // Queues a send of `count` iovecs on `fd`, or a receive into them. They
  // must stay valid until submit() returns. At most kMaxOps between
  // submits.
  void add_send(int fd, const iovec* iov, size_t count);
  void add_recv(int fd, const iovec* iov, size_t count);
  // Makes every queued operation and returns, in the order they were
  // added, the bytes each moved or -errno (-EAGAIN: the socket's buffer was
  // full, or had nothing to read; 0 for a receive: the peer closed), valid
  // until the next add_*().
  std::span<const int> submit();

 private:
  static constexpr int kPending = -(1 << 30);
  void add(bool send, int fd, const iovec* iov, size_t count);
  std::unique_ptr<io_uring> ring_;
  int setup_error_ = 0;
  std::vector<msghdr> messages_;
  std::vector<int> results_;  // kMaxOps long; the first queued_ are this batch's
  size_t queued_ = 0;
};

}  // namespace memshard::proxy
