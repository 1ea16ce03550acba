#include "proxy/clients/client_conn.h"

#include <event2/buffer.h>
#include <sys/ioctl.h>

#include <algorithm>

#include "proxy/backends/reply_slot.h"
#include "proxy/protocol/binary_reply.h"
#include "proxy/protocol/replies.h"
#include "proxy/protocol/request_kind.h"
#include "proxy/protocol/version.h"
#include "proxy/routes/route_count.h"
#include "proxy/transport/lines.h"

namespace memshard::proxy {

namespace {

using proto::reply::own::kNoPool;

}  // namespace

ClientConn::ClientConn(ClientContext& context, int fd, std::shared_ptr<const ClientOrigin> origin,
                       uint64_t id, Arrival arrival)
    : context_(context),
      work_(context.scratch()),
      stream_(context.streams(), fd, &ClientConn::on_stream, this, kMemcachedReadBuffer,
              Stream::Reads::compact),
      origin_(std::move(origin)),
      pool_stats_(*origin_->stats),
      id_(id),
      last_input_usec_(context.now_usec()) {
  use_route(context_.route(origin_->pool_name));
  switch (arrival) {
    case Arrival::unparked:
      // Only text connections are parked (parkable()), so one that resumes
      // keeps speaking text.
      protocol_ = Protocol::text;
      return;
    case Arrival::moved_text:
      protocol_ = Protocol::text;
      break;
    case Arrival::moved_binary:
      protocol_ = Protocol::binary;
      binary_ = std::make_unique<Binary>();
      context_.stats().binary_connections.add();
      break;
    case Arrival::moved_undecided:
    case Arrival::accepted:
      break;
  }
  pool_stats_.client_connections.add();
  context_.stats().curr_connections.add();
  if (arrival != Arrival::accepted) return;  // TLS clients never move (movable())
  context_.stats().total_connections.add();
  if (route_ != nullptr && route_->pool->client_tls) start_tls(*route_->pool->client_tls);
}

// The pool's context when the client arrived: a reload that rotates the
// certificate reaches the clients that come after it.
void ClientConn::start_tls(const TlsContext& tls) {
  PoolStats& p = pool_stats_;
  TlsCounters c;
  c.handshakes = &p.tls_handshakes;
  c.resumed = &p.tls_resumed;
  c.tls1_2 = &p.tls_1_2;
  c.tls1_3 = &p.tls_1_3;
  Counter* failures[] = {&p.tls_fail_not_tls, &p.tls_fail_certificate, &p.tls_fail_version,
                         &p.tls_fail_timeout, &p.tls_fail_closed,      &p.tls_fail_other};
  static_assert(std::size(failures) == kTlsFailureKinds);
  std::copy(std::begin(failures), std::end(failures), c.failures);
  stream_.start_tls(tls.new_session(), c, route_->pool->config.timeout_ms.value_or(10000));
}

ClientConn::~ClientConn() {
  // Only at shutdown can replies still be owed here (the drain timed out).
  while (!slots_.empty()) context_.release_slot(slots_.pop_front());
}

// Takes the pool's settings that apply per connection, at connect and
// again after every reload.
void ClientConn::use_route(const PoolRoute* route) {
  route_ = route;
  route_epoch_ = context_.routes_epoch();
  if (route == nullptr) return;
  const conf::PoolConfig& pc = route->pool->config;
  limits_.item_size_max = pc.item_size_max;
  // Input stops being read once it holds the largest request we accept,
  // so a client cannot make us buffer more than that.
  size_t max_request = proto::kMaxRetrievalLineLength + limits_.item_size_max + 4096;
  stream_.set_input_limit(max_request);
  idle_timeout_usec_ = static_cast<uint64_t>(pc.client_idle_timeout_ms) * 1000;
}

void ClientConn::on_routes_changed() {
  if (closed_) return;
  const PoolRoute* r = context_.route(origin_->pool_name);
  if (r == nullptr) {
    close_when_idle();
    return;
  }
  use_route(r);
}

void ClientConn::on_stream(void* self, Stream::Happened what) {
  auto* c = static_cast<ClientConn*>(self);
  switch (what) {
    case Stream::Happened::input:
      c->last_input_usec_ = c->context_.now_usec();
      c->process_input();
      return;
    case Stream::Happened::written:
      c->flush_ready();
      return;
    case Stream::Happened::eof:
      // A client may half-close after its last request (`printf ... | nc`):
      // answer what it sent, then close.
      c->pool_stats_.client_eof.add();
      c->process_input();
      c->closing_ = true;
      c->flush_ready();
      return;
    case Stream::Happened::flushing:  // not asked for
      return;
    case Stream::Happened::error:
    case Stream::Happened::connected:
      c->pool_stats_.client_err.add();
      c->shut();
      return;
  }
}

void ClientConn::process_input() {
  if (closing_ || closed_ || in_process_) return;
  in_process_ = true;
  while (!closing_) {
    // A lone request always goes through, however many keys it has.
    bool over_keys = keys_in_flight_ >= kMaxKeysInFlight && !slots_.empty();
    if (over_keys || slots_.size() >= kMaxPendingReplies ||
        stream_.output_length() >= kMaxBufferedOutput) {
      paused_ = true;
      break;
    }
    if (!next_request()) break;
  }
  in_process_ = false;
  flush_ready();
  if (!closed_) stream_.update();  // input consumed: reading may resume
}

bool ClientConn::next_request() {
  evbuffer* in = stream_.input();
  if (swallow_left_ > 0) {
    size_t n = std::min<uint64_t>(evbuffer_get_length(in), swallow_left_);
    evbuffer_drain(in, n);
    swallow_left_ -= n;
    if (swallow_left_ > 0) return false;
  }
  if (protocol_ == Protocol::undecided) {
    unsigned char first[3] = {};
    const ev_ssize_t got = evbuffer_copyout(in, first, sizeof first);
    if (got < 1) return false;
    // A TLS ClientHello (a record of type 22, version 3.x) to a listener
    // without TLS: no memcached request starts so. Said in the log, since
    // the client can only see a closed connection.
    if (first[0] == 0x16 && (got < 2 || first[1] == 0x03)) {
      if (got < 3) return false;
      if (first[2] <= 0x04) {
        close_foreign(ClientContext::Foreign::tls);
        return false;
      }
    }
    protocol_ = first[0] == proto::binary::kRequestMagic ? Protocol::binary : Protocol::text;
    if (protocol_ == Protocol::binary) {
      binary_ = std::make_unique<Binary>();
      context_.stats().binary_connections.add();
    }
  }
  if (protocol_ == Protocol::binary) return next_binary_request();
  if (awaiting_bytes_ > 0) {
    // A request whose value was still arriving. The shared scratch space
    // has served other clients since, so its line is parsed again.
    if (evbuffer_get_length(in) < awaiting_bytes_) return false;
    parse_line(in, line_bytes_);
    awaiting_bytes_ = 0;
  } else {
    Line eol = find_line(in, LineEnd::lf);
    if (!eol.whole()) {
      size_t len = evbuffer_get_length(in);
      if (len <= proto::kMaxLineLength) return false;
      // memcached applies its line-length rule to what one read brought
      // (up to its 16 KiB buffer). We read in smaller pieces, so while the
      // socket still holds bytes of that first 16 KiB, read them first.
      int pending = 0;
      if (len < kMemcachedReadBuffer && ioctl(stream_.fd(), FIONREAD, &pending) == 0 &&
          pending > 0) {
        return false;
      }
      bool too_long = len > proto::kMaxRetrievalLineLength;
      if (!too_long) {
        // Enough of the line to tell a long multi-get from garbage.
        work_.line.resize(proto::kMaxLineLength + 1);
        evbuffer_copyout(in, work_.line.data(), work_.line.size());
        too_long = proto::line_too_long(work_.line);
      }
      if (too_long) {
        // memcached closes such a connection without a word.
        closing_ = true;
        stream_.set_reading(false);
      }
      return false;
    }
    size_t line_len = eol.length;
    if (line_len > proto::kMaxRetrievalLineLength) {
      // Our bound holds however the line arrived: in pieces (above), or
      // whole within one read, when reads grow with the input buffer.
      closing_ = true;
      stream_.set_reading(false);
      return false;
    }
    header_bytes_ = eol.total();
    parse_line(in, line_len);
    if (work_.request.action == proto::Action::forward &&
        evbuffer_get_length(in) < header_bytes_ + work_.request.data_bytes) {
      line_bytes_ = line_len;
      awaiting_bytes_ = header_bytes_ + work_.request.data_bytes;
      return false;  // the value has not fully arrived
    }
  }
  dispatch(in);
  if (work_.line.capacity() > 64 * 1024) work_.line = std::string();  // after a huge multi-get
  return true;
}

void ClientConn::parse_line(evbuffer* in, size_t line_len) {
  work_.line.resize(line_len);
  evbuffer_copyout(in, work_.line.data(), line_len);
  if (!work_.line.empty() && work_.line.back() == '\r') work_.line.pop_back();
  proto::parse_request_line(work_.line, limits_, work_.request);
}

void ClientConn::dispatch(evbuffer* in) {
  if (route_epoch_ != context_.routes_epoch()) use_route(context_.route(origin_->pool_name));
  const PoolRoute* route = route_;
  switch (work_.request.action) {
    case proto::Action::local:
      answer_locally(in);
      return;
    case proto::Action::error:
      context_.stats().client_errors.add();
      evbuffer_drain(in, header_bytes_);
      swallow_left_ = work_.request.swallow;
      if (work_.request.invalidate_key && route != nullptr) {
        ReplySlot* s = new_slot();
        evbuffer_add(s->reply(), work_.request.error_reply.data(),
                     work_.request.error_reply.size());
        RouteRequest req = route_request(in);
        route->key->invalidate(req, *s);
        s->complete_unsent();
      } else {
        reply_now(new_slot(), work_.request.error_reply);
      }
      return;
    case proto::Action::close: {
      if (work_.request.foreign) return close_foreign(ClientContext::Foreign::http);
      ReplySlot* s = new_slot();
      s->set_close_after();
      reply_now(s, work_.request.error_reply);
      evbuffer_drain(in, header_bytes_);
      closing_ = true;
      return;
    }
    default:
      break;
  }
  if (route == nullptr) {
    evbuffer_drain(in, header_bytes_ + work_.request.data_bytes);
    reply_line(new_slot(), kNoPool);
    return;
  }
  WorkerStats& st = context_.stats();
  RouteRequest req = route_request(in);
  ReplySlot* slot = nullptr;
  switch (work_.request.action) {
    case proto::Action::forward:
      (proto::is_storage(work_.request.command)            ? st.cmd_set
       : work_.request.command == proto::Command::meta_get ? st.cmd_get
                                                           : st.cmd_other)
          .add();
      route->key->send(req, *(slot = new_slot()));
      break;
    case proto::Action::multi_get:
      st.cmd_get.add(work_.request.keys.size());
      route->multi_get->send(req, *(slot = new_slot()));
      break;
    case proto::Action::broadcast:
      route->all->send(req, *(slot = new_slot()));
      break;
    default:
      break;
  }
  // Answered within the send (a server unavailable, or one with
  // server_queue_limit requests waiting): its reply is a line, not a value,
  // and must not hold the client's budget of keys in flight, or a client
  // pipelining into a stalled server would wait a timeout per budget.
  if (slot != nullptr && slot->complete()) {
    keys_in_flight_ -= slot->keys_weight;
    slot->keys_weight = 0;
  }
}

RouteRequest ClientConn::route_request(evbuffer* in) {
  return RouteRequest{work_.request,       in,    header_bytes_, work_.line,       id_,
                      context_.now_usec(), work_, context_,      context_.stats(), pool_stats_};
}

void ClientConn::answer_locally(evbuffer* in) {
  evbuffer_drain(in, header_bytes_);
  ReplySlot* s = new_slot();
  switch (work_.request.command) {
    case proto::Command::quit:
      s->set_close_after();
      s->answer({});
      closing_ = true;
      break;
    case proto::Command::verbosity:
      reply_now(s, work_.request.quiet ? std::string_view() : proto::reply::kOk);
      break;
    case proto::Command::meta_noop:
      reply_now(s, proto::reply::kMetaNoop);
      break;
    case proto::Command::version:
      reply_now(s, proto::version_reply());
      break;
    case proto::Command::stats:
      work_.text.clear();
      context_.append_stats(work_.request.args, work_.text);
      reply_now(s, work_.text);
      break;
    default:
      reply_now(s, proto::reply::kError);
      break;
  }
}

ReplySlot* ClientConn::new_slot() {
  ReplySlot* s = context_.acquire_slot(this);
  // Each key may bring back a value of up to item_size_max: counting them
  // bounds what the replies owed to one client can make us hold.
  s->keys_weight =
      work_.request.keys.empty() ? 1 : static_cast<uint32_t>(work_.request.keys.size());
  keys_in_flight_ += s->keys_weight;
  s->started_usec = context_.now_usec();
  slots_.push_back(s);
  return s;
}

void ClientConn::reply_line(ReplySlot* s, std::string_view line) {
  evbuffer_add(s->reply(), line.data(), line.size());
  s->answer("\r\n", proto::classify_reply_line(line));
}

void ClientConn::reply_now(ReplySlot* s, std::string_view text) {
  s->answer(text);
}

void ClientConn::on_slot_complete() {
  if (!in_process_) flush_ready();
}

void ClientConn::flush_ready() {
  uint64_t now = slots_.empty() ? 0 : context_.now_usec();
  bool wrote = false;
  while (!slots_.empty() && slots_.front()->complete()) {
    ReplySlot* s = slots_.pop_front();
    keys_in_flight_ -= s->keys_weight;
    pool_stats_.requests.add();
    pool_stats_.record_latency(now - s->started_usec);
    if (s->route_stats != nullptr) count_reply(*s->route_stats, *s);
    if (binary_) {
      const Binary::Owed& owed = binary_->owed.front();
      if (!closed_ && !owed.raw) {
        // The text reply the request's path made, as binary frames, which
        // go to the client straight from the encoder.
        Binary& b = *binary_;
        b.text.resize(evbuffer_get_length(s->reply()));
        evbuffer_remove(s->reply(), b.text.data(), b.text.size());
        b.reply.clear();
        proto::binary::encode_reply(owed.context, b.text, b.reply);
        evbuffer_add(stream_.output(), b.reply.data(), b.reply.size());
        wrote = wrote || !b.reply.empty();
        // After a large value, the next replies need not keep its room.
        if (b.reply.capacity() > 64 * 1024) b.reply = std::string();
        if (b.text.capacity() > 64 * 1024) b.text = std::string();
      }
      binary_->owed.drop_front();
    }
    if (!closed_ && !s->drop_reply() && evbuffer_get_length(s->reply()) > 0) {
      evbuffer_add_buffer(stream_.output(), s->reply());
      wrote = true;
    }
    if (s->close_after()) closing_ = true;
    context_.release_slot(s);
  }
  // Written once, after everything this loop iteration produced.
  if (wrote) stream_.mark_dirty();
  if (closed_) {
    if (slots_.empty()) context_.retire(this);
    return;
  }
  if (closing_) {
    stream_.set_reading(false);
    if (slots_.empty() && stream_.output_length() == 0) {
      shut();
    } else {
      stream_.watch_writes(true);  // close once the output has gone
    }
    return;
  }
  if (paused_ && slots_.size() < kMaxPendingReplies && keys_in_flight_ < kMaxKeysInFlight &&
      stream_.output_length() < kMaxBufferedOutput) {
    paused_ = false;
    process_input();
  }
  // Output past its bound resumes input only as it is written.
  stream_.watch_writes(paused_);
}

void ClientConn::close_when_idle() {
  if (closed_) return;
  process_input();
  closing_ = true;
  flush_ready();
}

bool ClientConn::close_if_idle(uint64_t now_usec) {
  // client_idle_timeout: silent for that long. A client still waiting for
  // replies is not idle; half a request is (it holds memory for nothing).
  if (idle_timeout_usec_ == 0 || closed_ || closing_ || !slots_.empty()) return false;
  if (now_usec - last_input_usec_ < idle_timeout_usec_) return false;
  shut();
  return true;
}

bool ClientConn::parkable(uint64_t idle_since_usec) const {
  // A parked socket resumes as a plain text connection: binary ones stay,
  // and so do TLS ones (their session lives in the stream).
  return protocol_ != Protocol::binary && !stream_.tls() && last_input_usec_ <= idle_since_usec &&
         slots_.empty() && !closing_ && !closed_ && !paused_ && !in_process_ &&
         awaiting_bytes_ == 0 && swallow_left_ == 0 && stream_.quiet();
}

bool ClientConn::movable() const {
  return !stream_.tls() && slots_.empty() && !closing_ && !closed_ && !paused_ && !in_process_ &&
         awaiting_bytes_ == 0 && swallow_left_ == 0 &&
         (held_for_move_ ? stream_.settled() : stream_.quiet());
}

bool ClientConn::hold_for_move() {
  if (held_for_move_) return true;
  // Only between whole requests: half of one buffered would need the rest
  // read to be answered.
  if (stream_.tls() || closing_ || closed_ || in_process_ || awaiting_bytes_ != 0 ||
      swallow_left_ != 0 || stream_.input_length() != 0)
    return false;
  held_for_move_ = true;
  stream_.set_reading(false);
  return true;
}

void ClientConn::release_hold() {
  if (!held_for_move_) return;
  held_for_move_ = false;
  if (!closing_ && !closed_ && !paused_) stream_.set_reading(true);
}

std::pair<int, ClientConn::Arrival> ClientConn::release_for_move() {
  Arrival how = Arrival::moved_undecided;
  if (protocol_ == Protocol::text) how = Arrival::moved_text;
  if (protocol_ == Protocol::binary) {
    how = Arrival::moved_binary;
    context_.stats().binary_connections.sub();
  }
  context_.stats().curr_connections.sub();
  pool_stats_.client_connections.sub();
  return {stream_.release_fd(), how};
}

// Another protocol than memcached's: closed without a word, as memcached
// closes an HTTP request, and nothing after it on the connection is read.
// The replies owed for requests before it are still written.
void ClientConn::close_foreign(ClientContext::Foreign what) {
  pool_stats_.client_foreign.add();
  context_.closed_foreign(origin_->pool_name, what);
  evbuffer* in = stream_.input();
  evbuffer_drain(in, evbuffer_get_length(in));
  closing_ = true;
  stream_.set_reading(false);
}

void ClientConn::shut() {
  if (closed_) return;
  closed_ = true;
  stream_.close();
  context_.stats().curr_connections.sub();
  if (protocol_ == Protocol::binary) context_.stats().binary_connections.sub();
  pool_stats_.client_connections.sub();
  origin_->pool_clients->remove();
  if (slots_.empty()) context_.retire(this);
}

}  // namespace memshard::proxy
