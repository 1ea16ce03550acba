// What a listener does when the process is out of file descriptors.
//
// accept() then fails with EMFILE (or ENFILE, system-wide) and leaves the
// connection in the listen backlog, where it stays readable: libevent's
// listener would warn and retry on every loop iteration, a busy loop on the
// main thread that floods the log while the client waits without a word.
// Instead, one descriptor is held in reserve for the purpose: freed, it lets
// the waiting connection in, to be told memcached's own "ERROR Too many open
// connections" and closed at once, and is taken back. Should the reserve be
// lost (a worker took the descriptor meanwhile) or the kernel be short of
// memory, the listener pauses for a moment instead of spinning.
#pragma once

#include <event2/event.h>
#include <event2/listener.h>

#include <cstdint>
#include <functional>
#include <string>
#include <string_view>

#include "proxy/support/timer.h"
#include "proxy/support/warning_throttle.h"

namespace memshard::proxy {

// Sends a client `reply` (memcached's "ERROR Too many open connections",
// protocol/replies.h) and closes its socket: a client past
// client_connections, or one that came when no descriptor was left.
void refuse_client(int fd, std::string_view reply);

// The spare descriptor, one per process, shared by every listener of the
// main thread's loop.
class DescriptorReserve {
 public:
  // `refusal`: what a client refused is told (refuse_client).
  explicit DescriptorReserve(std::string refusal);
  ~DescriptorReserve();
  const std::string& refusal() const { return refusal_; }
  DescriptorReserve(const DescriptorReserve&) = delete;
  DescriptorReserve& operator=(const DescriptorReserve&) = delete;

  // Frees the reserve, accepts one connection from `listen_fd`, refuses it
  // (refuse_client) and takes the reserve back. Returns 1 when a client was
  // refused, 0 when none was waiting, -1 when the reserve could not help
  // (none was held, or accept() failed even so). `counted` runs before the
  // refusal is sent: a client that reads it and asks for the stats at once
  // finds itself counted.
  int refuse_one(int listen_fd, const std::function<void()>& counted = {});
  // Takes a descriptor back if the reserve has lost its own and one is
  // free now. refuse_one() tries only when none is free, so a reserve
  // lost once would otherwise stay lost for every later shortage.
  void restore() {
    if (fd_ < 0) take();
  }

 private:
  bool take();
  std::string refusal_;
  int fd_ = -1;
};

// Installs the handling on one listener, for as long as it lives. libevent
// hands an error callback the listener's own argument, so the guard stands
// between the listener and its accept callback: `accept` and `accept_arg`
// are what the listener was created with.
class AcceptGuard {
 public:
  // `what` names the listener in the log; `on_refused` runs once per client
  // refused (to count it).
  AcceptGuard(event_base* base, evconnlistener* listener, evconnlistener_cb accept,
              void* accept_arg, DescriptorReserve& reserve, std::string what,
              std::function<void()> on_refused);
  ~AcceptGuard();
  AcceptGuard(const AcceptGuard&) = delete;
  AcceptGuard& operator=(const AcceptGuard&) = delete;

  // How long a listener pauses when it cannot even refuse.
  static constexpr int kPauseMs = 100;

 private:
  static void on_accept(evconnlistener* listener, evutil_socket_t fd, sockaddr* addr, int len,
                        void* self);
  static void on_error(evconnlistener* listener, void* self);
  void count(uint64_t& counter, int err);

  evconnlistener* listener_;
  evconnlistener_cb accept_;
  void* accept_arg_;
  DescriptorReserve& reserve_;
  std::string what_;
  std::function<void()> on_refused_;
  Timer resume_;  // ends a pause
  WarningThrottle warning_;
  uint64_t refused_ = 0;  // since the last warning
  uint64_t pauses_ = 0;
  int last_errno_ = 0;
};

}  // namespace memshard::proxy
