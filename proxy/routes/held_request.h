// A request kept by a route that may send it more than once (failover, to
// the next server) or to several servers (fan-out). The client's bytes
// move to a server's output when sent once; a held request keeps a copy,
// and its own parse of the line (the client's parse space is reused by the
// next request). Routes send it with Call (work.h).
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
  // another way, meta_codec.h; one key of a multi-get; own_requests.h),
  // sent on `context`'s behalf. context.in is not touched.
  HeldRequest(const RouteRequest& context, std::string bytes, size_t header_bytes);
  // The same, on the behalf `like` acts on.
  HeldRequest(const HeldRequest& like, std::string bytes, size_t header_bytes);
  // A request of one line made by the proxy (own_requests.h).
  HeldRequest(const HeldRequest& like, std::string line) : HeldRequest(like, line, line.size()) {}
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
  // The sends after this go in place of the key's home server, whose
  // repair log this is (RouteRequest::home).
  void set_home(RepairLog* home) { home_ = home; }
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
  RepairLog* home_ = nullptr;
};

}  // namespace memshard::proxy
