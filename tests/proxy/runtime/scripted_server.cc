#include "scripted_server.h"

#include <arpa/inet.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <stdexcept>
#include <utility>

namespace memshard::proxy::test {

namespace {

// A TCP socket bound to 127.0.0.1 on a port the kernel picks.
int bound_socket(uint16_t& port) {
  const int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  if (fd < 0 || bind(fd, reinterpret_cast<sockaddr*>(&a), sizeof(a)) != 0) {
    throw std::runtime_error(std::string("bind 127.0.0.1: ") + strerror(errno));
  }
  socklen_t len = sizeof(a);
  getsockname(fd, reinterpret_cast<sockaddr*>(&a), &len);
  port = ntohs(a.sin_port);
  return fd;
}

void send_all(int fd, const std::string& data) {
  size_t off = 0;
  while (off < data.size()) {
    const ssize_t n = send(fd, data.data() + off, data.size() - off, MSG_NOSIGNAL);
    if (n <= 0) return;  // the peer left: nothing to deliver to
    off += static_cast<size_t>(n);
  }
}

}  // namespace

ScriptedServer::ScriptedServer(Script script) : script_(std::move(script)) {
  listen_fd_ = bound_socket(port_);
  if (listen(listen_fd_, 64) != 0) throw std::runtime_error("listen");
  if (pipe2(wake_, O_CLOEXEC | O_NONBLOCK) != 0) throw std::runtime_error("pipe2");
  thread_ = std::thread([this] { run(); });
}

ScriptedServer::~ScriptedServer() {
  stop_.store(true);
  (void)!write(wake_[1], "x", 1);
  thread_.join();
  for (Conn& c : conns_) close(c.fd);
  close(listen_fd_);
  close(wake_[0]);
  close(wake_[1]);
}

void ScriptedServer::set_script(Script script) {
  std::lock_guard<std::mutex> lock(script_mu_);
  script_ = std::move(script);
}

void ScriptedServer::run() {
  while (!stop_.load()) {
    std::vector<pollfd> fds{{listen_fd_, POLLIN, 0}, {wake_[0], POLLIN, 0}};
    for (const Conn& c : conns_) fds.push_back({c.fd, POLLIN, 0});
    if (poll(fds.data(), fds.size(), 100) < 0 && errno != EINTR) return;
    if (fds[0].revents & POLLIN) {
      const int fd = accept4(listen_fd_, nullptr, nullptr, SOCK_CLOEXEC);
      if (fd >= 0) {
        conns_.push_back(Conn{fd, {}});
        connections_.fetch_add(1);
      }
    }
    if (fds[1].revents & POLLIN) {
      char drain[64];
      while (read(wake_[0], drain, sizeof(drain)) > 0) {
      }
    }
    for (size_t i = 0; i + 2 < fds.size(); ++i) {
      Conn& c = conns_[i];
      if ((fds[i + 2].revents & (POLLIN | POLLHUP | POLLERR)) == 0) continue;
      char buf[16384];
      const ssize_t n = read(c.fd, buf, sizeof(buf));
      if (n <= 0) {
        c.dead = true;
        continue;
      }
      c.in.append(buf, static_cast<size_t>(n));
      serve(c);
    }
    std::erase_if(conns_, [](const Conn& c) {
      if (c.dead) close(c.fd);
      return c.dead;
    });
  }
}

void ScriptedServer::serve(Conn& c) {
  for (size_t eol = c.in.find('\n'); eol != std::string::npos && !c.dead; eol = c.in.find('\n')) {
    std::string line = c.in.substr(0, eol > 0 && c.in[eol - 1] == '\r' ? eol - 1 : eol);
    c.in.erase(0, eol + 1);
    lines_.fetch_add(1);
    Answer answer;
    {
      std::lock_guard<std::mutex> lock(script_mu_);
      answer = script_(line);
    }
    send_all(c.fd, answer.bytes);
    if (answer.close) c.dead = true;
  }
}

RefusingPort::RefusingPort() {
  fd_ = bound_socket(port_);
}

RefusingPort::~RefusingPort() {
  close(fd_);
}

}  // namespace memshard::proxy::test
