#include "proxy/cli/http_fetch.h"

#include <fcntl.h>
#include <netdb.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cerrno>
#include <charconv>
#include <cstring>

namespace memshard::proxy {

namespace {

using Clock = std::chrono::steady_clock;
constexpr size_t kMaxAnswer = 64u << 20;

int ms_left(Clock::time_point deadline) {
  const auto left =
      std::chrono::duration_cast<std::chrono::milliseconds>(deadline - Clock::now()).count();
  return left > 0 ? static_cast<int>(left) : 0;
}

// Waits for `events` on fd until the deadline; false on timeout or error.
bool wait_for(int fd, short events, Clock::time_point deadline) {
  pollfd p{fd, events, 0};
  for (;;) {
    const int n = poll(&p, 1, ms_left(deadline));
    if (n > 0) return true;
    if (n == 0 || errno != EINTR) return false;
  }
}

// A connected non-blocking socket to one of host's addresses, or -1.
int connect_to(const std::string& host, uint16_t port, Clock::time_point deadline,
               std::string& error) {
  addrinfo hints{};
  hints.ai_family = AF_UNSPEC;
  hints.ai_socktype = SOCK_STREAM;
  addrinfo* list = nullptr;
  const int rc = getaddrinfo(host.c_str(), std::to_string(port).c_str(), &hints, &list);
  if (rc != 0) {
    error = "cannot resolve " + host + ": " + gai_strerror(rc);
    return -1;
  }
  int fd = -1;
  for (addrinfo* a = list; a != nullptr && fd < 0; a = a->ai_next) {
    fd = socket(a->ai_family, a->ai_socktype | SOCK_NONBLOCK | SOCK_CLOEXEC, a->ai_protocol);
    if (fd < 0) continue;
    if (connect(fd, a->ai_addr, a->ai_addrlen) == 0) break;
    int err = errno;
    if (err == EINPROGRESS && wait_for(fd, POLLOUT, deadline)) {
      socklen_t len = sizeof(err);
      getsockopt(fd, SOL_SOCKET, SO_ERROR, &err, &len);
      if (err == 0) break;
    }
    error = err == EINPROGRESS ? "connect timed out" : strerror(err);
    close(fd);
    fd = -1;
  }
  freeaddrinfo(list);
  return fd;
}

bool send_all(int fd, const std::string& bytes, Clock::time_point deadline) {
  size_t sent = 0;
  while (sent < bytes.size()) {
    const ssize_t n = send(fd, bytes.data() + sent, bytes.size() - sent, MSG_NOSIGNAL);
    if (n > 0) {
      sent += static_cast<size_t>(n);
    } else if (n < 0 && (errno == EAGAIN || errno == EINTR)) {
      if (!wait_for(fd, POLLOUT, deadline)) return false;
    } else {
      return false;
    }
  }
  return true;
}

// Reads until the server closes (it answers with Connection: close).
bool read_all(int fd, std::string& out, Clock::time_point deadline, std::string& error) {
  char buf[65536];
  for (;;) {
    const ssize_t n = recv(fd, buf, sizeof(buf), 0);
    if (n > 0) {
      out.append(buf, static_cast<size_t>(n));
      if (out.size() > kMaxAnswer) {
        error = "answer larger than 64 MiB";
        return false;
      }
    } else if (n == 0) {
      return true;
    } else if (errno == EAGAIN || errno == EINTR) {
      if (!wait_for(fd, POLLIN, deadline)) {
        error = "no complete answer in time";
        return false;
      }
    } else {
      error = strerror(errno);
      return false;
    }
  }
}

}  // namespace

bool split_host_port(const std::string& text, std::string& host, uint16_t& port) {
  std::string_view t = text, port_text;
  if (t.starts_with('[')) {
    const size_t close = t.find(']');
    if (close == t.npos) return false;
    host.assign(t.substr(1, close - 1));
    std::string_view rest = t.substr(close + 1);
    if (!rest.empty() && !rest.starts_with(':')) return false;
    port_text = rest.empty() ? "" : rest.substr(1);
  } else if (const size_t colon = t.rfind(':'); colon != t.npos && t.find(':') == colon) {
    host.assign(t.substr(0, colon));
    port_text = t.substr(colon + 1);
  } else {
    host.assign(t);
  }
  if (host.empty()) host = "127.0.0.1";
  if (port_text.empty()) {
    port = 22222;
    return true;
  }
  unsigned value = 0;
  auto [end, ec] = std::from_chars(port_text.data(), port_text.data() + port_text.size(), value);
  if (ec != std::errc() || end != port_text.data() + port_text.size() || value == 0 ||
      value > 65535)
    return false;
  port = static_cast<uint16_t>(value);
  return true;
}

FetchResult http_fetch(const std::string& host, uint16_t port, const std::string& path,
                       const std::string& token, std::chrono::milliseconds limit) {
  FetchResult r;
  const auto deadline = Clock::now() + limit;
  const std::string where = host + ":" + std::to_string(port);
  std::string error;
  const int fd = connect_to(host, port, deadline, error);
  if (fd < 0) {
    r.error = "cannot connect to " + where + ": " + error;
    return r;
  }
  std::string request = "GET " + path + " HTTP/1.1\r\nHost: " + where +
                        "\r\nAccept: application/json\r\nConnection: close\r\n";
  if (!token.empty()) request += "Authorization: Bearer " + token + "\r\n";
  request += "\r\n";
  std::string answer;
  const bool sent = send_all(fd, request, deadline);
  const bool read = sent && read_all(fd, answer, deadline, error);
  close(fd);
  if (!sent || !read) {
    r.error = where + ": " + (sent ? error : "cannot send the request");
    return r;
  }
  const size_t head_end = answer.find("\r\n\r\n");
  if (!answer.starts_with("HTTP/1.") || head_end == std::string::npos || answer.size() < 12) {
    r.error = where + " did not answer in HTTP (is it memshard's stats port?)";
    return r;
  }
  std::from_chars(answer.data() + 9, answer.data() + 12, r.status);
  r.body = answer.substr(head_end + 4);
  r.ok = r.status == 200;
  if (!r.ok) {
    r.error = where + " answered " + answer.substr(9, answer.find("\r\n") - 9);
    if (r.status == 401) r.error += ": give the stats token (--token-file)";
  }
  return r;
}

}  // namespace memshard::proxy
