// BackendConn: connecting (TLS included), queueing requests and joining
// gets into shared multi-get lines, the timeout timer, and failing what a
// broken connection owed. Reading the replies is backend_replies.cc.
#include <sys/socket.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <utility>

#include "proxy/backends/backend.h"
#include "proxy/backends/repair_log.h"
#include "proxy/backends/reply_slot.h"
#include "proxy/protocol/replies.h"
#include "proxy/protocol/reply_status.h"
#include "proxy/support/log.h"

namespace memshard::proxy {

namespace {

using proto::reply::own::kBackendClosed;
using proto::reply::own::kBackendTimeout;
using proto::reply::own::kBackendUnavailable;
using proto::reply::own::kNoDescriptors;
using proto::reply::own::kNoMemory;

// Why connect() failed here, when the fault is the proxy's own: the server
// must not be backed off from or counted as failing (and, with
// auto_eject_hosts, ejected: its keys would move) for it. Empty otherwise.
std::string_view own_fault(int err) {
  if (err == EMFILE || err == ENFILE) return kNoDescriptors;
  if (err == ENOBUFS || err == ENOMEM) return kNoMemory;
  return {};
}

// Bytes read per read(2): replies of many clients arrive together on one
// connection, so a read takes as much as memcached's own write buffer.
constexpr size_t kReadChunk = 32 * 1024;

// A shared multi-get line stops taking keys at this length: memcached reads
// a line up to 2048 bytes in its fast path (longer get lines move to a
// separate buffer), and a line this long already carries dozens of keys.
constexpr size_t kMaxSharedLine = 2048;

// The keys of writes in flight on one connection are compacted past this.
constexpr size_t kMaxKeptKeys = 64 * 1024;

// Two bits of a 1024-bit Bloom filter per key (FNV-1a).
std::pair<uint32_t, uint32_t> key_bits(std::string_view key) {
  uint64_t h = 14695981039346656037ull;
  for (unsigned char c : key) h = (h ^ c) * 1099511628211ull;
  return {static_cast<uint32_t>(h & 1023), static_cast<uint32_t>((h >> 10) & 1023)};
}

}  // namespace

BackendConn::BackendConn(BackendServer& server)
    : server_(server), timer_(server.context().base(), [this] { on_timer(); }) {}

BackendConn::~BackendConn() {
  if (counted_) server_.stats().server_connections.sub();
}

evbuffer* BackendConn::output() {
  if (stream_ == nullptr) connect();
  close_open_line();
  evbuffer* out = stream_->output();
  output_mark_ = evbuffer_get_length(out);
  return out;
}

void BackendConn::connect() {
  stream_ = std::make_unique<Stream>(server_.context().streams(), -1, &BackendConn::on_stream, this,
                                     kReadChunk, Stream::Reads::reserved);
  stream_->watch_flush(true);  // to close the open multi-get line
  connected_ = false;
  connect_started_usec_ = server_.context().now_usec();
  if (!stream_->connect(server_.addresses(), server_.preferred_address())) {
    // Fails before any operation is queued; report it from the loop.
    broken_ = true;
    own_fault_ = own_fault(errno);
    timer_.arm_usec(0);
    return;
  }
  // Unix sockets stay plain, as on the listening side.
  const auto& tls = server_.settings().tls;
  if (tls && stream_->peer() != nullptr && stream_->peer()->family() != AF_UNIX) start_tls(*tls);
  arm_timer();
}

// server_tls: the handshake follows the connect, and `connected` only comes
// once it is done, so the connect timer bounds both.
void BackendConn::start_tls(const TlsContext& tls) {
  // The host the identity names ("host:port", "[v6]:port"), for SNI and
  // verification when server_tls_name gives no name.
  const std::string& id = server_.identity();
  std::string host = id.substr(0, id.rfind(':'));
  if (host.size() >= 2 && host.front() == '[') host = host.substr(1, host.size() - 2);
  ServerStats& st = server_.stats();
  TlsCounters counters;
  counters.handshakes = &st.tls_handshakes;
  for (Counter*& c : counters.failures) c = &st.tls_failures;
  stream_->start_tls(tls.new_session(host), counters, server_.settings().timeout_ms);
}

const SocketAddress* BackendConn::peer() const {
  if (stream_ == nullptr || stream_->fd() < 0) return nullptr;
  return stream_->peer();
}

void BackendConn::enqueue(BackendOp op) {
  keep_key(op);
  op.request_bytes = static_cast<uint32_t>(evbuffer_get_length(stream_->output()) - output_mark_);
  stream_->end_record();  // memcached's TLS (Stream::end_record)
  count_enqueued(op);
}

void BackendConn::enqueue_retrieval(std::string_view verb, std::span<const std::string_view> keys,
                                    BackendOp op) {
  if (stream_ == nullptr) connect();
  size_t key_bytes = 0;  // each key and the space before it
  bool join = verb == open_verb_;
  key_bits_.clear();
  for (std::string_view key : keys) {
    key_bytes += 1 + key.size();
    auto [a, b] = key_bits_.emplace_back(key_bits(key));
    bool may_be_on_line =
        (open_keys_[a / 64] >> (a % 64)) & 1 && (open_keys_[b / 64] >> (b % 64)) & 1;
    join = join && !may_be_on_line;
  }
  size_t added = key_bytes;
  if (join && open_line_.size() + added > kMaxSharedLine) join = false;
  if (join) {
    ops_.back().shares_line_with_next = true;
  } else {
    close_open_line();
    open_line_.assign(verb);
    open_verb_ = verb;
    open_keys_.fill(0);
    added += verb.size() + 2;  // the verb and the "\r\n" to come
  }
  // The keys are written in place, after one resize: an append per key and
  // per space cost more than the rest of the line's making.
  const size_t start = open_line_.size();
  open_line_.resize(start + key_bytes);
  char* at = open_line_.data() + start;
  for (size_t i = 0; i < keys.size(); ++i) {
    *at++ = ' ';
    std::memcpy(at, keys[i].data(), keys[i].size());
    at += keys[i].size();
    auto [a, b] = key_bits_[i];
    open_keys_[a / 64] |= uint64_t{1} << (a % 64);
    open_keys_[b / 64] |= uint64_t{1} << (b % 64);
  }
  if (key_bits_.capacity() > kMaxSharedLine) key_bits_ = {};  // after a huge multi-get
  op.request_bytes = static_cast<uint32_t>(added);
  if (join) server_.stats().requests_joined.add();
  count_enqueued(op);
}

// A write's key is kept until its reply, to be recorded if it fails.
// Copied into one buffer per connection, emptied when nothing is in
// flight: a write costs a memcpy of its key, not an allocation.
void BackendConn::keep_key(BackendOp& op) {
  if (op.key.empty()) return;
  if (!op.writes || server_.repairs() == nullptr) {
    op.key = {};
    return;
  }
  if (keys_.size() > kMaxKeptKeys && !ops_.empty()) {
    // Never empty under a steady pipeline: drop the keys of operations
    // already answered.
    size_t first = keys_.size();
    for (size_t i = 0; i < ops_.size(); ++i) {
      if (ops_[i].key_len != 0) first = std::min<size_t>(first, ops_[i].key_at);
    }
    keys_.erase(0, first);
    for (size_t i = 0; i < ops_.size(); ++i) {
      if (ops_[i].key_len != 0) ops_[i].key_at -= static_cast<uint32_t>(first);
    }
  }
  op.key_at = static_cast<uint32_t>(keys_.size());
  op.key_len = static_cast<uint16_t>(op.key.size());
  keys_.append(op.key);
  op.key = {};
}

void BackendConn::note_write(const BackendOp& op, bool failed) {
  RepairLog* log = server_.repairs();
  if (log == nullptr || !op.writes) return;
  if (op.mode == ReplyMode::retrieval) {
    // gat, gats: the fragment's keys, which the slot keeps.
    if (!failed) return;
    const Fragment& frag = op.slot->fragment(op.fragment);
    for (uint32_t pos : frag.key_positions) log->record(op.slot->key(pos));
    return;
  }
  if (op.key_len == 0) {
    // A write with no key is a flush_all (BroadcastRoute).
    if (failed) log->record_flush();
    return;
  }
  if (failed) {
    log->record(key_of(op));
  } else if (op.repair_seq != 0) {
    log->replaced(key_of(op), op.repair_seq);
  }
}

void BackendConn::close_open_line() {
  if (open_verb_.empty()) return;
  open_line_.append("\r\n");
  evbuffer_add(stream_->output(), open_line_.data(), open_line_.size());
  stream_->end_record();
  open_verb_ = {};
  // A huge client multi-get must not pin its line's memory.
  if (open_line_.capacity() > 4 * kMaxSharedLine) {
    open_line_ = std::string();
  } else {
    open_line_.clear();
  }
}

void BackendConn::count_enqueued(BackendOp& op) {
  stream_->mark_dirty();  // written with the others at the end of this loop iteration
  ServerStats& st = server_.stats();
  st.requests.add();
  st.request_bytes.add(op.request_bytes);
  st.out_queue.add();
  st.out_queue_bytes.add(op.request_bytes);
  ops_.push_back(op);
  if (ops_.size() == 1) arm_timer();
}

// One timer per connection, armed for the oldest operation's deadline and
// left alone as operations come and go: every later operation's deadline
// is later, so the timer never fires too late, and when it fires early it
// is armed again for the then-oldest operation. (Re-arming per request
// would reprogram the loop's timerfd, a system call, on most iterations.)
void BackendConn::arm_timer() {
  if (broken_) return;
  int timeout_ms = server_.settings().timeout_ms;
  if (timeout_ms < 0) {
    timer_.cancel();
    return;
  }
  if ((connected_ && ops_.empty()) || timer_.armed()) return;
  uint64_t start = connected_ ? ops_.front().sent_usec : connect_started_usec_;
  uint64_t deadline = start + static_cast<uint64_t>(timeout_ms) * 1000;
  uint64_t now = server_.context().now_usec();
  timer_.arm_usec(deadline > now ? deadline - now : 0);
}

void BackendConn::rearm_timer() {
  if (broken_) return;
  timer_.cancel();
  arm_timer();
}

void BackendConn::on_timer() {
  if (broken_) {
    fail(own_fault_.empty() ? kBackendUnavailable : own_fault_);
    return;
  }
  int timeout_ms = server_.settings().timeout_ms;
  uint64_t now = server_.context().now_usec();
  uint64_t start =
      connected_ ? (ops_.empty() ? now : ops_.front().sent_usec) : connect_started_usec_;
  if (timeout_ms >= 0 && now - start >= static_cast<uint64_t>(timeout_ms) * 1000) {
    server_.context().stats().server_timeouts.add();
    server_.stats().server_timedout.add();
    fail(kBackendTimeout);
  } else {
    arm_timer();
  }
}

void BackendConn::on_stream(void* self, Stream::Happened what) {
  auto* c = static_cast<BackendConn*>(self);
  switch (what) {
    case Stream::Happened::connected:
      c->on_connected();
      return;
    case Stream::Happened::input: {
      ServerStats& st = c->server_.stats();
      Stream* stream = c->stream_.get();
      st.response_bytes.add(evbuffer_get_length(stream->input()));
      c->read_replies();
      // What is left for the next read is counted then.
      if (c->stream_.get() == stream) st.response_bytes.sub(evbuffer_get_length(stream->input()));
      return;
    }
    case Stream::Happened::flushing:
      c->close_open_line();
      return;
    case Stream::Happened::eof:
      if (c->connected_) {
        c->server_.stats().server_eof.add();
      } else {
        c->server_.stats().server_err.add();
      }
      c->fail(c->connected_ ? kBackendClosed : kBackendUnavailable);
      return;
    case Stream::Happened::error:
    case Stream::Happened::written:
      c->server_.stats().server_err.add();
      c->fail(c->connected_ ? kBackendClosed : kBackendUnavailable);
      return;
  }
}

void BackendConn::on_connected() {
  connected_ = true;
  counted_ = true;
  server_.stats().server_connections.add();
  server_.on_connected(stream_->target());
  log_debug("pool '%s': connected to %s", server_.settings().pool.c_str(),
            server_.identity().c_str());
  arm_timer();
}

void BackendConn::fail(std::string_view reason) {
  bool was_connected = connected_;
  // Requests owed on a connection given up on are answered as failed (and
  // writes recorded for repair): none of them may reach the server later.
  if (stream_ != nullptr && !ops_.empty()) stream_->reset_on_close();
  stream_.reset();
  open_line_.clear();
  open_verb_ = {};
  if (counted_) server_.stats().server_connections.sub();
  counted_ = false;
  connected_ = false;
  broken_ = false;
  timer_.cancel();
  data_left_ = 0;
  data_dest_ = nullptr;
  bool server_at_fault = own_fault_.empty();
  own_fault_ = {};
  if (server_at_fault) {
    if (!was_connected) server_.on_connect_failed();
    server_.on_failure();
  }

  log_info("pool '%s': server %s: %.*s; %zu request(s) failed", server_.settings().pool.c_str(),
           server_.identity().c_str(), static_cast<int>(reason.size()), reason.data(), ops_.size());

  // Completing an operation may make its client send more requests, which
  // may come back to this (now fresh) connection: fail from a private list.
  Fifo<BackendOp> owed;
  std::swap(owed, ops_);
  // Every write owed may still be applied, or not: recorded before any
  // slot completes (a completion may send more here, reusing keys_).
  for (size_t i = 0; i < owed.size(); ++i) note_write(owed[i], true);
  keys_.clear();
  server_.context().stats().forward_error.add(owed.size());
  server_.pool_stats().forward_error.add(owed.size());
  while (!owed.empty()) {
    BackendOp op = owed.pop_front();
    server_.stats().out_queue.sub();
    server_.stats().out_queue_bytes.sub(op.request_bytes);
    ReplySlot* slot = op.slot;
    switch (op.mode) {
      case ReplyMode::retrieval: {
        Fragment& frag = slot->fragment(op.fragment);
        frag.failed = true;
        evbuffer_drain(frag.values, evbuffer_get_length(frag.values));
        for (uint32_t pos : frag.key_positions) slot->key_ref(pos).block_bytes = 0;
        slot->note_error(reason);
        break;
      }
      case ReplyMode::broadcast:
        slot->note_error(reason);
        break;
      case ReplyMode::quiet_ignore:
        break;
      case ReplyMode::quiet_drop:
        // Nothing for the client, who asked for silence; the status tells
        // a route that may try elsewhere.
        slot->fragment(op.fragment).failed = true;
        slot->set_status(proto::ReplyStatus::server_error);
        break;
      case ReplyMode::single:
      case ReplyMode::meta:
      case ReplyMode::quiet_keep:
        evbuffer_drain(slot->reply(), evbuffer_get_length(slot->reply()));
        evbuffer_add(slot->reply(), reason.data(), reason.size());
        evbuffer_add(slot->reply(), "\r\n", 2);
        slot->set_status(proto::ReplyStatus::server_error);
        break;
    }
    slot->fragment_done();
  }
}

}  // namespace memshard::proxy
