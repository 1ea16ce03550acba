// A server on 127.0.0.1 that a test scripts line by line, on a thread of
// its own: each line it receives (without "\r\n" or "\n") goes to the
// script, whose answer is sent back at once. An empty answer sends nothing
// (a stalled server); an answer may also close the connection, as a
// crashing server would. The script can be swapped while the server runs
// (a dead server coming back). It counts the lines and connections it got.
#pragma once

#include <atomic>
#include <cstdint>
#include <functional>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

namespace memshard::proxy::test {

// What the script answers a line with. Made implicitly from bytes, so a
// script reads as the replies it gives.
struct Answer {
  Answer() = default;
  Answer(std::string b) : bytes(std::move(b)) {}
  Answer(const char* b) : bytes(b) {}
  static Answer close_connection() {
    Answer a;
    a.close = true;
    return a;
  }
  std::string bytes;
  bool close = false;  // after `bytes`
};

class ScriptedServer {
 public:
  using Script = std::function<Answer(const std::string& line)>;

  explicit ScriptedServer(Script script);
  ~ScriptedServer();
  ScriptedServer(const ScriptedServer&) = delete;
  ScriptedServer& operator=(const ScriptedServer&) = delete;

  uint16_t port() const { return port_; }
  // "127.0.0.1:port", as a config lists it.
  std::string address() const { return "127.0.0.1:" + std::to_string(port_); }
  void set_script(Script script);
  uint64_t lines() const { return lines_.load(); }
  uint64_t connections() const { return connections_.load(); }

 private:
  struct Conn {
    int fd;
    std::string in;
    bool dead = false;
  };
  void run();
  void serve(Conn& c);

  int listen_fd_ = -1;
  int wake_[2] = {-1, -1};
  uint16_t port_ = 0;
  std::mutex script_mu_;
  Script script_;
  std::atomic<bool> stop_{false};
  std::atomic<uint64_t> lines_{0}, connections_{0};
  std::vector<Conn> conns_;  // server thread only
  std::thread thread_;       // last: starts once the rest is set
};

// A 127.0.0.1 port that refuses connections for as long as this lives: a
// socket bound to it that does not listen, so no other test takes it.
class RefusingPort {
 public:
  RefusingPort();
  ~RefusingPort();
  RefusingPort(const RefusingPort&) = delete;
  RefusingPort& operator=(const RefusingPort&) = delete;
  uint16_t port() const { return port_; }
  std::string address() const { return "127.0.0.1:" + std::to_string(port_); }

 private:
  int fd_ = -1;
  uint16_t port_ = 0;
};

}  // namespace memshard::proxy::test
