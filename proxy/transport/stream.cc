#include "proxy/transport/stream.h"

#include <netinet/in.h>
#include <netinet/tcp.h>
#include <openssl/err.h>
#include <sys/socket.h>
#include <sys/uio.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstddef>
#include <span>

#include "proxy/support/log.h"

namespace memshard::proxy {

// A batch hands evbuffer_peek's vectors to the kernel as iovecs.
static_assert(sizeof(evbuffer_iovec) == sizeof(iovec));
static_assert(offsetof(evbuffer_iovec, iov_base) == offsetof(iovec, iov_base));
static_assert(offsetof(evbuffer_iovec, iov_len) == offsetof(iovec, iov_len));

Stream::Stream(StreamLoop& loop, int fd, Callback callback, void* owner, size_t read_chunk,
               Reads reads)
    : loop_(loop),
      fd_(fd),
      callback_(callback),
      owner_(owner),
      read_chunk_(std::min(read_chunk, StreamLoop::kMaxReadChunk)),
      reads_(reads) {
  if (fd_ >= 0) set_interest();
}

Stream::~Stream() {
  if (alive_ != nullptr) *alive_ = false;
  close();
  if (input_ != nullptr) loop_.give_back(input_);
  if (output_ != nullptr) loop_.give_back(output_);
}

evbuffer* Stream::input() {
  if (input_ == nullptr) input_ = loop_.take_buffer();
  return input_;
}

evbuffer* Stream::output() {
  if (output_ == nullptr) output_ = loop_.take_buffer();
  return output_;
}

size_t Stream::input_length() const {
  return input_ == nullptr ? 0 : evbuffer_get_length(input_);
}

size_t Stream::output_length() const {
  size_t plain = output_ == nullptr ? 0 : evbuffer_get_length(output_);
  return tls_ != nullptr ? plain + evbuffer_get_length(tls_->cipher) : plain;
}

// An idle client keeps no buffers: its next read or reply takes one from
// the loop's spares (or makes one), which costs less than holding them for
// thousands of clients.
void Stream::release_empty_buffers() {
  if (reads_ != Reads::compact) return;
  if (input_ != nullptr && evbuffer_get_length(input_) == 0) {
    loop_.give_back(input_);
    input_ = nullptr;
  }
  if (output_ != nullptr && evbuffer_get_length(output_) == 0) {
    loop_.give_back(output_);
    output_ = nullptr;
  }
}

void Stream::close() {
  if (tls_ != nullptr) {
    tls_->deadline->cancel();
    // close_notify, once, if the socket takes it now; never waited for.
    if (fd_ >= 0 && !tls_->handshaking && !failed_) {
      SSL_shutdown(tls_->ssl);
      ERR_clear_error();
      (void)evbuffer_write(tls_->cipher, fd_);
    }
    evbuffer_drain(tls_->cipher, evbuffer_get_length(tls_->cipher));
  }
  if (dirty_) {
    auto it = std::find(loop_.dirty_.begin(), loop_.dirty_.end(), this);
    if (it != loop_.dirty_.end()) *it = nullptr;
    dirty_ = false;
  }
  if (read_queued_) {
    // Its bytes, if read_ready() already took them, go with it.
    auto it = std::find(loop_.readable_.begin(), loop_.readable_.end(), this);
    if (it != loop_.readable_.end()) *it = nullptr;
    read_queued_ = false;
  }
  if (interest_ != 0) event_del(&event_);
  interest_ = 0;
  if (fd_ >= 0) ::close(fd_);
  fd_ = -1;
  if (input_ != nullptr) evbuffer_drain(input_, evbuffer_get_length(input_));
  if (output_ != nullptr) evbuffer_drain(output_, evbuffer_get_length(output_));
}

void Stream::reset_on_close() {
  if (fd_ < 0) return;
  const linger reset{1, 0};
  (void)setsockopt(fd_, SOL_SOCKET, SO_LINGER, &reset, sizeof(reset));
}

bool Stream::settled() const {
  return fd_ >= 0 && !dirty_ && !blocked_ && !connecting_ && !eof_ && !failed_ &&
         input_length() == 0 && output_length() == 0;
}

int Stream::release_fd() {
  int fd = fd_;
  fd_ = -1;  // so close() leaves the socket open
  close();
  if (input_ != nullptr) loop_.give_back(input_);
  if (output_ != nullptr) loop_.give_back(output_);
  input_ = output_ = nullptr;
  return fd;
}

bool Stream::connect(std::span<const SocketAddress> addresses, size_t first) {
  targets_.assign(addresses.begin(), addresses.end());
  tries_left_ = targets_.size();
  target_ = targets_.empty() ? 0 : first % targets_.size();
  return connect_next();
}

bool Stream::connect_next() {
  int last_error = EDESTADDRREQ;
  for (; tries_left_ > 0; target_ = (target_ + 1) % targets_.size()) {
    --tries_left_;
    const SocketAddress& address = targets_[target_];
    fd_ = socket(address.family(), SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
    if (fd_ < 0) {
      last_error = errno;
      // Out of descriptors or memory here: no other address does better.
      if (last_error == EMFILE || last_error == ENFILE || last_error == ENOBUFS ||
          last_error == ENOMEM)
        break;
      continue;
    }
    if (address.family() != AF_UNIX) {
      int one = 1;
      setsockopt(fd_, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
    }
    if (::connect(fd_, address.get(), address.length) == 0 || errno == EINPROGRESS) {
      // Even a connect that completed at once is reported from the loop
      // (the socket is writable at once), so the owner sees one path.
      connecting_ = true;
      rearm_ = true;  // a new descriptor, whatever the interest was
      set_interest();
      return true;
    }
    last_error = errno;
    ::close(fd_);
    fd_ = -1;
  }
  errno = last_error;
  return false;
}

bool Stream::connect_failed_try_next() {
  if (interest_ != 0) event_del(&event_);
  interest_ = 0;
  ::close(fd_);
  fd_ = -1;
  connecting_ = false;
  if (tries_left_ == 0) return false;
  target_ = (target_ + 1) % targets_.size();
  return connect_next();
}

void Stream::mark_dirty() {
  if (dirty_ || failed_ || fd_ < 0) return;
  dirty_ = true;
  loop_.dirty_.push_back(this);
}

void Stream::set_reading(bool on) {
  reading_ = on;
  set_interest();
}

void Stream::set_input_limit(size_t bytes) {
  input_limit_ = bytes;
  set_interest();
}

void Stream::update() {
  set_interest();
}

void Stream::set_interest() {
  short want = 0;
  if (fd_ >= 0 && !failed_) {
    if (connecting_) {
      want = EV_WRITE;
    } else if (tls_ != nullptr && tls_->handshaking) {
      want = tls_->handshake_wants;
    } else {
      if (reading_ && !eof_ && input_length() < input_limit_) want |= EV_READ;
      if (blocked_) want |= EV_WRITE;
    }
  }
  if (want != interest_ || rearm_) {
    if (interest_ != 0) event_del(&event_);
    interest_ = want;
    rearm_ = false;
    if (want == 0) return;
    event_assign(&event_, loop_.base(), fd_, want | EV_PERSIST, &Stream::on_event, this);
    event_add(&event_, nullptr);
  }
  // OpenSSL may hold decrypted bytes that a bounded read left: the socket
  // will not say so, so the stream reads again from the loop.
  if ((want & EV_READ) && tls_ != nullptr && !tls_->handshaking && SSL_pending(tls_->ssl) > 0)
    event_active(&event_, EV_READ, 0);
}

void Stream::on_event(evutil_socket_t, short what, void* self) {
  auto* s = static_cast<Stream*>(self);
  if (s->tls_ != nullptr && s->tls_->handshaking && !s->connecting_) {
    if (!s->failed_ && s->fd_ >= 0) s->tls_handshake();
    return;
  }
  if (what & EV_WRITE) {
    bool alive = true;
    s->alive_ = &alive;
    s->handle_write();
    if (!alive) return;
    s->alive_ = nullptr;
  }
  // A write that failed leaves the stream unusable: nothing more to read
  // or report.
  if ((what & EV_READ) && s->fd_ >= 0 && !s->failed_ && s->reading_) {
    if (s->tls_ == nullptr && s->loop_.batching_reads()) {
      // Read with the others at the end of the iteration (read_ready):
      // readiness is level-triggered, so nothing is missed meanwhile.
      if (!s->read_queued_) {
        s->read_queued_ = true;
        s->loop_.readable_.push_back(s);
      }
    } else {
      s->handle_read();
    }
  }
}

void Stream::handle_write() {
  if (connecting_) {
    int err = 0;
    socklen_t len = sizeof(err);
    if (getsockopt(fd_, SOL_SOCKET, SO_ERROR, &err, &len) != 0) err = errno;
    // Connected to itself (socket_address.h): nothing listened there.
    if (err == 0 && connected_to_itself(fd_)) err = ECONNREFUSED;
    if (err != 0 && connect_failed_try_next()) return;
    if (err != 0) {
      errno = err;
      failed_ = true;
      set_interest();
      report(Happened::error);
      return;
    }
    connecting_ = false;
    if (tls_ != nullptr) {
      tls_handshake();  // reports `connected` once done
      return;
    }
    set_interest();
    if (!report(Happened::connected)) return;
  }
  write_out();
}

void Stream::handle_read() {
  size_t got = 0;
  bool eof = false, error = false;
  if (tls_ != nullptr) {
    tls_read(got, eof, error);
  } else {
    read_plain(got, eof, error, kMaxReadsPerEvent);
  }
  after_read(got, eof, error);
}

void Stream::after_read(size_t got, bool eof, bool error) {
  if (eof || error) {
    eof_ = true;
    failed_ = error;
  }
  set_interest();
  if (got > 0 && !report(Happened::input)) return;
  if (error) {
    report(Happened::error);
  } else if (eof) {
    report(Happened::eof);
  } else {
    set_interest();  // the owner consumed input: reading may resume
    release_empty_buffers();
  }
}

int Stream::reserve_input(size_t& want, evbuffer_iovec vec[2], iovec iov[2]) {
  const size_t room = input_limit_ - input_length();
  int nvec = evbuffer_reserve_space(input(), static_cast<ev_ssize_t>(want), vec, 2);
  // The reserved space may be larger than asked for (a whole chain's
  // room): read into all of it, but never past the input limit.
  want = 0;
  for (int i = 0; i < nvec; ++i) {
    size_t len = std::min(vec[i].iov_len, room - want);
    iov[i] = {vec[i].iov_base, len};
    want += len;
  }
  return nvec;
}

void Stream::commit_input(evbuffer_iovec vec[2], int nvec, size_t got) {
  // Commit only the vectors the bytes reached.
  int used = 0;
  for (; used < nvec && got > 0; ++used) {
    vec[used].iov_len = std::min(vec[used].iov_len, got);
    got -= vec[used].iov_len;
  }
  if (used > 0) evbuffer_commit_space(input_, vec, used);
}

void Stream::read_plain(size_t& got, bool& eof, bool& error, int rounds) {
  for (int round = 0; round < rounds; ++round) {
    size_t have = input_length();
    if (have >= input_limit_) break;
    size_t want = std::min(read_chunk_, input_limit_ - have);
    ssize_t n;
    if (reads_ == Reads::compact && have == 0) {
      n = read(fd_, loop_.scratch_.data(), want);
      if (n > 0) evbuffer_add(input(), loop_.scratch_.data(), static_cast<size_t>(n));
    } else {
      evbuffer_iovec vec[2];
      iovec iov[2];
      int nvec = reserve_input(want, vec, iov);
      if (nvec <= 0) {
        error = true;
        break;
      }
      n = readv(fd_, iov, nvec);
      commit_input(vec, nvec, n > 0 ? static_cast<size_t>(n) : 0);
    }
    if (n < 0 && errno == EINTR) continue;
    if (n == 0) eof = true;
    if (n < 0 && errno != EAGAIN && errno != EWOULDBLOCK) error = true;
    if (n <= 0) break;
    got += static_cast<size_t>(n);
    // A short read drained the socket; level-triggered readiness brings
    // us back when more arrives, so no read is spent on EAGAIN.
    if (static_cast<size_t>(n) < want) break;
  }
}

bool Stream::finish_batched_send(int sent) {
  if (!writable()) return true;
  if (sent > 0) {
    evbuffer_drain(wire(), static_cast<size_t>(sent));
    return write_out(static_cast<size_t>(sent));
  }
  if (sent < 0 && sent != -EAGAIN && sent != -EWOULDBLOCK && sent != -EINTR) {
    errno = -sent;
    return fail_write();
  }
  return write_out();
}

bool Stream::fail_write() {
  failed_ = true;
  set_interest();
  report(Happened::error);
  return false;
}

bool Stream::write_out(size_t wrote) {
  if (!writable()) return true;
  for (;;) {
    // TLS: records are made ahead of the socket up to a bound, then more.
    if (tls_ != nullptr && !tls_encrypt()) return fail_write();
    if (wire_length() == 0) break;
    int n = evbuffer_write_atmost(wire(), fd_, -1);
    if (n > 0) {
      wrote += static_cast<size_t>(n);
      continue;
    }
    if (n < 0 && errno == EINTR) continue;
    if (n < 0 && errno != EAGAIN && errno != EWOULDBLOCK) return fail_write();
    break;  // the kernel's buffer is full
  }
  bool blocked = output_length() > 0;
  if (blocked != blocked_) {
    blocked_ = blocked;
    set_interest();
  }
  if (wrote > 0 && watch_writes_ && !report(Happened::written)) return false;
  release_empty_buffers();
  return true;
}

bool Stream::report(Happened what) {
  bool alive = true;
  bool* outer = alive_;
  alive_ = &alive;
  callback_(owner_, what);
  if (!alive) {
    if (outer != nullptr) *outer = false;
    return false;
  }
  alive_ = outer;
  return fd_ >= 0;  // closed by the owner: nothing more to do
}

}  // namespace memshard::proxy
