// Client connections that have been idle a while, held as nothing but their
// socket.
//
// An idle ClientConn still costs its object and its libevent registration
// (about 0.5 KB); thousands of persistent connections that rarely speak (a
// fleet of PHP workers, say) add up. A parked connection is a socket in an
// epoll set of its own plus 16 bytes here: whatever next happens on it (a
// request, EOF, an error) hands it back to the worker, which makes it a
// ClientConn again before reading a byte, so the client sees nothing.
// Parking and waking cost a few system calls, which is why only
// connections idle for a while are parked.
#pragma once

#include <event2/event.h>

#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <utility>
#include <vector>

#include "proxy/clients/client_conn.h"

namespace memshard::proxy {

class ParkedClients {
 public:
  // A socket leaving the set: it is the receiver's now.
  struct Entry {
    int fd = -1;
    std::shared_ptr<const ClientOrigin> origin;
  };
  // A parked socket as take_if shows it.
  struct View {
    int fd;
    const ClientOrigin& origin;
    uint64_t idle_ms;  // since its last input; never more than the truth
  };
  // Called with each socket that became readable (or failed).
  using Wake = std::function<void(Entry)>;

  // Throws std::runtime_error when the epoll set cannot be made.
  ParkedClients(event_base* base, Wake wake);
  // Closes every socket still parked.
  ~ParkedClients();
  ParkedClients(const ParkedClients&) = delete;
  ParkedClients& operator=(const ParkedClients&) = delete;

  // Takes the socket, whose last input was at `last_input_usec` (on the
  // CLOCK_MONOTONIC scale of Worker::now_usec). False (errno set) when the
  // kernel refused: the socket stays the caller's.
  bool park(int fd, std::shared_ptr<const ClientOrigin> origin, uint64_t last_input_usec);
  size_t size() const { return slots_.size(); }
  // Removes and returns every socket `take` selects.
  std::vector<Entry> take_if(uint64_t now_usec, const std::function<bool(const View&)>& take);
  // Gives back the memory of a wave of parked sockets that has woken.
  void shrink();

 private:
  // 16 bytes per parked socket: the reason for the millisecond clock and
  // the raw origin pointer (origins_ holds the references).
  struct Slot {
    int32_t fd;
    uint32_t idle_since_ms;  // CLOCK_MONOTONIC ms, modulo 2^32, rounded up
    const ClientOrigin* origin;
  };
  static void on_ready(evutil_socket_t, short, void* self);
  Entry remove_at(size_t index);

  int epoll_fd_ = -1;
  event* event_ = nullptr;
  Wake wake_;
  std::vector<Slot> slots_;
  // Position in slots_ by socket, kNone when not parked, kDormant when it
  // woke here and its one-shot registration may still be in the set,
  // disarmed (the kernel drops it when the socket closes). Parking it again
  // re-arms that registration, one system call; removing it on every wake
  // was a second one, and a burst of parked connections waking at once
  // spent a tenth of a worker's CPU in epoll_ctl.
  std::vector<uint32_t> index_of_fd_;
  static constexpr uint32_t kNone = ~uint32_t{0};
  static constexpr uint32_t kDormant = kNone - 1;
  // The origins of parked sockets, each with the number parked.
  std::vector<std::pair<std::shared_ptr<const ClientOrigin>, size_t>> origins_;
};

}  // namespace memshard::proxy
