// One worker: a thread running its own libevent loop, with its own client
// connections, its own backend connections and its own counters. Nothing on
// the request path is shared with another worker, so it takes no lock,
// with one exception a pool asks for: with hot_key_cache, the pool's
// hot-key cache is one structure for every worker, under its own lock
// (hot_key_cache.h), taken only for hot keys' gets and for writes.
#pragma once

#include <event2/event.h>

#include <atomic>
#include <cstdint>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <unordered_map>
#include <vector>

#include "proxy/admin/stats_view.h"
#include "proxy/backends/backend.h"
#include "proxy/backends/context.h"
#include "proxy/backends/reply_slot.h"
#include "proxy/clients/client_count.h"
#include "proxy/clients/context.h"
#include "proxy/clients/parked_clients.h"
#include "proxy/routes/pool_route.h"
#include "proxy/routes/request_scratch.h"
#include "proxy/routes/topology.h"
#include "proxy/runtime/worker_routes.h"
#include "proxy/support/mailbox.h"
#include "proxy/support/slab_pool.h"
#include "proxy/support/stats.h"
#include "proxy/support/timer.h"
#include "proxy/support/warning_throttle.h"
#include "proxy/transport/stream.h"

namespace memshard::proxy {

// What a worker needs of the proxy that runs it: where to report servers
// and the counters `stats` shows. Proxy implements it; a test can fake it.
class WorkerHost {
 public:
  // Gives a client's socket, moved off this worker (worker_governor.h), to
  // worker `to`.
  virtual void hand_over(size_t to, int fd, std::string pool_name,
                         std::shared_ptr<ClientCount> pool_clients,
                         ClientConn::Arrival arrival) = 0;
  virtual void server_failing(const std::string& pool, const std::string& identity) = 0;
  virtual void server_unreachable(const std::string& pool, const std::string& identity) = 0;
  virtual const StatsView& stats_view() const = 0;

 protected:
  ~WorkerHost() = default;
};

class Worker final : public BackendContext, public ClientContext {
 public:
  // `park_after_ms`: how long a client connection must have been idle to be
  // parked (parked_clients.h); 0 never parks. `writes`: how the worker's
  // streams are written (StreamLoop::Writes); batched writes come with
  // batched reads.
  Worker(WorkerHost& host, int index, int park_after_ms,
         StreamLoop::Writes writes = StreamLoop::Writes::batched);
  ~Worker();
  Worker(const Worker&) = delete;
  Worker& operator=(const Worker&) = delete;

  void start(std::shared_ptr<const Topology> topology);
  // Asks the loop to end and joins the thread. Clients handed over and not
  // adopted yet are closed, even when the worker never started.
  void stop();

  // Thread-safe: hands an accepted socket to this worker. `pool_clients`
  // counts the listener's open client connections, already including this
  // one, which leaves the count when it closes.
  void adopt_client(int fd, std::string pool_name, std::shared_ptr<ClientCount> pool_clients,
                    ClientConn::Arrival arrival = ClientConn::Arrival::accepted);
  // Where this worker's connections belong now that `active` workers take
  // them (thread-safe; the governor's decision, proxy.cc). A worker at or
  // past `active` hands every connection it can move to the active ones,
  // as each comes to owe nothing, and so does every one of its parked
  // connections that wakes. An active worker hands `send[j]` connections
  // to worker j, of those whose packets arrive on a CPU that
  // `worker_of_cpu` gives to j (for 2 s at most).
  struct Placement {
    size_t active = 1;
    std::vector<int> worker_of_cpu;  // by CPU number; -1: none
    std::vector<uint64_t> send;      // by worker
  };
  void place(Placement placement);
  // Thread-safe: what the governor reads of this worker. Busy time comes
  // from the kernel's account of the thread (thread_busy.h).
  int thread_id() const { return tid_.load(std::memory_order_relaxed); }
  uint64_t wakeups() const { return wakeups_.load(std::memory_order_relaxed); }
  uint64_t requests() const;
  // Thread-safe: the client connections this worker holds, counting those
  // handed to it that it has not adopted yet (a burst of accepts is
  // balanced before the worker has run).
  uint64_t client_load() const;
  // Thread-safe: every client gets the replies it is owed for what it has
  // already sent, then is closed (graceful shutdown).
  void drain();
  // Thread-safe: the worker switches to this topology (not null) between
  // two requests.
  void install_topology(std::shared_ptr<const Topology> topology);

