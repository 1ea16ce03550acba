// One client connection: parses requests off its input, routes each one,
// and writes replies strictly in request order from a FIFO of reply slots,
// whatever order the servers answer in.
#pragma once

#include <atomic>
#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "proxy/backends/reply_slot.h"
#include "proxy/clients/client_count.h"
#include "proxy/clients/context.h"
#include "proxy/protocol/binary_request.h"
#include "proxy/protocol/request_parser.h"
#include "proxy/routes/request_scratch.h"
#include "proxy/routes/route.h"
#include "proxy/support/fifo.h"
#include "proxy/support/stats.h"
#include "proxy/transport/stream.h"

namespace memshard::proxy {

// Where a client connection came in: its pool's listener. One is shared by
// the clients of a listener on a worker, and a parked connection keeps it.
struct ClientOrigin {
  std::string pool_name;
  // The listener's count of open clients, which the connection leaves
  // when it closes.
  std::shared_ptr<ClientCount> pool_clients;
  // The counters of the pool the clients connected to. A pool removed and
  // added again by reloads gets new counters; its old clients keep these.
  std::shared_ptr<PoolStats> stats;
};

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

class ClientConn final : public SlotOwner {
 public:
  // How the socket came to this worker. A parked connection coming back is
  // already counted here; one moved from another worker (which counted it
  // out) is counted again, not as a new connection, and keeps the protocol
  // it spoke there.
  enum class Arrival : uint8_t { accepted, unparked, moved_undecided, moved_text, moved_binary };

  ClientConn(ClientContext& context, int fd, std::shared_ptr<const ClientOrigin> origin,
             uint64_t id, Arrival arrival);
  ~ClientConn();
  ClientConn(const ClientConn&) = delete;
  ClientConn& operator=(const ClientConn&) = delete;

  // A slot of this client became complete.
  void on_slot_complete() override;
  const std::shared_ptr<const ClientOrigin>& origin() const { return origin_; }
  // The worker's routes changed (reload, ejection): take the pool's new
  // settings now, or close after the replies owed if the pool is gone.
  void on_routes_changed();
  // Answers the requests already received, then closes once their replies
  // are written (pool removed, graceful shutdown).
  void close_when_idle();

  // Closes the connection if its pool's client_idle_timeout has passed
  // since its last input and it is owed nothing; true when it did. The
  // worker's once-a-second sweep asks, as it asks parked connections: one
  // clock for both.
  bool close_if_idle(uint64_t now_usec);
  // Nothing owed, buffered or half-received, and no input since
  // `idle_since_usec`: the connection may be reduced to its socket.
  bool parkable(uint64_t idle_since_usec) const;
  uint64_t last_input_usec() const { return last_input_usec_; }
  int fd() const { return stream_.fd(); }
  // Hands over the socket, no longer watched, for parking; the connection
  // is then destroyed without being counted as closed.
  int release_for_parking() { return stream_.release_fd(); }
  // Owed nothing, nothing buffered either way, not mid-request, not TLS
  // (its session lives in the stream): the next byte the client sends is
  // still in the kernel, so another worker can take the socket over and
  // no reply can be lost or reordered.
  bool movable() const;
  // For a connection that keeps requests in flight all the time (a deep
  // pipeline never owes nothing): stops reading from its socket, so that
  // once what it already sent is answered it is movable, the rest of its
  // requests waiting in the kernel for the new worker. False when it
  // cannot be held (TLS, closing, half a request buffered).
  bool hold_for_move();
  // Reads again: the move it was held for is off.
  void release_hold();
  bool held_for_move() const { return held_for_move_; }
  // For a movable connection: counts it out of this worker and hands over
  // the socket, with how the taking worker must resume it. The connection
  // is then destroyed.
  std::pair<int, Arrival> release_for_move();

 private:
  static void on_stream(void* self, Stream::Happened what);

  void process_input();
  // Returns false when input must wait for more bytes.
  bool next_request();
  bool next_binary_request();
  // Parses the request line at the front of `in` into the scratch space.
  void parse_line(evbuffer* in, size_t line_len);
  void dispatch(evbuffer* in);
  // The request being dispatched, for its pool's routes.
  RouteRequest route_request(evbuffer* in);
  void answer_locally(evbuffer* in);
  void use_route(const PoolRoute* route);
  void start_tls(const TlsContext& tls);
  ReplySlot* new_slot();
  void reply_now(ReplySlot* slot, std::string_view text);
  // Replies with one of the proxy's own lines (replies.h), "\r\n" added.
  void reply_line(ReplySlot* slot, std::string_view line);
  void flush_ready();
  void owe(const proto::binary::ReplyContext& context, bool raw);
  void shut();
  void close_foreign(ClientContext::Foreign what);

  // What a connection speaking the binary protocol needs besides the
  // text path: most clients never do, so it exists only once one has.
  struct Binary {
    Binary();
    ~Binary();
    Binary(const Binary&) = delete;
    Binary& operator=(const Binary&) = delete;
    proto::binary::Translation translation;
    // The translated request, which routes take from as from a text
    // client's input.
    evbuffer* request;
    std::string frame;  // the header, extras and key of the frame at hand
    std::string text;   // a text reply being encoded
    std::string reply;  // its binary form
    // One per slot owed, in the same order: how to answer it. A slot whose
    // reply the proxy made in binary itself is `raw`.
    struct Owed {
      proto::binary::ReplyContext context;
      bool raw = false;
    };
    Fifo<Owed> owed;
  };

  ClientContext& context_;
  RequestScratch& work_;  // the context's, shared by its clients
  Stream stream_;
  std::shared_ptr<const ClientOrigin> origin_;
  PoolStats& pool_stats_;  // origin_->stats
  uint64_t id_;
  uint64_t last_input_usec_;
  uint64_t idle_timeout_usec_ = 0;  // client_idle_timeout; 0: never
  // The pool's routes, looked up again only when the worker's routes change.
  const PoolRoute* route_ = nullptr;
  uint64_t route_epoch_ = ~uint64_t{0};
  proto::Limits limits_;
  SlotQueue slots_;
  size_t header_bytes_ = 0;  // line + terminator of the request being handled
  // A request line seen whose value has not fully arrived: the bytes the
  // request takes (line, terminator, value), and the line's length.
  uint64_t awaiting_bytes_ = 0;
  size_t line_bytes_ = 0;
  uint64_t swallow_left_ = 0;
  size_t keys_in_flight_ = 0;  // keys of the slots not yet written out
  // Decided by the first byte, as memcached decides: 0x80 is binary.
  enum class Protocol : uint8_t { undecided, text, binary };
  Protocol protocol_ = Protocol::undecided;
  std::unique_ptr<Binary> binary_;
  bool in_process_ = false;
  bool paused_ = false;
  bool closing_ = false;        // no more input; close once replies are written
  bool closed_ = false;         // socket gone; waiting for owed slots to finish
  bool held_for_move_ = false;  // not reading, until moved (hold_for_move)
};

}  // namespace memshard::proxy
