// A request kept by a route that may send it more than once (failover, to
// the next server) or to several servers (fan-out), with the slots those
// sends fill before the client's slot sees one reply. The client's bytes
// move to a server's output when sent once; a held request keeps a copy,
// and its own parse of the line (the client's parse space is reused by the
// next request).
#pragma once

#include <event2/buffer.h>

#include <string>
#include <string_view>

#include "proxy/protocol/request_parser.h"
#include "proxy/routes/route.h"

namespace memshard::proxy {

class HeldRequest {
 public:
  // Takes req's bytes out of req.in.
  explicit HeldRequest(RouteRequest& req);
  // Holds `bytes` (a request line and its terminator, `header_bytes` long,
  // then its data), a request made by the proxy (the client's written
  // another way, meta_codec.h; one key of a multi-get), sent on `context`'s
  // behalf. context.in is not touched.
  HeldRequest(const RouteRequest& context, std::string bytes, size_t header_bytes);
  // The same, on the behalf `like` acts on.
  HeldRequest(const HeldRequest& like, std::string bytes, size_t header_bytes);
  ~HeldRequest();
  HeldRequest(const HeldRequest&) = delete;
  HeldRequest& operator=(const HeldRequest&) = delete;

  // Sends a copy to `route`, filling `slot`.
  void send_copy(Route& route, ReplySlot& slot);
  SlotSource& slots() const { return slots_; }
  // Holds another request instead (for the sends after this one).
  void replace(std::string bytes, size_t header_bytes);
  const proto::Request& request() const { return request_; }
  // The data block without its "\r\n" (storage requests), else empty.
  std::string_view value() const;
  WorkerStats& worker_stats() const { return worker_stats_; }
  PoolStats& pool_stats() const { return pool_stats_; }

 private:
  void parse();

  std::string line_;
  std::string bytes_;  // line, terminator and data, as the client sent them
  size_t header_bytes_;
  proto::Request request_;
  evbuffer* in_;
  uint64_t affinity_;
  // The first send's time. A later send (a failover, the copies after a
  // first copy's decision) takes the clock's time then: its operation
  // joins a server's queue behind others sent since, and a deadline
  // already past would make that server's connection look stalled (a
  // connection's timer follows its oldest operation).
  uint64_t now_usec_;
  bool sent_ = false;
  RequestScratch& scratch_;
  SlotSource& slots_;
  WorkerStats& worker_stats_;
  PoolStats& pool_stats_;
};

// Ends a route's in-flight work on a client's slot: `work` (the object
// holding the request) is deleted, then the slot's fragment is done. The
// slot's owner is told unless `synchronous`: known before the route's
// send() returned, the reply is not reported, as the client writes
// complete slots when its dispatch returns.
template <typename Work>
void finish_work(Work* work, ReplySlot& client, bool synchronous) {
  delete work;
  if (synchronous) {
    client.fragment_done_unreported();
  } else {
    client.fragment_done();
  }
}

// Sends `bytes` (a request line of `header_bytes`, then its data) to
// `route` on `like`'s behalf without waiting for the answer (read repair,
// the touches of a gat's other copies, the delete that undoes a copy):
// what it holds frees itself once the server answered.
void send_unanswered(const HeldRequest& like, std::string bytes, size_t header_bytes, Route& route,
                     RouteLife* life);

// What a reply says, for routes that choose between replies.
bool is_server_error(const ReplySlot& slot);
// A quiet request (classic noreply) that failed: the client is told
// nothing, so the reply is empty, but its fragment says so.
bool failed_silently(const ReplySlot& slot);
// A miss of a single-key read: "END" of a get, "EN" of an mg.
bool is_miss(const ReplySlot& slot);
// A copy of the slot's reply so far, for routes that read it before the
// client does.
std::string reply_text(const ReplySlot& slot);
// Moves `from`'s reply into `to`'s.
void take_reply(ReplySlot& to, ReplySlot& from);

}  // namespace memshard::proxy
