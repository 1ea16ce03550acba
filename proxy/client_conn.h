// One client connection: parses requests off its input, routes each one,
// and writes replies strictly in request order from a FIFO of reply slots,
// whatever order the servers answer in.
#pragma once

#include <atomic>
#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "proxy/fifo.h"
#include "proxy/request_parser.h"
#include "proxy/request_scratch.h"
#include "proxy/stats.h"
#include "proxy/stream.h"

namespace memshard::proxy {

class Worker;
struct ReplySlot;
struct PoolRoute;

// Bounds on what one client may make the proxy hold. Past them the proxy
// stops reading from the client (backpressure) until replies drain.
inline constexpr size_t kMaxPendingReplies = 1024;
inline constexpr size_t kMaxBufferedOutput = 8 * 1024 * 1024;
// Keys whose replies are owed (a multi-get counts each key): each may
// bring back up to item_size_max bytes, so this bounds the replies held
// for a client that does not read (128 x 1 MiB values at worst).
inline constexpr size_t kMaxKeysInFlight = 128;
// memcached judges an over-long line on what one read of its 16 KiB
// buffer brought.
inline constexpr size_t kMemcachedReadBuffer = 16 * 1024;

class ClientConn {
 public:
  ClientConn(Worker& worker, int fd, std::string pool_name, uint64_t id,
             std::shared_ptr<std::atomic<uint32_t>> pool_clients);
  ~ClientConn();
  ClientConn(const ClientConn&) = delete;
  ClientConn& operator=(const ClientConn&) = delete;

  // A slot of this client became complete.
  void on_slot_complete();
  const std::string& pool_name() const { return pool_name_; }
  // The worker's routes changed (reload, ejection): take the pool's new
  // settings now, or close after the replies owed if the pool is gone.
  void on_routes_changed();
  // Answers the requests already received, then closes once their replies
  // are written (pool removed, graceful shutdown).
  void close_when_idle();

 private:
  static void on_stream(void* self, Stream::Happened what);

  void process_input();
  // Returns false when input must wait for more bytes.
  bool next_request();
  // Parses the request line at the front of `in` into the scratch space.
  void parse_line(evbuffer* in, size_t line_len);
  void dispatch(evbuffer* in);
  void forward(const PoolRoute& route, evbuffer* in);
  void multi_get(const PoolRoute& route, evbuffer* in);
  void invalidate(const PoolRoute& route);
  void broadcast(const PoolRoute& route, evbuffer* in);
  void answer_locally(evbuffer* in);
  void use_route(const PoolRoute* route);
  ReplySlot* new_slot();
  void count_fragment();
  void count_forward_error();
  void reply_now(ReplySlot* slot, std::string_view text);
  void flush_ready();
  void shut();

  Worker& worker_;
  RequestScratch& work_;  // the worker's, shared by its clients
  Stream stream_;
  std::string pool_name_;
  uint64_t id_;
  std::shared_ptr<std::atomic<uint32_t>> pool_clients_;
  std::shared_ptr<PoolStats> pool_stats_;  // counters of the pool it connected to
  // The pool's routes, looked up again only when the worker's routes change.
  const PoolRoute* route_ = nullptr;
  uint64_t route_epoch_ = ~uint64_t{0};
  proto::Limits limits_;
  Fifo<ReplySlot*> slots_;
  size_t header_bytes_ = 0;  // line + terminator of the request being handled
  // A request line seen whose value has not fully arrived: the bytes the
  // request takes (line, terminator, value), and the line's length.
  uint64_t awaiting_bytes_ = 0;
  size_t line_bytes_ = 0;
  uint64_t swallow_left_ = 0;
  size_t keys_in_flight_ = 0;  // keys of the slots not yet written out
  bool in_process_ = false;
  bool paused_ = false;
  bool closing_ = false;  // no more input; close once replies are written
  bool closed_ = false;   // socket gone; waiting for owed slots to finish
};

}  // namespace memshard::proxy
