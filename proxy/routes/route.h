// Routes: where a client's request goes and how its reply is made. A route
// takes a request and the slot its reply is owed in, sends it on to one or
// more servers (or answers it), and the slot completes when the servers
// have answered. Routes compose: a pool's routes are a small tree built
// from its config and ring (pool_route.h), rebuilt when the topology
// changes, as the ring is.
//
// A route consumes the request's bytes from the client's input: it moves
// them to a server's output when they can go as the client wrote them (no
// copy), or drains them.
#pragma once

#include <event2/buffer.h>

#include <cstddef>
#include <cstdint>
#include <string_view>

#include "proxy/backends/reply_slot.h"
#include "proxy/protocol/request_parser.h"
#include "proxy/routes/request_scratch.h"
#include "proxy/support/stats.h"

namespace memshard::proxy {

class RepairLog;

// One request on its way, with what routes need around it.
struct RouteRequest {
  const proto::Request& request;  // parsed, views into `line`
  evbuffer* in;                   // the request's bytes at its front
  size_t header_bytes;            // its line and terminator
  std::string_view line;          // the line, terminator excluded
  uint64_t affinity;              // the client's: its requests to one server keep one connection
  uint64_t now_usec;
  RequestScratch& scratch;  // the worker's, for lines built here
  SlotSource& slots;
  WorkerStats& worker_stats;
  PoolStats& pool_stats;
  // Set when the request goes to another server in place of its key's
  // home (ejected or down): the home's repair log, which records a write
  // of the key together with where it went (repair_log.h).
  RepairLog* home = nullptr;

  // Line, terminator and data block.
  size_t bytes() const { return header_bytes + request.data_bytes; }
  void count_fragment() const {
    worker_stats.fragments.add();
    pool_stats.fragments.add();
  }
  void count_error() const {
    worker_stats.forward_error.add();
    pool_stats.forward_error.add();
  }
};

class Route {
 public:
  virtual ~Route() = default;
  // Sends `req` on, consuming its bytes from req.in, and fills `slot`:
  // completed before returning (answered here), or set up with the
  // operations whose replies complete it.
  virtual void send(RouteRequest& req, ReplySlot& slot) = 0;
};

// A route for single-key requests, which can also delete the key: a set
// refused as too large must not leave the old value behind (memcached
// deletes it), on every copy the key has.
class SingleKeyRoute : public Route {
 public:
  // The slot already holds the refusal, which is all the client sees,
  // after the delete. The deletes become operations the slot expects; the
  // caller completes it (complete_unsent) once every route has added its
  // own. The request's bytes are not touched.
  virtual void invalidate(RouteRequest& req, ReplySlot& slot) = 0;
};

// What keeps a pool's routes alive while requests they hold are in
// flight. Composite routes (failover, fan-out) hold a request across
// server round trips and send it on later; their routes, placements and
// ring must outlive it, though a reload or an ejection may have replaced
// them meanwhile. Each held request counts itself here, and the worker
// frees replaced routes (and the servers that left with them) once their
// count is zero.
struct RouteLife {
  uint32_t held_requests = 0;
};

// Counts a held request for as long as it lives.
class HeldCount {
 public:
  explicit HeldCount(RouteLife* life) : life_(life) {
    if (life_ != nullptr) ++life_->held_requests;
  }
  ~HeldCount() {
    if (life_ != nullptr) --life_->held_requests;
  }
  HeldCount(const HeldCount&) = delete;
  HeldCount& operator=(const HeldCount&) = delete;

 private:
  RouteLife* life_;
};

// Appends `line` and "\r\n" to the slot's reply and completes it; nothing
// for an empty line. For answers a route gives itself.
void answer(ReplySlot& slot, std::string_view line);

}  // namespace memshard::proxy
