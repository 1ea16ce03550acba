// The pools' listening sockets, and who may come in through them. A client
// is let in while the descriptor limit leaves room for it
// (descriptor_budget.h) and its pool's client_connections allow; otherwise
// it is told "ERROR Too many open connections", as memcached tells it. A
// client let in goes to whoever `adopt` names (a worker). A reload swaps
// the sockets all or nothing; one whose address stays is never rebound.
// Main thread only, but for the counters.
#pragma once

#include <event2/event.h>
#include <event2/listener.h>

#include <atomic>
#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "conf/config.h"
#include "proxy/clients/client_count.h"
#include "proxy/routes/topology.h"
#include "proxy/support/warning_throttle.h"
#include "proxy/transport/accept_guard.h"

namespace memshard::proxy {

class Listeners {
 public:
  // A client let in: its descriptor (non-blocking), its pool, the pool's
  // count of clients (already counting it), and the CPU it arrived on (-1:
  // unknown, as on a unix socket).
  using Adopt = std::function<void(int fd, const std::string& pool,
                                   std::shared_ptr<ClientCount> clients, int cpu)>;

  Listeners(event_base* base, Adopt adopt);
  ~Listeners();
  Listeners(const Listeners&) = delete;
  Listeners& operator=(const Listeners&) = delete;

  // Binds a socket for every pool that listens. Throws with a message for
  // the operator when one does not bind.
  void open(const Topology& topology);
  // The sockets of `next`, bound before any old one closes. False, with
  // why, when a new one does not bind: then nothing changed.
  bool swap(const Topology& next, std::string& why);
  // No more clients (a drain, the end).
  void close_all();

  // Sets how many clients the descriptor limit leaves room for, with
  // `workers` connecting to the servers of `topology`. The first call
  // (`starting`) takes the process's descriptors then as its own, and
  // throws when the limit leaves no room for a client.
  void set_budget(const Topology& topology, uint64_t workers, bool starting);

  // Set aside for refusing a client when no descriptor is left (the stats
  // port shares it); lives as long as this.
  DescriptorReserve& reserve() { return reserve_; }
  // From any thread.
  uint64_t max_connections() const { return max_clients_.load(std::memory_order_relaxed); }
  uint64_t rejected() const { return rejected_.load(std::memory_order_relaxed); }

 private:
  struct Socket {
    Listeners* owner = nullptr;
    std::string pool;
    uint32_t client_limit = 0;  // client_connections; 0 = none
    conf::ListenAddress address;
    evconnlistener* listener = nullptr;
    std::unique_ptr<AcceptGuard> guard;  // out of descriptors: refuse, do not spin
    std::shared_ptr<ClientCount> clients;
  };
  static void on_accept(evconnlistener*, evutil_socket_t fd, sockaddr*, int, void* socket);
  // Null (and errno set) when it does not bind.
  std::unique_ptr<Socket> bind(const Pool& pool);
  void close(Socket& s);
  // Refuses a client for want of room; the operator hears of it at most
  // once a second.
  void refuse_over_budget(int fd, uint32_t open);

  event_base* base_;
  Adopt adopt_;
  // Before the sockets, whose guards use it until they go.
  DescriptorReserve reserve_;
  std::vector<std::unique_ptr<Socket>> sockets_;
  // Client connections open on every socket, parked ones included.
  std::shared_ptr<std::atomic<uint32_t>> open_clients_ = std::make_shared<std::atomic<uint32_t>>(0);
  std::atomic<uint64_t> max_clients_{UINT64_MAX};
  std::atomic<uint64_t> rejected_{0};
  // What the proxy held itself once started, and how many sockets then: a
  // reload changes only the sockets among its own descriptors.
  uint64_t own_descriptors_ = 0;
  size_t sockets_at_start_ = 0;
  uint64_t refused_over_budget_ = 0;  // since the last warning
  uint32_t open_when_refused_ = 0;
  WarningThrottle over_budget_warning_;
};

}  // namespace memshard::proxy
