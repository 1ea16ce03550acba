// BackendConn reading its server's replies: each reply line parsed and
// classified once, its bytes moved (not copied) into the slot that owes
// them to a client, VALUE blocks matched to the keys asked (on a shared
// multi-get line, to the operation that asked them), and a server that
// sends what no memcached sends refused before it can make us buffer.
#include <algorithm>

#include "proxy/backends/backend.h"
#include "proxy/backends/reply_slot.h"
#include "proxy/protocol/replies.h"
#include "proxy/protocol/reply_parser.h"
#include "proxy/protocol/reply_status.h"
#include "proxy/transport/lines.h"

namespace memshard::proxy {

namespace {

using proto::reply::own::kBackendGarbled;

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
        // oldest has had all its hits. A key that no operation on the line
        // still awaits answers none of them, and says nothing of the keys
        // before it: the reply is broken, and every operation on the line
        // fails (none is first taken for done, its keys for misses).
        size_t owner = 0;
        size_t i = 0;
        while (true) {
          const BackendOp& o = ops_[owner];
          const Fragment& frag = o.slot->fragment(o.fragment);
          i = next_match(*o.slot, frag, r.key);
          if (i < frag.key_positions.size()) break;
          if (!o.shares_line_with_next) return false;
          ++owner;
        }
        for (; owner > 0; --owner) finish_retrieval();
        BackendOp& first = ops_.front();
        Fragment& frag = first.slot->fragment(first.fragment);
        frag.next_key = i + 1;
        block_position_ = frag.key_positions[i];
        block_bytes_ = total + r.data_bytes;
        if (chain.size() >= block_bytes_) {
          // The whole block is here, once its data is seen to end with
          // "\r\n" as a data block must. So may be the blocks after it:
          // all go in one move.
          if (chain.substr(block_bytes_ - 2, 2) != "\r\n") return false;
          first.slot->key_ref(block_position_).block_bytes = static_cast<uint32_t>(block_bytes_);
          size_t run =
              block_bytes_ + take_whole_blocks(*first.slot, frag, chain.substr(block_bytes_));
          evbuffer_remove_buffer(in, frag.values, run);
          return true;
        }
        evbuffer_remove_buffer(in, frag.values, total);
        begin_data(frag.values, r.data_bytes, false);
        return true;
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
      // A classic command's answer: not a meta code.
      if (r.kind != proto::ReplyKind::line) return false;
      if (proto::reply_family(line) == proto::ReplyFamily::meta) return false;
      evbuffer_remove_buffer(in, slot->reply(), total);
      slot->set_status(status);
      finish_op();
      return true;
    case ReplyMode::meta:
      // A meta command's answer: not a classic word (a STORED here is no
      // answer to it, whatever sent it).
      if (r.kind == proto::ReplyKind::line) {
        if (proto::reply_family(line) == proto::ReplyFamily::classic) return false;
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
    case ReplyMode::quiet_drop:
    case ReplyMode::quiet_ignore: {
      const bool ignore = op.mode == ReplyMode::quiet_ignore;
      evbuffer* dest = op.mode == ReplyMode::quiet_keep ? slot->reply() : nullptr;
      if (r.kind == proto::ReplyKind::meta_noop) {
        evbuffer_drain(in, total);
        // Nothing said before the MN: the server had nothing to say.
        if (!ignore && slot->status() == proto::ReplyStatus::none) slot->set_status(status);
        finish_op();
        return true;
      }
      if (r.kind != proto::ReplyKind::line && r.kind != proto::ReplyKind::meta_value) return false;
      // quiet_keep follows a quiet meta command; quiet_drop a classic
      // noreply or the proxy's own quiet md, whose words are not checked.
      if (op.mode == ReplyMode::quiet_keep && r.kind == proto::ReplyKind::line &&
          proto::reply_family(line) == proto::ReplyFamily::classic)
        return false;
      if (dest != nullptr) {
        evbuffer_remove_buffer(in, dest, total);
      } else {
        evbuffer_drain(in, total);
      }
      if (!ignore) slot->set_status(status);
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
    if (ops_.front().writes) note_write(ops_.front(), true);
    slot->note_error(error);
    for (uint32_t pos : frag.key_positions) slot->key_ref(pos).block_bytes = 0;
    evbuffer_drain(frag.values, evbuffer_get_length(frag.values));
  }
  finish_op();
}

void BackendConn::finish_op() {
  server_.on_success();
  BackendOp op = ops_.pop_front();
  if (op.writes) {
    // A SERVER_ERROR may come with the write applied or not (memcached
    // answers one for a value it could not store, and the old stays).
    note_write(op, op.mode != ReplyMode::retrieval &&
                       op.slot->status() == proto::ReplyStatus::server_error);
  }
  if (ops_.empty()) keys_.clear();
  ServerStats& st = server_.stats();
  st.responses.add();
  st.out_queue.sub();
  st.out_queue_bytes.sub(op.request_bytes);
  op.slot->fragment_done();
}
}  // namespace memshard::proxy
