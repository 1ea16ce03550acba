// A stats port played by the test, for the CLI's blocking HTTP client: a
// thread that accepts on 127.0.0.1, records each request head, and does
// what the script says for the n-th connection (answer these bytes, say
// nothing until the client leaves, or hang up). Every wait in it is
// bounded and checks for the end of the test.
#pragma once

#include <gtest/gtest.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <functional>
#include <mutex>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "tests/proxy/transport/test_sockets.h"

namespace memshard::proxy::testing_cli {

using test_sockets::Fd;

struct Step {
  enum class Kind { answer, silent, hang_up };
  Kind kind = Kind::answer;
  std::string bytes;                  // answer: written whole, then the connection closes
  std::function<void()> before = {};  // run once the request head is read
};

inline Step answer(std::string bytes) {
  Step s;
  s.bytes = std::move(bytes);
  return s;
}
inline Step silent() {
  Step s;
  s.kind = Step::Kind::silent;
  return s;
}
inline Step hang_up() {
  Step s;
  s.kind = Step::Kind::hang_up;
  return s;
}

// "HTTP/1.1 <status> <reason>" with a Content-Length and Connection: close,
// as the stats port answers.
inline Step http(int status, const std::string& reason, const std::string& body,
                 const std::string& type = "application/json") {
  return answer("HTTP/1.1 " + std::to_string(status) + " " + reason + "\r\nContent-Type: " + type +
                "\r\nContent-Length: " + std::to_string(body.size()) +
                "\r\nConnection: close\r\n\r\n" + body);
}

class ScriptedHttpServer {
 public:
  // The n-th connection gets steps[n]; later ones get the last step.
  explicit ScriptedHttpServer(std::vector<Step> steps)
      : steps_(std::move(steps)), listener_(test_sockets::tcp_socket(address_, true)) {
    port_ = ntohs(reinterpret_cast<const sockaddr_in*>(&address_.storage)->sin_port);
    thread_ = std::thread([this] { serve(); });
  }
  ~ScriptedHttpServer() {
    stop_ = true;
    thread_.join();
  }
  ScriptedHttpServer(const ScriptedHttpServer&) = delete;
  ScriptedHttpServer& operator=(const ScriptedHttpServer&) = delete;

  uint16_t port() const { return port_; }
  std::vector<std::string> requests() const {
    std::lock_guard<std::mutex> lock(mu_);
    return requests_;
  }

 private:
  static constexpr int kPollMs = 20;
  static constexpr auto kHeadDeadline = std::chrono::seconds(20);

  // Waits for `events` on fd for one poll period; false when the test is
  // ending.
  bool wait(int fd, short events, bool& ready) const {
    pollfd p{fd, events, 0};
    ready = ::poll(&p, 1, kPollMs) > 0;
    return !stop_;
  }

  void serve() {
    size_t n = 0;
    while (!stop_) {
      bool ready = false;
      if (!wait(listener_.get(), POLLIN, ready)) return;
      if (!ready) continue;
      Fd conn(accept4(listener_.get(), nullptr, nullptr, SOCK_CLOEXEC));
      if (conn.get() < 0) continue;
      const Step& step = steps_[std::min(n++, steps_.size() - 1)];
      std::string head;
      if (!read_head(conn.get(), head)) return;
      {
        std::lock_guard<std::mutex> lock(mu_);
        requests_.push_back(head);
      }
      if (step.before) step.before();
      switch (step.kind) {
        case Step::Kind::answer:
          send_all(conn.get(), step.bytes);
          break;
        case Step::Kind::silent:
          // Until the client gives up and closes, or the test ends.
          while (true) {
            if (!wait(conn.get(), POLLIN, ready)) return;
            char buf[256];
            if (ready && recv(conn.get(), buf, sizeof(buf), MSG_DONTWAIT) <= 0) break;
          }
          break;
        case Step::Kind::hang_up:
          break;
      }
    }
  }

  bool read_head(int fd, std::string& head) const {
    const auto deadline = std::chrono::steady_clock::now() + kHeadDeadline;
    while (head.find("\r\n\r\n") == std::string::npos &&
           std::chrono::steady_clock::now() < deadline) {
      bool ready = false;
      if (!wait(fd, POLLIN, ready)) return false;
      if (!ready) continue;
      char buf[4096];
      const ssize_t got = recv(fd, buf, sizeof(buf), MSG_DONTWAIT);
      if (got <= 0) break;
      head.append(buf, static_cast<size_t>(got));
    }
    return true;
  }

  static void send_all(int fd, const std::string& bytes) {
    size_t sent = 0;
    while (sent < bytes.size()) {
      const ssize_t n = ::send(fd, bytes.data() + sent, bytes.size() - sent, MSG_NOSIGNAL);
      if (n <= 0) return;  // the client left
      sent += static_cast<size_t>(n);
    }
  }

  const std::vector<Step> steps_;
  SocketAddress address_;
  Fd listener_;
  uint16_t port_ = 0;
  std::atomic<bool> stop_{false};
  mutable std::mutex mu_;
  std::vector<std::string> requests_;
  std::thread thread_;
};

}  // namespace memshard::proxy::testing_cli
