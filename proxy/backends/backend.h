// Connections from one worker to one memcached server.
//
// A connection is pipelined: requests are written as they come and a FIFO
// of operations remembers what each reply belongs to; the server answers in
// order, so each reply parsed off the wire completes the oldest operation.
// Reply bytes are moved (not copied) from the socket buffer to the slot
// that owes them to a client.
#pragma once

#include <event2/buffer.h>
#include <event2/event.h>

#include <array>
#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "proxy/backends/context.h"
#include "proxy/backends/outbox.h"
#include "proxy/support/fifo.h"
#include "proxy/support/stats.h"
#include "proxy/support/timer.h"
#include "proxy/transport/socket_address.h"
#include "proxy/transport/stream.h"
#include "proxy/transport/tls_context.h"

namespace memshard::proxy {

struct Fragment;
struct ReplySlot;

struct ServerSettings {
  std::string pool;
  int timeout_ms = -1;  // -1: none
  uint32_t connections = 1;
  // auto_eject_hosts: report after this many failures in a row; 0 = never.
  uint32_t failure_limit = 0;
  // The largest value a reply may announce (the pool's item_size_max, which
  // matches the servers' -I): a server announcing more is broken, and its
  // reply is refused before it can make us buffer gigabytes.
  uint64_t max_value_bytes = 1024 * 1024;
  // server_tls: connections speak TLS with this context (null: plain).
  std::shared_ptr<const TlsContext> tls;
  // server_queue_limit: past this many operations waiting on a connection,
  // its outbox refuses more (0: no limit).
  uint32_t queue_limit = 0;
  // repair_record: the most memory the server's repair log may take
  // (repair_log.h).
  size_t repair_limit_bytes = size_t{64} << 20;
};

class BackendConn;

// One server as seen by one worker: its connections and its health.
class BackendServer final : public Server {
 public:
  BackendServer(BackendContext& context, std::string identity, AddressList addresses,
                ServerSettings settings, std::shared_ptr<ServerStats> stats,
                std::shared_ptr<PoolStats> pool_stats);
  ~BackendServer();
  BackendServer(const BackendServer&) = delete;
  BackendServer& operator=(const BackendServer&) = delete;

  const std::string& identity() const { return identity_; }
  const ServerSettings& settings() const { return settings_; }
  void update_settings(ServerSettings s, std::shared_ptr<PoolStats> pool_stats);
  // The server's name resolves to other addresses now: connections to an
  // address no longer among them take no new requests, finish what they
  // owe and close (close_retired); new ones go to the new addresses.
  void update_addresses(const AddressList& addresses);
  // Closes the retired connections that owe nothing.
  void close_retired();
  // The connection a client with this affinity uses, so that one client's
  // requests to this server stay in order. Null while the server is in
  // its reconnect back-off: the caller fails the request at once.
  BackendConn* connection_for(uint64_t affinity);
  Outbox* outbox(uint64_t affinity) override;
  std::string_view refusal() const override { return refusal_; }
  bool down() const override {
    return retry_after_usec_ != 0 && context_.now_usec() < retry_after_usec_;
  }
  ServerStats* counters() override { return stats_.get(); }
  RepairLog* repairs() const override { return repairs_; }
  // Ends a reconnect back-off now: for a caller that spaces its own tries
  // (a health probe, every server_retry_timeout).
  void forget_backoff() { retry_after_usec_ = 0; }

  // Called by connections.
  void on_connect_failed();
  // A connection reached addresses()[index]: later ones start there.
  void on_connected(size_t index);
  void on_failure();  // an operation or connection failed
  void on_success() { failures_in_a_row_ = 0; }
  BackendContext& context() { return context_; }
  ServerStats& stats() { return *stats_; }
  PoolStats& pool_stats() { return *pool_stats_; }
  const AddressList& addresses() const { return addresses_; }
  // Where a new connection starts trying: the address that last answered.
  size_t preferred_address() const { return preferred_; }
  bool idle() const;

 private:
  BackendContext& context_;
  std::string identity_;
  AddressList addresses_;
  size_t preferred_ = 0;
  ServerSettings settings_;
  std::shared_ptr<ServerStats> stats_;
  std::shared_ptr<PoolStats> pool_stats_;
  std::vector<std::unique_ptr<BackendConn>> conns_;
  std::vector<std::unique_ptr<BackendConn>> retired_;
  uint64_t retry_after_usec_ = 0;
  uint64_t backoff_usec_ = 0;
  uint32_t failures_in_a_row_ = 0;
  std::string_view refusal_;  // why outbox() last gave none
  RepairLog* repairs_;         // the process's log of this server
};

class BackendConn final : public Outbox {
 public:
  explicit BackendConn(BackendServer& server);
  ~BackendConn();
  BackendConn(const BackendConn&) = delete;
  BackendConn& operator=(const BackendConn&) = delete;