  // Worker-thread only: what its clients and backends ask of it.
  event_base* base() const override { return base_; }
  StreamLoop& streams() override { return *streams_; }
  RequestScratch& scratch() override { return scratch_; }
  uint64_t now_usec() override;
  WorkerStats& stats() override { return stats_; }
  const PoolRoute* route(const std::string& pool_name) const override;
  // Bumped whenever routes change (reload or ejection): a client may keep
  // a PoolRoute pointer for as long as this stays the same.
  uint64_t routes_epoch() const override { return routes_.epoch(); }
  ReplySlot* acquire_slot(SlotOwner* owner) override;
  void release_slot(ReplySlot* slot) override;
  void retire(ClientConn* client) override;
  void append_stats(const std::vector<std::string_view>& args, std::string& out) override;
  void closed_foreign(const std::string& pool, Foreign what) override;
  void server_failing(const std::string& pool, const std::string& identity) override;
  void server_unreachable(const std::string& pool, const std::string& identity) override;
  uint64_t generation() const { return routes_.generation(); }
  // Thread-safe: adds this worker's pool and server counters to `out`.
  void collect(StatsSnapshot& out) const;
  const WorkerStats& stats() const { return stats_; }
  int index() const { return index_; }

 private:
  void reap();
  void housekeeping();
  void apply_topology(std::shared_ptr<const Topology> topology);
  // The origin shared by the clients of this pool's listener.
  std::shared_ptr<const ClientOrigin> origin_for(const std::string& pool_name,
                                                 std::shared_ptr<ClientCount> clients);
  ClientConn* add_client(int fd, std::shared_ptr<const ClientOrigin> origin,
                         ClientConn::Arrival arrival);
  // Hands the movable clients that Placement sends elsewhere to their new
  // workers; called after each loop iteration while moves are pending.
  void move_clients();
  // The worker a moving socket goes to: by the CPU its packets arrive on,
  // else the active worker owed the most. -1: none (this one keeps it).
  int destination(int fd, bool any);
  // The socket's SO_INCOMING_CPU, read at most every 100 ms: asked on
  // every loop iteration while moves were pending, it cost a system call
  // per idle client per iteration, and a growth's trial on memcaslap
  // 1 x 32, with nothing to move, lost 10-20% of its throughput to it.
  int client_cpu(int fd);
  // Takes the clients in `gone` (sorted here) off the client list.
  void forget_clients(std::vector<ClientConn*>& gone);
  void destroy_client(ClientConn* client);
  // Parks the clients idle for park_after_usec_ with nothing in flight.
  void park_idle_clients();
  // Closes the clients, in use or parked, whose pool's client_idle_timeout
  // ran out: one sweep a second for both, never early.
  void close_idle_clients();
  // Closes parked connections as a client closing would be counted.
  void close_parked(std::vector<ParkedClients::Entry> entries);
  // Parked clients owe nothing: on drain or stop they close at once.
  void close_all_parked();
  void run();

  WorkerHost& host_;
  int index_;
  uint64_t park_after_usec_;
  event_base* base_ = nullptr;
  std::unique_ptr<StreamLoop> streams_;
  RequestScratch scratch_;
  bool running_ = false;   // worker thread only
  uint64_t now_usec_ = 0;  // this iteration's clock reading; 0 until first asked for
  std::thread thread_;
  std::unique_ptr<Timer> reap_timer_;          // fired at once when a client is retired
  std::unique_ptr<Timer> housekeeping_timer_;  // every second: frees drained backends
  // Clients closed for speaking another protocol, by pool and kind, since
  // the last line the throttle let through.
  std::map<std::pair<std::string, Foreign>, uint64_t> foreign_;
  std::unique_ptr<WarningThrottle> foreign_warning_;

  // What other threads hand this worker: clients, topologies, drain, stop.
  std::unique_ptr<Mailbox> mailbox_;
  // Clients posted to the mailbox and not adopted (or closed) yet.
  std::atomic<uint64_t> handed_over_{0};
  // Set by stop() before it posts, so that a client handed over earlier and
  // still waiting in the mailbox is closed, not adopted into a loop that is
  // ending; read by the mailbox's tasks.
  std::atomic<bool> stopping_{false};
  // The newest topology installed and not applied yet: one task applies
  // it, however many installs came before that task ran.
  std::mutex topology_mu_;
  std::shared_ptr<const Topology> latest_topology_;

  // Routes, server connections and counters, topology by topology.
  WorkerRoutes routes_{*this};
  std::vector<ClientConn*> clients_;
  SlabPool client_memory_;  // the ClientConn objects
  std::unique_ptr<ParkedClients> parked_;
  std::vector<std::shared_ptr<const ClientOrigin>> origins_;
  uint64_t next_client_id_ = 0;
  std::vector<ClientConn*> retired_;
  std::vector<ReplySlot*> free_slots_;
  WorkerStats stats_;
  // Connection moves (place()): worker thread only.
  Placement placement_;
  bool moving_ = false;
  size_t held_ = 0;                 // clients held still to be moved (ClientConn::hold_for_move)
  uint64_t moves_until_usec_ = 0;   // an active worker stops trying then
  std::vector<int> cpu_of_fd_;      // client_cpu()'s answers by socket; kCpuUnread: not yet
  uint64_t cpus_read_at_usec_ = 0;  // cpu_of_fd_ was emptied then
  bool clients_draining_ = false;   // moved-in clients close once idle
  std::atomic<int> tid_{0};
  std::atomic<uint64_t> wakeups_{0};
};

}  // namespace memshard::proxy
