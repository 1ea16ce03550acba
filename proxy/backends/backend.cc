#include "proxy/backends/backend.h"

#include <sys/socket.h>

#include <algorithm>
#include <cerrno>
#include <utility>

#include "proxy/backends/reply_slot.h"
#include "proxy/protocol/replies.h"
#include "proxy/protocol/reply_parser.h"
#include "proxy/protocol/reply_status.h"
#include "proxy/support/log.h"
#include "proxy/transport/lines.h"

namespace memshard::proxy {

namespace {

using proto::reply::own::kBackendClosed;
using proto::reply::own::kBackendGarbled;
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

// A server that refuses connections is not asked again for a while; the
// requests meanwhile fail at once instead of queueing behind connects.
constexpr uint64_t kFirstBackoffUsec = 20'000;
constexpr uint64_t kMaxBackoffUsec = 1'000'000;

// Bytes read per read(2): replies of many clients arrive together on one
// connection, so a read takes as much as memcached's own write buffer.
constexpr size_t kReadChunk = 32 * 1024;

// A shared multi-get line stops taking keys at this length: memcached reads
// a line up to 2048 bytes in its fast path (longer get lines move to a
// separate buffer), and a line this long already carries dozens of keys.
constexpr size_t kMaxSharedLine = 2048;

// Two bits of a 1024-bit Bloom filter per key (FNV-1a).
std::pair<uint32_t, uint32_t> key_bits(std::string_view key) {
  uint64_t h = 14695981039346656037ull;
  for (unsigned char c : key) h = (h ^ c) * 1099511628211ull;
  return {static_cast<uint32_t>(h & 1023), static_cast<uint32_t>((h >> 10) & 1023)};
}

// What a reply line says (reply_status.h), from what the parser made of it.
proto::ReplyStatus status_of(const proto::ReplyLine& r, std::string_view line) {
  switch (r.kind) {
    case proto::ReplyKind::value:
    case proto::ReplyKind::meta_value:
      return proto::ReplyStatus::hit;
    case proto::ReplyKind::end:
      return proto::ReplyStatus::miss;
    case proto::ReplyKind::meta_noop:
      return proto::ReplyStatus::ok;
    case proto::ReplyKind::line:
      return proto::classify_reply_line(line);
    case proto::ReplyKind::invalid:
      break;
  }
  return proto::ReplyStatus::other;
}

bool is_error(proto::ReplyStatus s) {
  return s == proto::ReplyStatus::error || s == proto::ReplyStatus::client_error ||
         s == proto::ReplyStatus::server_error;
}

// The reply line at the start of `bytes` ("\r\n" excluded) and its length
// with the terminator; total is 0 when the line is not whole there.
struct LineAt {
  std::string_view line;
  size_t total = 0;
};
LineAt line_at(std::string_view bytes) {
  size_t nl = bytes.substr(0, proto::kMaxReplyLineLength + 2).find('\n');
  if (nl == std::string_view::npos || nl == 0 || bytes[nl - 1] != '\r') return {};
  return {bytes.substr(0, nl - 1), nl + 1};
}

// The position in frag.key_positions of the next key asked named `key`,
// or key_positions.size() when no key still unanswered is.
size_t next_match(const ReplySlot& slot, const Fragment& frag, std::string_view key) {
  size_t i = frag.next_key;
  while (i < frag.key_positions.size() && slot.key(frag.key_positions[i]) != key) ++i;
  return i;
}

// Counts a reply line by what it says, for the per-server reply metrics.
// A retrieval's END is not counted: its misses are, per key.
void count_reply(ServerStats& st, const proto::ReplyLine& r, proto::ReplyStatus status) {
  if (r.kind == proto::ReplyKind::end || r.kind == proto::ReplyKind::meta_noop) return;
  switch (status) {
    case proto::ReplyStatus::hit:
      st.replies_hit.add();
      return;
    case proto::ReplyStatus::stored:
    case proto::ReplyStatus::done:
      st.replies_stored.add();
      return;
    case proto::ReplyStatus::not_stored:
      st.replies_not_stored.add();
      return;
    case proto::ReplyStatus::exists:
      st.replies_exists.add();
      return;
    case proto::ReplyStatus::not_found:
      st.replies_not_found.add();
      return;
    case proto::ReplyStatus::miss:
      st.replies_miss.add();
      return;
    case proto::ReplyStatus::error:
    case proto::ReplyStatus::client_error:
    case proto::ReplyStatus::server_error:
      st.replies_error.add();
      return;
    default:
      st.replies_other.add();
      return;
  }
}

}  // namespace

// ---------------------------------------------------------------- server

BackendServer::BackendServer(BackendContext& context, std::string identity, AddressList addresses,
                             ServerSettings settings, std::shared_ptr<ServerStats> stats,
                             std::shared_ptr<PoolStats> pool_stats)
    : context_(context),
      identity_(std::move(identity)),
      addresses_(std::move(addresses)),
      settings_(std::move(settings)),
      stats_(std::move(stats)),
      pool_stats_(std::move(pool_stats)) {}

BackendServer::~BackendServer() = default;

void BackendServer::update_settings(ServerSettings s, std::shared_ptr<PoolStats> pool_stats) {
  bool new_timeout = s.timeout_ms != settings_.timeout_ms;
  settings_ = std::move(s);
  if (new_timeout) {
    for (auto& c : conns_) c->rearm_timer();
  }
  pool_stats_ = std::move(pool_stats);
  // Extra connections beyond the new count are dropped only once idle.
  while (conns_.size() > std::max<uint32_t>(1, settings_.connections) &&
         conns_.back()->in_flight() == 0) {
    conns_.pop_back();
  }
}

void BackendServer::update_addresses(const AddressList& addresses) {
  if (addresses == addresses_) return;
  const SocketAddress* preferred =
      preferred_ < addresses_.size() ? &addresses_[preferred_] : nullptr;
  auto it = preferred ? std::find(addresses.begin(), addresses.end(), *preferred) : addresses.end();
  preferred_ = it == addresses.end() ? 0 : static_cast<size_t>(it - addresses.begin());
  // A connection's peer is a copy held by its stream: it stays valid
  // while addresses_ changes.
  // A fresh connection takes a retired one's place, so that the clients
  // mapped to the others keep theirs.
  for (auto& c : conns_) {
    const SocketAddress* peer = c->peer();
    if (peer == nullptr || std::find(addresses.begin(), addresses.end(), *peer) != addresses.end())
      continue;
    retired_.push_back(std::move(c));
    c = std::make_unique<BackendConn>(*this);
  }
  addresses_ = addresses;
  close_retired();
}

void BackendServer::close_retired() {
  std::erase_if(retired_, [](const auto& c) { return c->in_flight() == 0; });
}

BackendConn* BackendServer::connection_for(uint64_t affinity) {
  if (retry_after_usec_ != 0 && context_.now_usec() < retry_after_usec_) return nullptr;
  size_t want = std::max<uint32_t>(1, settings_.connections);
  while (conns_.size() < want) conns_.push_back(std::make_unique<BackendConn>(*this));
  return conns_[affinity % want].get();
}

Outbox* BackendServer::outbox(uint64_t affinity) {
  return connection_for(affinity);
}

void BackendServer::on_connect_failed() {
  // A server listed by name may have moved: its name is looked up again.
  context_.server_unreachable(settings_.pool, identity_);
  backoff_usec_ =
      backoff_usec_ == 0 ? kFirstBackoffUsec : std::min(backoff_usec_ * 2, kMaxBackoffUsec);
  retry_after_usec_ = context_.now_usec() + backoff_usec_;
}

void BackendServer::on_failure() {
  ++failures_in_a_row_;
  if (settings_.failure_limit != 0 && failures_in_a_row_ >= settings_.failure_limit) {
    // A new streak starts: a server re-admitted and failing again is
    // reported again after another `failure_limit` failures.
    failures_in_a_row_ = 0;
    context_.server_failing(settings_.pool, identity_);
  }
}

void BackendServer::on_connected(size_t index) {
  if (index < addresses_.size()) preferred_ = index;
  backoff_usec_ = 0;
  retry_after_usec_ = 0;
}

bool BackendServer::idle() const {
  auto owes_nothing = [](const auto& c) { return c->in_flight() == 0; };
  return std::all_of(conns_.begin(), conns_.end(), owes_nothing) &&
         std::all_of(retired_.begin(), retired_.end(), owes_nothing);
}

// ------------------------------------------------------------ connection

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
  op.request_bytes = static_cast<uint32_t>(evbuffer_get_length(stream_->output()) - output_mark_);
  stream_->end_record();  // memcached's TLS (Stream::end_record)
  count_enqueued(op);
}

