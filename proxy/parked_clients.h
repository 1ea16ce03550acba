// Client connections that have been idle a while, held as nothing but their
// socket.
//
// An idle ClientConn still costs its object, its libevent registration and
// a slab block (about 0.6 KB); thousands of persistent connections that
// rarely speak (a fleet of PHP workers, say) add up. A parked connection is
// a socket in an epoll set of its own plus one small entry here: whatever
// next happens on it (a request, EOF, an error) hands it back to the worker,
// which makes it a ClientConn again before reading a byte, so the client
// sees nothing. Parking and waking cost a few system calls, which is why
// only connections idle for a while are parked.
#pragma once

#include <event2/event.h>

#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <vector>

#include "proxy/client_conn.h"

namespace memshard::proxy {

class ParkedClients {
 public:
  struct Entry {
    int fd = -1;
    uint64_t idle_since_usec = 0;  // its last input
    std::shared_ptr<const ClientOrigin> origin;
  };
  // Called with each entry whose socket became readable (or failed); the
  // entry has left the set and the socket is the callee's.
  using Wake = std::function<void(Entry)>;

  // Throws std::runtime_error when the epoll set cannot be made.
  ParkedClients(event_base* base, Wake wake);
  // Closes every socket still parked.
  ~ParkedClients();
  ParkedClients(const ParkedClients&) = delete;
  ParkedClients& operator=(const ParkedClients&) = delete;

  // Takes the socket into the set. False (errno set) when the kernel
  // refused: the socket stays the caller's.
  bool park(Entry entry);
  size_t size() const { return entries_.size(); }
  // Removes every entry `take` selects and returns them, sockets included.
  std::vector<Entry> take_if(const std::function<bool(const Entry&)>& take);

 private:
  static void on_ready(evutil_socket_t, short, void* self);
  Entry remove_at(size_t index);

  int epoll_fd_ = -1;
  event* event_ = nullptr;
  Wake wake_;
  std::vector<Entry> entries_;
  // Position in entries_ by socket, kNone when not parked.
  std::vector<uint32_t> index_of_fd_;
  static constexpr uint32_t kNone = ~uint32_t{0};
};

}  // namespace memshard::proxy