  // The buffer to append one request's bytes to (connecting if needed);
  // every request appended must be followed by exactly one enqueue(),
  // which counts the bytes appended since output() was called.
  evbuffer* output() override;
  void enqueue(BackendOp op) override;
  // Queues a get or gets for `keys` (verb "get" or "gets"; op.mode is
  // retrieval). Retrievals with the same verb queued one after another in
  // one loop iteration, by any clients, go out as one multi-get line: a
  // server answers "get a b c" for much less work than three gets, and the
  // reply is split back per operation by key order.
  void enqueue_retrieval(std::string_view verb, std::span<const std::string_view> keys,
                         BackendOp op) override;
  size_t in_flight() const { return ops_.size(); }
  // The address connected to or being connected to; null before the
  // first request and after a failure.
  const SocketAddress* peer() const;
  // The server's timeout changed: the operations in flight take it now.
  void rearm_timer();

 private:
  static void on_stream(void* self, Stream::Happened what);
  void on_timer();

  void connect();
  void start_tls(const TlsContext& tls);
  void on_connected();
  void read_replies();
  // Returns false when the reply stream is broken.
  // `line` (no "\r\n") and its `total` length with the terminator start
  // the input; `chain` is the input's first chain when `line` lies in it
  // (empty when the line was copied out), so a value that follows the line
  // there can be taken at once. The views end with the first change to
  // the input.
  bool take_line(evbuffer* in, std::string_view line, size_t total, std::string_view chain);
  size_t take_whole_blocks(ReplySlot& slot, Fragment& frag, std::string_view rest);
  void finish_op();
  // Finishes the oldest (retrieval) operation: its keys not yet answered
  // are misses, or all fail with `error` when it is not empty.
  void finish_retrieval(std::string_view error = {});
  // Ends the multi-get line being built, putting it in the output.
  void close_open_line();
  void count_enqueued(BackendOp& op);
  void fail(std::string_view reason);
  void arm_timer();
  // A write `op` failed or succeeded: its key(s) go to, or leave, the
  // server's repair log (repair_log.h).
  void note_write(const BackendOp& op, bool failed);
  std::string_view key_of(const BackendOp& op) const {
    return std::string_view(keys_).substr(op.key_at, op.key_len);
  }
  void keep_key(BackendOp& op);

  BackendServer& server_;
  std::unique_ptr<Stream> stream_;  // null until the first request
  Timer timer_;
  bool connected_ = false;
  bool counted_ = false;        // counted in server_connections
  size_t output_mark_ = 0;      // output length when output() was last called
  bool broken_ = false;         // connect() failed synchronously; the timer reports it
  std::string_view own_fault_;  // ... for want of descriptors or memory here (a reply line)
  uint64_t connect_started_usec_ = 0;
  Fifo<BackendOp> ops_;
  // The keys of the writes in ops_ (BackendOp::key_at), back to back;
  // emptied whenever ops_ is.
  std::string keys_;
  // The multi-get line still taking keys ("get k1 k2", no "\r\n" yet),
  // which ops_.back() and the operations before it sharing the line own;
  // closed before any other output and when the loop writes.
  std::string open_line_;
  std::string_view open_verb_;  // empty: no line is open
  // The keys on the open line, as a Bloom filter. A key asked twice on one
  // line is looked up twice; if a write lands between the lookups, one
  // VALUE comes back and nothing tells whose it is. So a request for a key
  // that may already be on the line starts a line of its own.
  std::array<uint64_t, 16> open_keys_{};
  // Scratch for enqueue_retrieval: each key's two bits, hashed once.
  std::vector<std::pair<uint32_t, uint32_t>> key_bits_;
  std::string line_;
  // Data block being read after a VALUE/VA line.
  uint64_t data_left_ = 0;
  evbuffer* data_dest_ = nullptr;  // null: discard
  bool data_ends_op_ = false;
  uint32_t block_position_ = 0;  // retrieval: the client key position of this block
  uint64_t block_bytes_ = 0;
  char block_tail_[2] = {0, 0};  // the last two data bytes seen
};

}  // namespace memshard::proxy
