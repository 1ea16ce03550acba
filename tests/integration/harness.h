// Real processes for integration tests: memcached servers, nutcracker and
// the memshard binary, on 127.0.0.1 ports chosen free at run time, and a
// raw socket client. Every process is killed when its object goes away;
// every wait is bounded.
#pragma once

#include <sys/types.h>

#include <chrono>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace memshard::testing {

// A TCP port on 127.0.0.1 that nothing listened on a moment ago.
uint16_t free_port();
// A fresh directory under /tmp, removed with its files at destruction.
class TempDir {
 public:
  TempDir();
  ~TempDir();
  TempDir(const TempDir&) = delete;
  TempDir& operator=(const TempDir&) = delete;
  const std::string& path() const { return path_; }
  // Writes `text` to path()/name and returns the full path.
  std::string write(const std::string& name, const std::string& text) const;

 private:
  std::string path_;
};

class Process {
 public:
  Process() = default;
  explicit Process(std::vector<std::string> argv, const std::string& log_file = "");
  ~Process();
  Process(Process&& o) noexcept;
  Process& operator=(Process&& o) noexcept;
  Process(const Process&) = delete;
  Process& operator=(const Process&) = delete;

  pid_t pid() const { return pid_; }
  bool running();
  void signal(int sig);
  // Sends SIGTERM and waits up to `grace`, then SIGKILL. Returns the exit
  // status as from waitpid (or -1 when already reaped).
  int stop(std::chrono::milliseconds grace = std::chrono::milliseconds(3000));
  // Waits for the process to exit by itself; -1 on timeout.
  int wait_exit(std::chrono::milliseconds limit);

 private:
  pid_t pid_ = -1;
  int status_ = -1;
};

// Waits until something accepts connections on 127.0.0.1:port (or the unix
// socket path); false on timeout.
bool wait_listening(uint16_t port, std::chrono::milliseconds limit = std::chrono::seconds(10));
bool wait_listening(const std::string& unix_path,
                    std::chrono::milliseconds limit = std::chrono::seconds(10));

class Memcached {
 public:
  explicit Memcached(uint16_t port = 0, std::vector<std::string> extra_args = {});
  uint16_t port() const { return port_; }
  std::string address() const { return "127.0.0.1:" + std::to_string(port_); }
  Process& process() { return process_; }
  // The value of one line of the server's own `stats`.
  uint64_t stat(const std::string& name) const;
  void restart();

 private:
  void launch();
  uint16_t port_;
  std::vector<std::string> extra_args_;
  Process process_;
};

// The memshard binary under test (path from the build), started on a config.
class Memshard {
 public:
  Memshard(const std::string& config_path, std::vector<std::string> extra_args = {},
           uint16_t wait_port = 0, const std::string& log_file = "");
  Process& process() { return process_; }

 private:
  Process process_;
};

// Path of the memshard binary under test.
std::string memshard_binary();

// A blocking socket client with bounded waits.
class RawClient {
 public:
  explicit RawClient(uint16_t port);
  explicit RawClient(const std::string& unix_path);
  ~RawClient();
  RawClient(const RawClient&) = delete;
  RawClient& operator=(const RawClient&) = delete;

  void send(std::string_view bytes);
  // Reads until the received bytes end with `suffix` (or time runs out).
  std::string read_until(std::string_view suffix,
                         std::chrono::milliseconds limit = std::chrono::seconds(5));
  // Reads exactly n bytes (fewer on timeout or close).
  std::string read_exact(size_t n, std::chrono::milliseconds limit = std::chrono::seconds(5));
  // Sends `request` and reads until `suffix`.
  std::string roundtrip(std::string_view request, std::string_view suffix = "\r\n");
  // Whatever arrives within `limit` (for checking that nothing does).
  std::string read_for(std::chrono::milliseconds limit);
  // True when the peer has closed the connection (reads EOF within limit).
  bool closed_by_peer(std::chrono::milliseconds limit = std::chrono::seconds(2));
  int fd() const { return fd_; }

 private:
  int fd_ = -1;
};

}  // namespace memshard::testing
