#include "proxy/runtime/worker.h"

#include <malloc.h>
#include <time.h>
#include <unistd.h>

#include <algorithm>
#include <limits>
#include <utility>

#include "proxy/admin/local_commands.h"
#include "proxy/clients/client_conn.h"
#include "proxy/support/clock.h"
#include "proxy/support/event_memory.h"
#include "proxy/support/log.h"
#include "proxy/transport/socket_address.h"

namespace memshard::proxy {

namespace {
constexpr size_t kMaxFreeSlots = 1024;
// Parked at once by one sweep, connections whose memory is worth returning
// to the kernel at once.
constexpr size_t kParkingWave = 64;
constexpr int kCpuUnread = -2;
// How long a client's CPU, once read, stands during moves: its client
// thread may run on the other CPU a moment later (two client threads share
// one CPU for a while), and a CPU read once per placement then kept
// everything on one worker for the whole move window.
constexpr uint64_t kCpuReadEveryUsec = 100'000;
}  // namespace

Worker::Worker(WorkerHost& host, int index, int park_after_ms, StreamLoop::Writes writes)
    : host_(host),
      index_(index),
      park_after_usec_(park_after_ms > 0 ? static_cast<uint64_t>(park_after_ms) * 1000 : 0),
      client_memory_(sizeof(ClientConn)) {
  // Every worker takes connections until the proxy places them (place()).
  placement_.active = std::numeric_limits<size_t>::max();
  event_config* cfg = event_config_new();
  // Each base is used by exactly one thread: no locking inside libevent.
  // No EVENT_BASE_FLAG_PRECISE_TIMER: with it libevent's epoll backend
  // reprograms a timerfd before every epoll_wait, one more system call per
  // loop iteration, which at low concurrency is half a call per request.
  // Without it libevent's own clock is the coarse one (4 ms ticks here), so
  // timers may fire a few milliseconds off; backend timeouts re-check the
  // precise time when they fire (BackendConn::on_timer), and request
  // latencies are read from now_usec(), which does not use libevent's clock.
  event_config_set_flag(cfg, EVENT_BASE_FLAG_NOLOCK);
  base_ = event_base_new_with_config(cfg);
  event_config_free(cfg);
  streams_ = std::make_unique<StreamLoop>(base_, writes);
  // Batched writes bring batched reads: run() reads each iteration's
  // readable sockets together (StreamLoop::read_ready).
  streams_->batch_reads(writes == StreamLoop::Writes::batched);
  mailbox_ = std::make_unique<Mailbox>(base_);
  reap_timer_ = std::make_unique<Timer>(base_, [this] { reap(); });
  housekeeping_timer_ = std::make_unique<Timer>(
      base_, [this] { housekeeping(); }, true);
  parked_ = std::make_unique<ParkedClients>(base_, [this](ParkedClients::Entry e) {
    stats_.parked_connections.sub();
    // Woken on a worker that no longer takes connections: the socket goes
    // to an active one before a byte is read.
    if (static_cast<size_t>(index_) >= placement_.active) {
      if (const int to = destination(e.fd, true); to >= 0) {
        stats_.curr_connections.sub();
        stats_.moved_connections.add();
        e.origin->stats->client_connections.sub();
        host_.hand_over(static_cast<size_t>(to), e.fd, e.origin->pool_name, e.origin->pool_clients,
                        ClientConn::Arrival::moved_text);
        return;
      }
    }
    add_client(e.fd, std::move(e.origin), ClientConn::Arrival::unparked);
  });
  housekeeping_timer_->arm_ms(1000);
}

Worker::~Worker() {
  stop();
  forget_clients(retired_);  // on both lists until reaped
  for (ClientConn* c : clients_) destroy_client(c);
  for (ClientConn* c : retired_) destroy_client(c);
  parked_.reset();
  routes_.clear();  // its connections' events live in base_
  for (ReplySlot* s : free_slots_) delete s;
  housekeeping_timer_.reset();
  foreign_warning_.reset();
  reap_timer_.reset();
  mailbox_.reset();  // its event lives in base_
  event_base_free(base_);
}

void Worker::start(std::shared_ptr<const Topology> topology) {
  apply_topology(std::move(topology));
  thread_ = std::thread([this] { run(); });
}

// One loop iteration runs every ready callback, reads every socket that
// was readable (in one system call when batched), then writes what they all
// produced: each socket gets one write per iteration however many requests
// or replies went to it.
void Worker::run() {
  tid_.store(static_cast<int>(gettid()), std::memory_order_relaxed);
  running_ = true;
  while (running_) {
    event_base_loop(base_, EVLOOP_ONCE);
    streams_->read_ready();
    streams_->flush();
    // After the flush: a client whose reply just went out owes nothing.
    if (moving_) move_clients();
    wakeups_.store(wakeups_.load(std::memory_order_relaxed) + 1, std::memory_order_relaxed);
    now_usec_ = 0;  // the next iteration reads the clock afresh
  }
}

uint64_t Worker::requests() const {
  return routes_.requests();
}

void Worker::place(Placement placement) {
  mailbox_->post([this, p = std::move(placement)]() mutable {
    placement_ = std::move(p);
    const uint64_t now = now_usec();
    cpus_read_at_usec_ = 0;  // client_cpu() reads every socket afresh
    moves_until_usec_ = now + 2'000'000;
    moving_ = true;
  });
}

int Worker::client_cpu(int fd) {
  if (fd < 0) return -1;
  const auto i = static_cast<size_t>(fd);
  if (const uint64_t now = now_usec(); now >= cpus_read_at_usec_ + kCpuReadEveryUsec) {
    std::fill(cpu_of_fd_.begin(), cpu_of_fd_.end(), kCpuUnread);
    cpus_read_at_usec_ = now;
  }
  if (i >= cpu_of_fd_.size()) cpu_of_fd_.resize(i + 1, kCpuUnread);
  if (cpu_of_fd_[i] == kCpuUnread) cpu_of_fd_[i] = incoming_cpu(fd);
  return cpu_of_fd_[i];
}

int Worker::destination(int fd, bool any) {
  const Placement& p = placement_;
  const bool inactive = static_cast<size_t>(index_) >= p.active;
  const int cpu = client_cpu(fd);
  if (cpu >= 0 && static_cast<size_t>(cpu) < p.worker_of_cpu.size()) {
    const int to = p.worker_of_cpu[static_cast<size_t>(cpu)];
    if (to >= 0 && to != index_ && static_cast<size_t>(to) < p.active &&
        (inactive || (static_cast<size_t>(to) < p.send.size() && p.send[to] > 0)))
      return to;
  }
  if (!any) return -1;
  // The active worker owed the most; for an inactive worker, with nothing
  // owed, the least loaded is as good as any: take turns.
  int best = -1;
  for (size_t j = 0; j < p.active && j < p.send.size(); ++j) {
    if (static_cast<int>(j) == index_) continue;
    if (best < 0 || p.send[j] > p.send[static_cast<size_t>(best)]) best = static_cast<int>(j);
  }
  if (best >= 0 && (inactive || p.send[static_cast<size_t>(best)] > 0)) return best;
  if (inactive && p.active > 0) return static_cast<int>(next_client_id_ % p.active);
  return -1;
}

void Worker::move_clients() {
  const bool inactive = static_cast<size_t>(index_) >= placement_.active;
  const uint64_t now = now_usec();
  // An active worker moves only connections whose packets arrive on a CPU
  // the other worker stands for: moving any other would put a client and
  // its worker on different CPUs, each request paying a cross-CPU wake-up
  // (measured: a 2x16 memcaslap load did 51k-68k requests/s with two
  // workers given arbitrary halves, 66k with the halves by CPU). When none
  // qualifies (one client thread) the extra worker gets nothing, and the
  // governor sends it back for that (WorkerGovernor::Settings::
  // newcomer_share), which is the right answer for that load.
  const bool any = inactive;
  uint64_t owed = 0;
  for (uint64_t n : placement_.send) owed += n;
  size_t moved = 0;
  std::erase_if(clients_, [&](ClientConn* c) {
    const bool held = c->held_for_move();
    if (!c->movable()) {
      // A client that never pauses (a deep pipeline) is held still until
      // what it sent is answered; no more are held than are to move.
      if (!held && (inactive || held_ < owed) && destination(c->fd(), any) >= 0 &&
          c->hold_for_move())
        ++held_;
      return false;
    }
    const int to = destination(c->fd(), any);
    if (to < 0) {
      if (held) {
        c->release_hold();
        --held_;
      }
      return false;
    }
    if (held) --held_;
    auto [fd, arrival] = c->release_for_move();
    const std::shared_ptr<const ClientOrigin> origin = c->origin();
    destroy_client(c);
    if (!inactive) {
      --placement_.send[static_cast<size_t>(to)];
      --owed;
    }
    host_.hand_over(static_cast<size_t>(to), fd, origin->pool_name, origin->pool_clients, arrival);
    ++moved;
    return true;
  });
  stats_.moved_connections.add(moved);
  if (inactive) {
    // Until every client that can move has: those in the middle of a
    // request go when it is done.
    moving_ = !clients_.empty() && !clients_draining_;
  } else {
    moving_ = owed > 0 && now < moves_until_usec_ && !clients_draining_;
  }
  if (moving_ || held_ == 0) return;
  // The moves are over (done, out of time, or draining): whoever is still
  // held reads again.
  for (ClientConn* c : clients_) c->release_hold();
  held_ = 0;
}

void Worker::stop() {
  stopping_.store(true, std::memory_order_relaxed);
  if (thread_.joinable()) {
    mailbox_->post([this] {
      close_all_parked();
      running_ = false;  // this iteration is the loop's last
    });
    thread_.join();
  }
  // What was posted after the loop's last wake, or to a worker that never
  // started, runs here (the loop is over, so this thread may): clients
  // handed over are closed and uncounted rather than leaked.
  mailbox_->run_pending();
}

// One task per accepted connection, so one allocation (the task's
// std::function) per accept: nothing on the request path, and small beside
// the accept itself and the ClientConn it becomes.
void Worker::adopt_client(int fd, std::string pool_name, std::shared_ptr<ClientCount> pool_clients,
                          ClientConn::Arrival arrival) {
  // Counted before the task is posted: the mailbox's lock orders this before
  // the task's decrement, so the count never dips below what is in flight.
  handed_over_.fetch_add(1, std::memory_order_relaxed);
  mailbox_->post([this, fd, pool = std::move(pool_name), clients = std::move(pool_clients),
                  arrival]() mutable {
    if (stopping_.load(std::memory_order_relaxed)) {
      close(fd);
      clients->remove();
      handed_over_.fetch_sub(1, std::memory_order_relaxed);
      return;
    }
    ClientConn* c = add_client(fd, origin_for(pool, std::move(clients)), arrival);
    // Moved in after a drain began: it gets what the others get.
    if (clients_draining_) c->close_when_idle();
    // Sent here just as this worker stopped taking connections: on.
    if (static_cast<size_t>(index_) >= placement_.active && !clients_draining_) moving_ = true;
    // Counted as a connection now (the ClientConn counts itself), so no
    // longer as handed over; release pairs with client_load().
    handed_over_.fetch_sub(1, std::memory_order_release);
  });
}

uint64_t Worker::client_load() const {
  // Adoption counts a client as a connection first and only then stops
  // counting it as handed over (release). Reading in the other order
  // (acquire) means a client adopted between the two reads is counted
  // twice, never zero times: read the other way, a batch of adoptions could
  // make a busy worker look idle and draw every following accept to it.
  uint64_t handed = handed_over_.load(std::memory_order_acquire);
  return handed + stats_.curr_connections.get();
}

void Worker::drain() {
  mailbox_->post([this] {
    // A worker that is stopping closes everything anyway.
    if (stopping_.load(std::memory_order_relaxed)) return;
    clients_draining_ = true;
    moving_ = false;
    close_all_parked();
    for (ClientConn* c : clients_) c->close_when_idle();
  });
}

// Coalesced: of several installs before the worker gets to them, only the
// newest is applied. Applying an older one first would be harmless but not
// free: it would set up backends (and counters) for servers the newest no
// longer lists, only to move them to draining_, and would tell every client
// its routes changed once more.
void Worker::install_topology(std::shared_ptr<const Topology> topology) {
  bool task_pending;
  {
    std::lock_guard<std::mutex> lock(topology_mu_);
    task_pending = latest_topology_ != nullptr;
    latest_topology_ = std::move(topology);
  }
  if (task_pending) return;  // it has not taken latest_topology_ yet: it applies this one
  mailbox_->post([this] {
    std::shared_ptr<const Topology> newest;
    {
      std::lock_guard<std::mutex> lock(topology_mu_);
      newest = std::move(latest_topology_);
    }
    // Stopping: the loop ends at once, nothing would use the routes.
    if (newest && !stopping_.load(std::memory_order_relaxed)) apply_topology(std::move(newest));
  });
}

std::shared_ptr<const ClientOrigin> Worker::origin_for(const std::string& pool_name,
                                                       std::shared_ptr<ClientCount> clients) {
  const PoolRoute* r = route(pool_name);
  // A pool that just went away still gets counters, for the replies owed.
  std::shared_ptr<PoolStats> stats = r != nullptr ? r->stats : std::make_shared<PoolStats>();
  for (const auto& o : origins_) {
    if (o->pool_name == pool_name && o->pool_clients == clients && o->stats == stats) return o;
  }
  auto o = std::make_shared<const ClientOrigin>(
      ClientOrigin{pool_name, std::move(clients), std::move(stats)});
  origins_.push_back(o);
  return o;
}

ClientConn* Worker::add_client(int fd, std::shared_ptr<const ClientOrigin> origin,
                               ClientConn::Arrival arrival) {
  void* memory = client_memory_.allocate();
  auto* c = new (memory) ClientConn(*this, fd, std::move(origin), next_client_id_++, arrival);
  clients_.push_back(c);
  return c;
}

// One pass over the client list, however many closed: thousands of clients
// that leave together (a client fleet restarting) cost a sort, not a
// search of the list each.
void Worker::forget_clients(std::vector<ClientConn*>& gone) {
  if (gone.empty()) return;
  std::sort(gone.begin(), gone.end());
  std::erase_if(clients_,
                [&](ClientConn* c) { return std::binary_search(gone.begin(), gone.end(), c); });
}

void Worker::destroy_client(ClientConn* client) {
  client->~ClientConn();
  client_memory_.deallocate(client);
}

void Worker::park_idle_clients() {
  if (park_after_usec_ == 0) return;
  uint64_t now = now_usec();
  if (now < park_after_usec_) return;
  uint64_t idle_since = now - park_after_usec_;
  size_t parked = 0;
  std::erase_if(clients_, [&](ClientConn* c) {
    if (!c->parkable(idle_since)) return false;
    // Into the parked set first: should the kernel refuse, nothing changed.
    if (!parked_->park(c->fd(), c->origin(), c->last_input_usec())) return false;
    c->release_for_parking();
    destroy_client(c);
    ++parked;
    return true;
  });
  stats_.parked_connections.add(parked);
  if (parked < kParkingWave) return;
  // A wave of connections went idle together (a client fleet's burst is
  // over): give back what they had grown, which malloc would otherwise keep
  // (main.cc tells it to), now rather than never.
  if (clients_.size() < clients_.capacity() / 4) clients_.shrink_to_fit();
  client_memory_.release_spare();
  event_memory::release_cached();  // the buffer chains this thread kept for the burst
  malloc_trim(0);
}

void Worker::close_idle_clients() {
  // Connections in use keep their pool's timeout themselves (it changes
  // with a reload); parked ones are asked by origin.
  uint64_t now = now_usec();
  for (ClientConn* c : clients_) c->close_if_idle(now);
  if (parked_->size() == 0) return;
  // Each pool's client_idle_timeout, looked up once per origin.
  std::vector<std::pair<const ClientOrigin*, uint64_t>> timeouts;
  for (const auto& o : origins_) {
    const PoolRoute* r = route(o->pool_name);
    int ms = r != nullptr ? r->pool->config.client_idle_timeout_ms : 0;
    if (ms > 0) timeouts.emplace_back(o.get(), static_cast<uint64_t>(ms));
  }
  if (timeouts.empty()) return;
  close_parked(parked_->take_if(now_usec(), [&](const ParkedClients::View& v) {
    for (const auto& [origin, ms] : timeouts) {
      if (origin == &v.origin) return v.idle_ms >= ms;
    }
    return false;
  }));
}

void Worker::close_all_parked() {
  close_parked(parked_->take_if(now_usec(), [](const ParkedClients::View&) { return true; }));
}

void Worker::close_parked(std::vector<ParkedClients::Entry> entries) {
  for (ParkedClients::Entry& e : entries) {
    close(e.fd);
    stats_.parked_connections.sub();
    stats_.curr_connections.sub();
    e.origin->stats->client_connections.sub();
    e.origin->pool_clients->remove();
  }
}

void Worker::apply_topology(std::shared_ptr<const Topology> topology) {
  routes_.apply(std::move(topology));
  // Clients of a pool that is gone get the replies they are owed, then
  // close; the others take their pool's new settings. Parked ones of a pool
  // that is gone owe nothing and close now.
  for (ClientConn* c : clients_) c->on_routes_changed();
  close_parked(parked_->take_if(now_usec(), [this](const ParkedClients::View& v) {
    return route(v.origin.pool_name) == nullptr;
  }));
}

void Worker::collect(StatsSnapshot& out) const {
  routes_.collect(out);
}

const PoolRoute* Worker::route(const std::string& pool_name) const {
  return routes_.route(pool_name);
}

// Read once per loop iteration (clock_gettime is a vDSO call, no syscall):
// every request handled in one iteration arrived in the same epoll_wait
// return, so they share one timestamp.
uint64_t Worker::now_usec() {
  if (now_usec_ == 0) now_usec_ = monotonic_usec();
  return now_usec_;
}

ReplySlot* Worker::acquire_slot(SlotOwner* owner) {
  ReplySlot* s;
  if (free_slots_.empty()) {
    s = new ReplySlot();
  } else {
    s = free_slots_.back();
    free_slots_.pop_back();
  }
  s->set_owner(owner);
  return s;
}

void Worker::release_slot(ReplySlot* slot) {
  // The pool keeps what steady traffic needs; slots beyond that (after a
  // burst of thousands of clients) are freed rather than held forever.
  if (free_slots_.size() >= kMaxFreeSlots) {
    delete slot;
    return;
  }
  slot->reset();
  free_slots_.push_back(slot);
}

void Worker::append_stats(const std::vector<std::string_view>& args, std::string& out) {
  append_stats_reply(host_.stats_view(), args, out);
}

void Worker::closed_foreign(const std::string& pool, Foreign what) {
  if (!foreign_warning_) {
    foreign_warning_ = std::make_unique<WarningThrottle>(base_, [this] {
      for (const auto& [key, n] : foreign_) {
        log_warn(key.second == Foreign::http
                     ? "pool '%s': %llu client(s) sent an HTTP request and were closed without "
                       "a word, as memcached closes them (a browser page or a forged request "
                       "pointed at this port)"
                     : "pool '%s': %llu client(s) began a TLS handshake on a listener without "
                       "TLS and were closed (give the pool tls_cert_file, or connect without "
                       "TLS)",
                 key.first.c_str(), static_cast<unsigned long long>(n));
      }
      foreign_.clear();
    });
  }
  ++foreign_[{pool, what}];
  foreign_warning_->note();
}

void Worker::server_failing(const std::string& pool, const std::string& identity) {
  host_.server_failing(pool, identity);
}

void Worker::server_unreachable(const std::string& pool, const std::string& identity) {
  host_.server_unreachable(pool, identity);
}

void Worker::retire(ClientConn* client) {
  retired_.push_back(client);
  reap_timer_->fire_soon();
}

void Worker::reap() {
  Worker* w = this;
  std::vector<ClientConn*> dead;
  dead.swap(w->retired_);
  w->forget_clients(dead);
  for (ClientConn* c : dead) w->destroy_client(c);
  w->routes_.reap();
}

void Worker::housekeeping() {
  Worker* w = this;
  reap();
  // Connections to addresses a server's name no longer resolves to, once
  // they owe nothing: once a second, not at every client's close.
  w->routes_.housekeeping(w->now_usec());
  // Closing first: a client past its timeout is not parked only to close.
  w->close_idle_clients();
  w->park_idle_clients();
  w->parked_->shrink();
  // Pages of connections that parked or closed since, among those still
  // open: a few active clients must not keep the memory of the many idle.
  w->client_memory_.release_free_pages();
  std::erase_if(w->origins_, [](const auto& o) { return o.use_count() == 1; });
}

}  // namespace memshard::proxy