void BackendConn::enqueue_retrieval(std::string_view verb, std::span<const std::string_view> keys,
                                    BackendOp op) {
  if (stream_ == nullptr) connect();
  size_t added = 0;
  bool join = verb == open_verb_;
  key_bits_.clear();
  for (std::string_view key : keys) {
    added += 1 + key.size();
    auto [a, b] = key_bits_.emplace_back(key_bits(key));
    bool may_be_on_line =
        (open_keys_[a / 64] >> (a % 64)) & 1 && (open_keys_[b / 64] >> (b % 64)) & 1;
    join = join && !may_be_on_line;
  }
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
  for (size_t i = 0; i < keys.size(); ++i) {
    open_line_.append(" ").append(keys[i]);
    auto [a, b] = key_bits_[i];
    open_keys_[a / 64] |= uint64_t{1} << (a % 64);
    open_keys_[b / 64] |= uint64_t{1} << (b % 64);
  }
  if (key_bits_.capacity() > kMaxSharedLine) key_bits_ = {};  // after a huge multi-get
  op.request_bytes = static_cast<uint32_t>(added);
  if (join) server_.stats().requests_joined.add();
  count_enqueued(op);
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

void BackendConn::read_replies() {
  evbuffer* in = stream_->input();
  while (true) {
    if (data_left_ > 0) {
      size_t n = std::min<uint64_t>(evbuffer_get_length(in), data_left_);
      if (n == 0) return;
      // A data block ends with "\r\n"; remember its last two bytes as they
      // pass, to refuse a server that sent something else.
      if (data_left_ <= 2 || n + 2 > data_left_) {
        size_t keep = std::min<size_t>(n, 2);
        evbuffer_ptr at;
        evbuffer_ptr_set(in, &at, n - keep, EVBUFFER_PTR_SET);
        char tail[2];
        evbuffer_copyout_from(in, &at, tail, keep);
        block_tail_[0] = keep == 2 ? tail[0] : block_tail_[1];
        block_tail_[1] = tail[keep - 1];
      }
      if (data_dest_ != nullptr) {
        evbuffer_remove_buffer(in, data_dest_, n);
      } else {
        evbuffer_drain(in, n);
      }
      data_left_ -= n;
      if (data_left_ > 0) return;
      if (block_tail_[0] != '\r' || block_tail_[1] != '\n') {
        server_.stats().server_err.add();
        fail(kBackendGarbled);
        return;
      }
      BackendOp& op = ops_.front();
      if (op.mode == ReplyMode::retrieval) {
        op.slot->key_ref(block_position_).block_bytes = static_cast<uint32_t>(block_bytes_);
      }
      if (data_ends_op_) finish_op();
      continue;
    }
    size_t available = evbuffer_get_length(in);
    if (available == 0) return;
    if (ops_.empty()) {
      server_.stats().server_err.add();
      fail(kBackendGarbled);  // a reply to nothing we asked
      return;
    }
    // Most lines, and most values after them, lie whole in the input's
    // first chain: read them there, without searching or copying through
    // the evbuffer API.
    std::string_view chain, line;
    size_t total = 0;
    evbuffer_iovec first;
    if (evbuffer_peek(in, -1, nullptr, &first, 1) >= 1) {
      chain = {static_cast<const char*>(first.iov_base), first.iov_len};
      LineAt at = line_at(chain);
      line = at.line;
      total = at.total;
    }
    if (total == 0) {
      chain = {};
      Line eol = find_line(in, LineEnd::crlf);
      if (!eol.whole()) {
        if (available > proto::kMaxReplyLineLength) {
          server_.stats().server_err.add();
          fail(kBackendGarbled);
        }
        return;
      }
      line_.resize(eol.length);
      evbuffer_copyout(in, line_.data(), line_.size());
      line = line_;
      total = eol.total();
    }
    if (!take_line(in, line, total, chain)) {
      server_.stats().server_err.add();
      fail(kBackendGarbled);
      return;
    }
  }
}

bool BackendConn::take_line(evbuffer* in, std::string_view line, size_t total,
                            std::string_view chain) {
  proto::ReplyLine r = proto::parse_reply_line(line);
  if (r.data_bytes > server_.settings().max_value_bytes + 2) return false;
  const proto::ReplyStatus status = status_of(r, line);
  count_reply(server_.stats(), r, status);
  BackendOp& op = ops_.front();
  ReplySlot* slot = op.slot;
  auto begin_data = [&](evbuffer* dest, uint64_t bytes, bool ends_op) {
    data_dest_ = dest;
    data_left_ = bytes;
    data_ends_op_ = ends_op;
  };

  switch (op.mode) {
    case ReplyMode::retrieval: {
      if (r.kind == proto::ReplyKind::value) {
        // The server answers hits in the order asked: the VALUE belongs to
        // the next requested key with that name. On a shared line, a key
        // left unmatched by the oldest operation is a later one's, and the
        // oldest has had all its hits.
        while (true) {
          BackendOp& first = ops_.front();
          Fragment& frag = first.slot->fragment(first.fragment);
          size_t i = next_match(*first.slot, frag, r.key);
          if (i < frag.key_positions.size()) {
            frag.next_key = i + 1;
            block_position_ = frag.key_positions[i];
            block_bytes_ = total + r.data_bytes;
            if (chain.size() >= block_bytes_) {
              // The whole block is here, once its data is seen to end with
              // "\r\n" as a data block must. So may be the blocks after
              // it: all go in one move.
              if (chain.substr(block_bytes_ - 2, 2) != "\r\n") return false;
              first.slot->key_ref(block_position_).block_bytes =
                  static_cast<uint32_t>(block_bytes_);
              size_t run =
                  block_bytes_ + take_whole_blocks(*first.slot, frag, chain.substr(block_bytes_));
              evbuffer_remove_buffer(in, frag.values, run);
              return true;
            }
            evbuffer_remove_buffer(in, frag.values, total);
            begin_data(frag.values, r.data_bytes, false);
            return true;
          }
          if (!first.shares_line_with_next) return false;
          finish_retrieval();
        }
      }
      if (r.kind == proto::ReplyKind::end ||
          (r.kind == proto::ReplyKind::line && is_error(status))) {
        // Ends every operation on the line. An error fails those with keys
        // it may have cut off; one whose last key was answered has all its
        // answers (the keys it skipped were misses), as it would have had
        // on a line of its own. (The error line is kept: it may lie in the
        // input, which is drained before it is used.)
        std::string_view error;
        if (r.kind != proto::ReplyKind::end) error = line_.assign(line);
        evbuffer_drain(in, total);
        bool more = true;
        while (more) {
          BackendOp& first = ops_.front();
          more = first.shares_line_with_next;
          const Fragment& frag = first.slot->fragment(first.fragment);
          bool answered = frag.next_key == frag.key_positions.size();
          finish_retrieval(answered ? std::string_view() : error);
        }
        return true;
      }
      return false;
    }
    case ReplyMode::single:
      if (r.kind != proto::ReplyKind::line) return false;
      evbuffer_remove_buffer(in, slot->reply(), total);
      slot->set_status(status);
      finish_op();
      return true;
    case ReplyMode::meta:
      if (r.kind == proto::ReplyKind::line) {
        evbuffer_remove_buffer(in, slot->reply(), total);
        slot->set_status(status);
        finish_op();
        return true;
      }
      if (r.kind == proto::ReplyKind::meta_value) {
        evbuffer_remove_buffer(in, slot->reply(), total);
        slot->set_status(status);
        begin_data(slot->reply(), r.data_bytes, true);
        return true;
      }
      return false;
    case ReplyMode::quiet_keep:
    case ReplyMode::quiet_drop: {
      evbuffer* dest = op.mode == ReplyMode::quiet_keep ? slot->reply() : nullptr;
      if (r.kind == proto::ReplyKind::meta_noop) {
        evbuffer_drain(in, total);
        // Nothing said before the MN: the server had nothing to say.
        if (slot->status() == proto::ReplyStatus::none) slot->set_status(status);
        finish_op();
        return true;
      }
      if (r.kind != proto::ReplyKind::line && r.kind != proto::ReplyKind::meta_value) return false;
      if (dest != nullptr) {
        evbuffer_remove_buffer(in, dest, total);
      } else {
        evbuffer_drain(in, total);
      }
      slot->set_status(status);
      if (r.kind == proto::ReplyKind::meta_value) begin_data(dest, r.data_bytes, false);
      return true;
    }
    case ReplyMode::broadcast:
      if (r.kind != proto::ReplyKind::line) return false;
      if (status != proto::ReplyStatus::ok)
        slot->note_error(is_error(status) ? line : kBackendGarbled);
      evbuffer_drain(in, total);
      finish_op();
      return true;
  }
  return false;
}

// A multi-get's reply is mostly VALUE blocks back to back, and most arrive
// whole in one read: the ones that follow a block taken for `frag`, lie
// whole in `rest` and answer frag's next keys are taken with it, so that a
// reply costs one evbuffer move rather than one per key. Returns their
// bytes. Stops, leaving it to read_replies, at anything else: END, a block
// cut by the read, a key not frag's, or a block that is not valid (there
// it fails the connection as it would have).
size_t BackendConn::take_whole_blocks(ReplySlot& slot, Fragment& frag, std::string_view rest) {
  size_t taken = 0;
  while (true) {
    // A fragment with every key answered takes no more: on a line shared
    // by single-key gets, the next block is the next request's, and is
    // not parsed here only to be parsed again by read_replies.
    if (frag.next_key == frag.key_positions.size()) return taken;
    std::string_view ahead = rest.substr(taken);
    if (!ahead.starts_with(proto::kValueLinePrefix)) return taken;
    auto [line, total] = line_at(ahead);
    if (total == 0) return taken;
    proto::ReplyLine r = proto::parse_reply_line(line);
    if (r.kind != proto::ReplyKind::value || r.data_bytes > server_.settings().max_value_bytes + 2)
      return taken;
    size_t block = total + r.data_bytes;
    if (ahead.size() < block || ahead.substr(block - 2, 2) != "\r\n") return taken;
    size_t i = next_match(slot, frag, r.key);
    if (i == frag.key_positions.size()) return taken;
    count_reply(server_.stats(), r, proto::ReplyStatus::hit);
    frag.next_key = i + 1;
    slot.key_ref(frag.key_positions[i]).block_bytes = static_cast<uint32_t>(block);
    taken += block;
  }
}

void BackendConn::finish_retrieval(std::string_view error) {
  BackendOp& op = ops_.front();
  ReplySlot* slot = op.slot;
  Fragment& frag = slot->fragment(op.fragment);
  if (error.empty()) {
    size_t misses = 0;
    for (uint32_t pos : frag.key_positions) misses += slot->key_ref(pos).block_bytes == 0;
    server_.stats().replies_miss.add(misses);
  } else {
    frag.failed = true;
    slot->note_error(error);
    for (uint32_t pos : frag.key_positions) slot->key_ref(pos).block_bytes = 0;
    evbuffer_drain(frag.values, evbuffer_get_length(frag.values));
  }
  finish_op();
}

void BackendConn::finish_op() {
  server_.on_success();
  BackendOp op = ops_.pop_front();
  ServerStats& st = server_.stats();
  st.responses.add();
  st.out_queue.sub();
  st.out_queue_bytes.sub(op.request_bytes);
  op.slot->fragment_done();
}

void BackendConn::fail(std::string_view reason) {
  bool was_connected = connected_;
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
