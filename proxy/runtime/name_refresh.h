// Servers listed by DNS name follow their address. twemproxy looks a name
// up each time it connects; memshard keeps the addresses in the topology
// (so a worker never blocks on DNS) and looks the names up again on a
// thread of its own: every pool's `dns_refresh` ms, and soon after a
// connection to the server fails. What it finds goes back to the main
// thread, which installs a topology with the new addresses when they
// changed (placement never moves: the ring uses the name as configured).
#pragma once

#include <event2/event.h>

#include <condition_variable>
#include <cstdint>
#include <deque>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "proxy/routes/topology.h"
#include "proxy/support/mailbox.h"
#include "proxy/support/timer.h"

namespace memshard::proxy {

class NameRefresh {
 public:
  struct Result {
    std::string pool;
    std::string identity;
    std::optional<AddressList> addresses;  // none: the name did not resolve
    std::string error;
  };
  // `on_result` runs on the thread of `base` (the main thread).
  NameRefresh(event_base* base, std::function<void(const Result&)> on_result);
  ~NameRefresh();
  NameRefresh(const NameRefresh&) = delete;
  NameRefresh& operator=(const NameRefresh&) = delete;

  // Main thread: the names to follow, and how often, from the topology
  // now in force.
  void set_topology(const Topology& topology);
  // Thread-safe: a connection to the server failed. Its name (if it has
  // one) is looked up again, at most once a second.
  void connect_failed(const std::string& pool, const std::string& identity);

 private:
  struct Name {
    std::string pool, identity, host;
    uint16_t port = 0;
    uint64_t requested_ms = 0;  // last lookup asked for by a failure
    bool queued = false;
  };
  using Key = std::pair<std::string, std::string>;  // pool, server identity
  // Every dns_refresh ms: the pool's names are looked up again.
  void refresh_pool(const std::string& pool);
  // Under mu_: queues the name's lookup unless it is queued already.
  void queue_locked(Name& name);
  void run();

  event_base* base_;
  std::function<void(const Result&)> on_result_;
  Mailbox mailbox_;  // results, from the lookup thread
  std::vector<std::unique_ptr<Timer>> timers_;

  std::mutex mu_;
  std::condition_variable wake_;
  std::map<Key, Name> names_;
  std::deque<Key> queue_;
  bool stopping_ = false;
  std::thread thread_;  // last: starts once the rest is built
};

}  // namespace memshard::proxy
