#include "proxy/transport/io_batch.h"

#include <liburing.h>

#include <cerrno>
#include <stdexcept>

namespace memshard::proxy {

IoBatch::IoBatch() : messages_(kMaxOps), results_(kMaxOps) {
  auto ring = std::make_unique<io_uring>();
  // kMaxOps submission entries; the kernel gives the completion queue
  // twice as many, so a full submission's completions always fit.
  int rc = io_uring_queue_init(kMaxOps, ring.get(), 0);
  if (rc < 0) {
    setup_error_ = -rc;
    return;
  }
  ring_ = std::move(ring);
}

IoBatch::~IoBatch() {
  if (ring_ != nullptr) io_uring_queue_exit(ring_.get());
}

void IoBatch::add_send(int fd, const iovec* iov, size_t count) {
  add(true, fd, iov, count);
}

void IoBatch::add_recv(int fd, const iovec* iov, size_t count) {
  add(false, fd, iov, count);
}

void IoBatch::add(bool send, int fd, const iovec* iov, size_t count) {
  if (ring_ == nullptr || queued_ >= kMaxOps) throw std::logic_error("IoBatch::add: no room");
  msghdr& m = messages_[queued_];
  m = msghdr{};
  m.msg_iov = const_cast<iovec*>(iov);
  m.msg_iovlen = count;
  // The ring has kMaxOps entries and none is left over from the last
  // submit, so one is free here.
  io_uring_sqe* sqe = io_uring_get_sqe(ring_.get());
  // MSG_DONTWAIT makes io_uring answer -EAGAIN rather than wait for
  // readiness, as the non-blocking system calls would.
  if (send)
    io_uring_prep_sendmsg(sqe, fd, &m, MSG_DONTWAIT | MSG_NOSIGNAL);
  else
    io_uring_prep_recvmsg(sqe, fd, &m, MSG_DONTWAIT);
  io_uring_sqe_set_data64(sqe, queued_);
  results_[queued_] = kPending;
  ++queued_;
}

std::span<const int> IoBatch::submit() {
  const size_t queued = queued_;
  // Hand the operations to the kernel. A submission can be cut short by a
  // signal or a shortage of kernel memory: retry a few times.
  size_t submitted = 0;
  for (int tries = 0; submitted < queued && tries < 8; ++tries) {
    int rc = io_uring_submit(ring_.get());
    if (rc > 0)
      submitted += static_cast<size_t>(rc);
    else if (rc != -EINTR && rc != -EAGAIN && rc != -EBUSY)
      break;
  }
  // Every submitted operation is accounted for before returning:
  // non-blocking ones complete during the submission, and waiting covers
  // one that completes later, so that none is reported refused after it was
  // made (a send's bytes would go twice, a receive's would be lost) and no
  // iovec is left in the kernel's hands.
  for (size_t done = 0; done < submitted;) {
    io_uring_cqe* cqe = nullptr;
    int rc = io_uring_peek_cqe(ring_.get(), &cqe);
    if (rc != 0) rc = io_uring_wait_cqe(ring_.get(), &cqe);
    if (rc == -EINTR) continue;
    if (rc != 0) throw std::runtime_error("io_uring: lost track of an operation in flight");
    uint64_t index = io_uring_cqe_get_data64(cqe);
    if (index < queued) results_[index] = cqe->res;
    io_uring_cqe_seen(ring_.get(), cqe);
    ++done;
  }
  if (submitted < queued) {
    // The kernel would not take the rest: they were never made, so the
    // caller makes them itself, and so does every later batch. Dropping
    // the ring drops the entries it still holds.
    for (size_t i = 0; i < queued; ++i)
      if (results_[i] == kPending) results_[i] = -EAGAIN;
    io_uring_queue_exit(ring_.get());
    ring_.reset();
  }
  queued_ = 0;
  return {results_.data(), queued};
}

}  // namespace memshard::proxy
