#include "proxy/transport/accept_guard.h"

#include <fcntl.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

#include "proxy/support/log.h"

namespace memshard::proxy {

void refuse_client(int fd, std::string_view reply) {
  // A fresh socket's send buffer takes the line whole. Closing with the
  // client's first command unread makes the kernel reset the connection,
  // which still leaves the line readable at the client (tested).
  (void)!send(fd, reply.data(), reply.size(), MSG_NOSIGNAL | MSG_DONTWAIT);
  close(fd);
}

DescriptorReserve::DescriptorReserve(std::string refusal) : refusal_(std::move(refusal)) {
  take();
}

DescriptorReserve::~DescriptorReserve() {
  if (fd_ >= 0) close(fd_);
}

bool DescriptorReserve::take() {
  fd_ = open("/dev/null", O_RDONLY | O_CLOEXEC);
  return fd_ >= 0;
}

int DescriptorReserve::refuse_one(int listen_fd, const std::function<void()>& counted) {
  if (fd_ < 0 && !take()) return -1;
  close(fd_);
  fd_ = -1;
  int client = accept4(listen_fd, nullptr, nullptr, SOCK_NONBLOCK | SOCK_CLOEXEC);
  int accept_errno = errno;
  if (client >= 0) {
    if (counted) counted();
    refuse_client(client, refusal_);
  }
  // Taken back at once: the descriptor just closed is the lowest free one,
  // unless a worker thread opened something in between (then the next call
  // finds no reserve, and the listener pauses).
  take();
  if (client >= 0) return 1;
  bool none_waiting = accept_errno == EAGAIN || accept_errno == EWOULDBLOCK ||
                      accept_errno == ECONNABORTED || accept_errno == EINTR;
  return none_waiting ? 0 : -1;
}

AcceptGuard::AcceptGuard(event_base* base, evconnlistener* listener, evconnlistener_cb accept,
                         void* accept_arg, DescriptorReserve& reserve, std::string what,
                         std::function<void()> on_refused)
    : listener_(listener),
      accept_(accept),
      accept_arg_(accept_arg),
      reserve_(reserve),
      what_(std::move(what)),
      on_refused_(std::move(on_refused)),
      resume_(base, [this] { evconnlistener_enable(listener_); }),
      warning_(base, [this] {
        const std::string& said = reserve_.refusal();
        log_warn("%s: accept: %s: %llu client(s) refused with \"%.*s\", %llu pause(s) of %d ms",
                 what_.c_str(), strerror(last_errno_), static_cast<unsigned long long>(refused_),
                 static_cast<int>(said.find('\r')), said.c_str(),
                 static_cast<unsigned long long>(pauses_), kPauseMs);
        refused_ = 0;
        pauses_ = 0;
      }) {
  evconnlistener_set_cb(listener_, &AcceptGuard::on_accept, this);
  evconnlistener_set_error_cb(listener_, &AcceptGuard::on_error);
}

AcceptGuard::~AcceptGuard() {
  evconnlistener_set_error_cb(listener_, nullptr);
  evconnlistener_set_cb(listener_, accept_, accept_arg_);
}

void AcceptGuard::on_accept(evconnlistener* listener, evutil_socket_t fd, sockaddr* addr, int len,
                            void* arg) {
  auto* self = static_cast<AcceptGuard*>(arg);
  // A descriptor was free for this client: if the reserve lost its own in
  // a shortage, one may be free for it too, before the next shortage.
  self->reserve_.restore();
  self->accept_(listener, fd, addr, len, self->accept_arg_);
}

// Called by libevent after accept() failed with an error it does not retry
// by itself (it handles EAGAIN, EINTR and ECONNABORTED). EMFILE does not
// mean that a client waits: the kernel wants a free descriptor before it
// looks at the backlog, so libevent's last accept() of a burst fails so too.
void AcceptGuard::on_error(evconnlistener* listener, void* arg) {
  auto* self = static_cast<AcceptGuard*>(arg);
  int err = EVUTIL_SOCKET_ERROR();
  if (err == EMFILE || err == ENFILE) {
    int refused = self->reserve_.refuse_one(evconnlistener_get_fd(listener), self->on_refused_);
    if (refused == 0) return;
    if (refused > 0) {
      self->count(self->refused_, err);
      return;  // the loop comes back for the next waiting client, if any
    }
  }
  // Short of kernel memory, or of descriptors with no reserve to refuse
  // with: whatever waits in the backlog waits a moment longer.
  evconnlistener_disable(listener);
  self->resume_.arm_ms(kPauseMs);
  self->count(self->pauses_, err);
}

void AcceptGuard::count(uint64_t& counter, int err) {
  ++counter;
  last_errno_ = err;
  warning_.note();
}

}  // namespace memshard::proxy
