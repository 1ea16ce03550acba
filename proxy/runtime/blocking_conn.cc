#include "proxy/runtime/blocking_conn.h"

#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cerrno>

#include "proxy/protocol/own_requests.h"
#include "proxy/protocol/reply_parser.h"
#include "proxy/protocol/reply_status.h"

namespace memshard::proxy {

namespace {
// A line longer than any memcached writes: not a server we know.
constexpr size_t kMaxLine = 64 * 1024;
}  // namespace

BlockingConn::BlockingConn(const ServerInfo& server, int timeout_ms) : timeout_ms_(timeout_ms) {
  for (const SocketAddress& a : server.addresses) {
    fd_ = socket(a.get()->sa_family, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
    if (fd_ < 0) continue;
    if (connect(fd_, a.get(), a.length) == 0 || (errno == EINPROGRESS && wait(POLLOUT))) {
      int err = 0;
      socklen_t len = sizeof(err);
      if (getsockopt(fd_, SOL_SOCKET, SO_ERROR, &err, &len) == 0 && err == 0) return;
    }
    ::close(fd_);
    fd_ = -1;
  }
}

BlockingConn::~BlockingConn() {
  if (fd_ >= 0) ::close(fd_);
}

bool BlockingConn::send(std::string_view bytes) {
  while (!bytes.empty() && fd_ >= 0) {
    const ssize_t n = ::send(fd_, bytes.data(), bytes.size(), MSG_NOSIGNAL);
    if (n > 0) {
      bytes.remove_prefix(static_cast<size_t>(n));
    } else if (n < 0 && (errno == EAGAIN || errno == EINTR)) {
      if (!wait(POLLOUT)) return fail();
    } else {
      return fail();
    }
  }
  return fd_ >= 0;
}

bool BlockingConn::read_line(std::string& line) {
  while (true) {
    const size_t eol = buf_.find('\n', pos_);
    if (eol != std::string::npos) {
      const size_t end = eol > pos_ && buf_[eol - 1] == '\r' ? eol - 1 : eol;
      // Checked here too: a long line whose end came in the read that
      // took it past the limit is still too long.
      if (end - pos_ > kMaxLine) return fail();
      line.assign(buf_, pos_, end - pos_);
      pos_ = eol + 1;
      compact();
      return true;
    }
    // Room for the longest line and its "\r" before its "\n" arrives.
    if (buf_.size() - pos_ > kMaxLine + 1) return fail();
    if (!fill()) return false;
  }
}

bool BlockingConn::read_exact(size_t n, std::string& out) {
  while (buf_.size() - pos_ < n) {
    if (!fill()) return false;
  }
  out.assign(buf_, pos_, n);
  pos_ += n;
  compact();
  return true;
}

BlockingConn::Lookup BlockingConn::meta_get(std::string_view key, bool with_cas, size_t max_bytes,
                                            std::string& reply, proto::MetaValue& value) {
  std::string request;
  if (!proto::append_lookup(key, with_cas, nullptr, request)) return Lookup::unsendable;
  if (!send(request) || !read_line(reply)) return Lookup::failed;
  const proto::ReplyLine head = proto::parse_reply_line(reply);
  if (head.kind == proto::ReplyKind::line)
    return proto::classify_reply_line(reply) == proto::ReplyStatus::miss ? Lookup::miss
                                                                         : Lookup::failed;
  if (head.kind != proto::ReplyKind::meta_value) return Lookup::failed;
  if (head.data_bytes > max_bytes + 2) {  // data_bytes counts the value's "\r\n"
    fail();
    return Lookup::failed;
  }
  // "VA <length> <flags>", then the value and its "\r\n": parsed as one reply.
  std::string data;
  if (!read_exact(head.data_bytes, data)) return Lookup::failed;
  reply.append("\r\n").append(data);
  const std::optional<proto::MetaValue> parsed = proto::parse_meta_value(reply);
  if (!parsed) return Lookup::failed;
  value = *parsed;
  return Lookup::hit;
}

bool BlockingConn::wait(short events) {
  pollfd p{fd_, events, 0};
  return poll(&p, 1, timeout_ms_) == 1 && (p.revents & (POLLERR | POLLHUP)) == 0;
}

bool BlockingConn::fill() {
  if (fd_ < 0) return false;
  char chunk[16384];
  while (true) {
    const ssize_t n = ::recv(fd_, chunk, sizeof(chunk), 0);
    if (n > 0) {
      buf_.append(chunk, static_cast<size_t>(n));
      return true;
    }
    if (n < 0 && (errno == EAGAIN || errno == EINTR)) {
      pollfd p{fd_, POLLIN, 0};
      if (poll(&p, 1, timeout_ms_) != 1) return fail();
      continue;
    }
    return fail();
  }
}

void BlockingConn::compact() {
  if (pos_ > 64 * 1024 || pos_ == buf_.size()) {
    buf_.erase(0, pos_);
    pos_ = 0;
  }
}

bool BlockingConn::fail() {
  if (fd_ >= 0) ::close(fd_);
  fd_ = -1;
  return false;
}

}  // namespace memshard::proxy
