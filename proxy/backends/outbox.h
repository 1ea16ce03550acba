// A server as routes see it, apart from how it is reached: routes ask a
// Server for the Outbox of a client and put requests in it, each with the
// operation that says how its reply is read and which slot it fills.
// BackendServer and BackendConn implement these; route tests fake them.
#pragma once

#include <event2/buffer.h>

#include <cstdint>
#include <span>
#include <string_view>

#include "proxy/protocol/replies.h"

namespace memshard::proxy {

struct ServerStats;
class RepairLog;

struct ReplySlot;

// How the reply to one operation is read and where it goes.
enum class ReplyMode : uint8_t {
  retrieval,   // VALUE blocks until END, into the fragment's buffer
  single,      // one line (storage, delete, incr/decr, touch)
  meta,        // one line, or VA + data (mg, ms, md, ma, me)
  quiet_keep,  // everything up to the MN that follows a quiet meta request
  quiet_drop,  // everything up to MN, discarded (classic noreply)
  // Everything up to MN, discarded, leaving the slot as it is: the read
  // gate's delete before a read (repair_log.h), which shares the read's
  // slot and must not change what the client is told. (If its connection
  // fails, the read after it fails with it.)
  quiet_ignore,
  broadcast,   // one line, "OK" expected (flush_all)
};

struct BackendOp {
  ReplySlot* slot = nullptr;
  uint32_t fragment = 0;
  ReplyMode mode = ReplyMode::single;
  uint64_t sent_usec = 0;
  uint32_t request_bytes = 0;
  // Retrieval: the next operation's keys are on this one's request line,
  // and the END after them ends both (see BackendConn::enqueue_retrieval).
  bool shares_line_with_next = false;
  // The request changes its key(s) (repair_log.h): if it fails, the server
  // may hold the old value, or take the write later, so the key is
  // recorded. A retrieval's keys are its fragment's; another request's key
  // is `key`, which the outbox keeps until the reply.
  bool writes = false;
  std::string_view key{};
  // A write that replaces the value (set, delete, ...), sent while the
  // server's repair log was not clear: the log's sequence then, so that its
  // success forgets what was recorded before (0: none).
  uint64_t repair_seq = 0;
  // The outbox's own: where it keeps `key` until the reply.
  uint32_t key_at = 0;
  uint16_t key_len = 0;
};

class Outbox {
 public:
  // The buffer to append one request's bytes to; every request appended
  // must be followed by exactly one enqueue().
  virtual evbuffer* output() = 0;
  virtual void enqueue(BackendOp op) = 0;
  // A get or gets for `keys` (verb "get" or "gets"; op.mode retrieval),
  // which the outbox may join with others on one line.
  virtual void enqueue_retrieval(std::string_view verb, std::span<const std::string_view> keys,
                                 BackendOp op) = 0;

 protected:
  ~Outbox() = default;
};

class Server {
 public:
  // The outbox of a client with this affinity (a client's requests to one
  // server stay in order in it); null while the server is unavailable.
  virtual Outbox* outbox(uint64_t affinity) = 0;
  // The server's counters, for routes that count per server what only
  // they know (a write that went to a key's second copy); null in tests.
  virtual ServerStats* counters() { return nullptr; }
  // Why outbox() last gave none: the proxy's SERVER_ERROR line for it
  // (unavailable, or its queue full).
  virtual std::string_view refusal() const { return proto::reply::own::kBackendUnavailable; }
  // Refusing connections now: outbox() would give none until a retry is
  // due. (A server whose queue is full is not down: it is slow.)
  virtual bool down() const { return false; }
  // What the server may hold stale (repair_log.h); null in tests.
  virtual RepairLog* repairs() const { return nullptr; }

 protected:
  ~Server() = default;
};

}  // namespace memshard::proxy
