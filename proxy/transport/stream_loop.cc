// StreamLoop: one per event loop. It lends streams their buffers and,
// once per loop iteration, reads every readable stream and writes every
// stream with output, each batch in one io_uring submission (io_batch.h)
// where the kernel allows it.
#include <sys/socket.h>
#include <sys/uio.h>

#include <algorithm>
#include <cerrno>
#include <cstddef>

#include "proxy/support/log.h"
#include "proxy/transport/stream.h"

namespace memshard::proxy {

StreamLoop::StreamLoop(event_base* base, Writes writes) : base_(base) {
  if (writes == Writes::batched) batch_ = std::make_unique<IoBatch>();
  spare_.reserve(kMaxSpareBuffers);
}

StreamLoop::~StreamLoop() {
  for (evbuffer* b : spare_) evbuffer_free(b);
}

evbuffer* StreamLoop::take_buffer() {
  if (spare_.empty()) return evbuffer_new();
  evbuffer* b = spare_.back();
  spare_.pop_back();
  return b;
}

void StreamLoop::give_back(evbuffer* buffer) {
  // Emptied, a buffer holds no chains: a spare is just its own header.
  evbuffer_drain(buffer, evbuffer_get_length(buffer));
  if (spare_.size() < kMaxSpareBuffers)
    spare_.push_back(buffer);
  else
    evbuffer_free(buffer);
}

void StreamLoop::flush() {
  if (batching()) {
    flush_batched();
    return;
  }
  // Writing may report to owners, which may append to other streams (a
  // failed backend answers its clients) or destroy streams: walk by index,
  // over entries appended meanwhile too.
  for (size_t i = 0; i < dirty_.size(); ++i) {
    Stream* s = dirty_[i];
    if (s == nullptr) continue;
    // Still marked dirty while the owner appends its last bytes, so they
    // leave in this same write. A stream closed or destroyed here has
    // cleared its own entry (Stream::close).
    if (s->watch_flush_ && !s->report(Stream::Happened::flushing)) continue;
    dirty_[i] = nullptr;
    s->dirty_ = false;
    s->write_out();
  }
  dirty_.clear();
}

void StreamLoop::flush_batched() {
  // Rounds: reports made while finishing one round's sends may append to
  // streams not in it (a failed backend answers its clients); those go in
  // the next round. Entries stay in dirty_ until their stream is finished,
  // so a stream destroyed meanwhile has cleared its own (Stream::close).
  size_t begin = 0;
  while (begin < dirty_.size()) {
    // Owners that hold back their tail append it now, all before any
    // send, so bytes one of them appends to another's stream join too.
    for (size_t i = begin; i < dirty_.size(); ++i) {
      Stream* s = dirty_[i];
      if (s != nullptr && s->watch_flush_) (void)s->report(Stream::Happened::flushing);
    }
    size_t end = dirty_.size();
    send_batched(begin, end);
    for (size_t j = begin; j < end; ++j) {
      Stream* s = dirty_[j];
      if (s == nullptr) continue;
      dirty_[j] = nullptr;
      s->dirty_ = false;
      s->finish_batched_send(sent_[j - begin]);
    }
    begin = end;
  }
  dirty_.clear();
}

void StreamLoop::send_batched(size_t begin, size_t end) {
  // Not sent: the stream's finish writes it the usual way.
  sent_.assign(end - begin, -EAGAIN);
  size_t next = begin;
  while (next < end && batching()) {
    batch_members_.clear();
    for (; next < end && batch_members_.size() < IoBatch::kMaxOps; ++next) {
      Stream* s = dirty_[next];
      if (s == nullptr || !s->sendable()) continue;
      // A session that cannot make records fails in its finish.
      if (s->tls_ != nullptr && (!s->tls_encrypt() || s->wire_length() == 0)) continue;
      batch_members_.push_back(next - begin);
    }
    // One stream alone gains nothing from the ring: its finish writes it.
    if (batch_members_.size() < 2) continue;
    // Grown to the largest submission so far (at most kMaxOps streams'
    // worth), before any send points into it.
    if (iov_.size() < batch_members_.size() * kIovPerSend)
      iov_.resize(batch_members_.size() * kIovPerSend);
    for (size_t k = 0; k < batch_members_.size(); ++k) {
      Stream* s = dirty_[begin + batch_members_[k]];
      iovec* iov = &iov_[k * kIovPerSend];
      // Output in more chains than kIovPerSend sends what fits; the finish
      // writes the rest.
      int n = evbuffer_peek(s->wire(), -1, nullptr, reinterpret_cast<evbuffer_iovec*>(iov),
                            kIovPerSend);
      batch_->add_send(s->fd_, iov, static_cast<size_t>(std::min(n, kIovPerSend)));
    }
    std::span<const int> results = batch_->submit();
    ++batches_;
    batched_sends_ += batch_members_.size();
    if (!batching()) log_ring_lost();
    for (size_t k = 0; k < batch_members_.size(); ++k) sent_[batch_members_[k]] = results[k];
  }
}

void StreamLoop::read_ready() {
  if (readable_.empty()) return;
  read_outcomes_.assign(readable_.size(), ReadOutcome{});
  receive_batched();
  // Reports may destroy or close streams further on (their entries turn
  // null) but add none: only the loop's dispatch queues reads.
  for (size_t i = 0; i < readable_.size(); ++i) {
    Stream* s = readable_[i];
    if (s == nullptr) continue;
    readable_[i] = nullptr;
    s->read_queued_ = false;
    const ReadOutcome& o = read_outcomes_[i];
    s->after_read(o.got, o.eof, o.error);
  }
  readable_.clear();
}

void StreamLoop::receive_batched() {
  // readable_[i] reads for itself, as a readiness outside a batch does.
  auto read_alone = [this](size_t i) {
    Stream* s = readable_[i];
    ReadOutcome& o = read_outcomes_[i];
    if (s != nullptr && s->wants_read()) s->read_plain(o.got, o.eof, o.error, kMaxReadsPerEvent);
  };
  // One stream alone gains nothing from the ring, and without the ring
  // each reads for itself.
  if (readable_.size() < 2 || !batching()) {
    for (size_t i = 0; i < readable_.size(); ++i) read_alone(i);
    return;
  }
  if (arena_ == nullptr) arena_.reset(new char[kReadsPerSubmission * kMaxReadChunk]);
  landings_.resize(kReadsPerSubmission);
  iov_.resize(std::max(iov_.size(), kReadsPerSubmission * 2));
  size_t next = 0;
  while (next < readable_.size()) {
    batch_members_.clear();
    for (; next < readable_.size() && batch_members_.size() < kReadsPerSubmission; ++next) {
      Stream* s = readable_[next];
      if (s == nullptr || !s->wants_read()) continue;
      const size_t k = batch_members_.size();
      Landing& l = landings_[k];
      iovec* iov = &iov_[k * 2];
      const size_t have = s->input_length();
      l.want = std::min(s->read_chunk_, s->input_limit_ - have);
      if (s->reads_ == Stream::Reads::compact && have == 0) {
        l.slot = &arena_[k * kMaxReadChunk];
        l.nvec = 1;
        iov[0] = {l.slot, l.want};
      } else {
        l.slot = nullptr;
        l.nvec = s->reserve_input(l.want, l.vec, iov);
        if (l.nvec <= 0) {
          read_outcomes_[next].error = true;
          continue;
        }
      }
      batch_->add_recv(s->fd_, iov, static_cast<size_t>(l.nvec));
      batch_members_.push_back(next);
    }
    if (batch_members_.empty()) break;
    std::span<const int> results = batch_->submit();
    ++batches_;
    batched_reads_ += batch_members_.size();
    for (size_t k = 0; k < batch_members_.size(); ++k) {
      Stream* s = readable_[batch_members_[k]];
      ReadOutcome& o = read_outcomes_[batch_members_[k]];
      Landing& l = landings_[k];
      int n = results[k];
      if (n > 0) {
        const size_t got = static_cast<size_t>(n);
        if (l.slot != nullptr)
          evbuffer_add(s->input(), l.slot, got);
        else
          s->commit_input(l.vec, l.nvec, got);
        o.got = got;
        // The space came back full: more may wait, read as a readiness
        // would (the rest of its rounds).
        if (got == l.want) s->read_plain(o.got, o.eof, o.error, kMaxReadsPerEvent - 1);
      } else if (n == 0) {
        o.eof = true;
      } else if (n != -EAGAIN && n != -EWOULDBLOCK && n != -EINTR) {
        // A receive the kernel never made comes back -EAGAIN (IoBatch):
        // the next readiness reads it.
        errno = -n;
        o.error = true;
      }
    }
    if (!batching()) {
      log_ring_lost();
      // The receives the kernel did not make, and the streams this
      // submission did not reach, read the usual way.
      for (size_t k = 0; k < batch_members_.size(); ++k)
        if (results[k] == -EAGAIN) read_alone(batch_members_[k]);
      for (; next < readable_.size(); ++next) read_alone(next);
    }
  }
}

void StreamLoop::log_ring_lost() {
  // Said once: the ring is dropped with the failed submission.
  log_warn(
      "io_uring stopped taking submissions: each socket is read and written with its own system "
      "call from now on");
}

}  // namespace memshard::proxy
