// Helpers for the failure-handling tests: memshard in front of a fleet with
// its log kept, the proxy's own `stats`, keys owned by each server, the
// resident memory of a process, and a fake backend that misbehaves.
#pragma once

#include <gtest/gtest.h>
#include <sys/types.h>

#include <atomic>
#include <chrono>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <string_view>
#include <thread>
#include <utility>
#include <vector>

#include "harness.h"

namespace memshard::testing::failures {

using Clock = std::chrono::steady_clock;
using Directives = std::vector<std::pair<std::string, std::string>>;

// Failure messages here cut long strings at 400 bytes.
inline std::string printable(std::string_view s, size_t max = 400) {
  return testing::printable(s, max);
}

// Milliseconds between two instants, for messages and bounds.
inline int64_t ms_between(Clock::time_point a, Clock::time_point b) {
  return std::chrono::duration_cast<std::chrono::milliseconds>(b - a).count();
}

// VmRSS of a process in KiB (0 when it cannot be read).
uint64_t rss_kib(pid_t pid);
// True when the process runs an AddressSanitizer build (MEMSHARD_BINARY=...):
// its RSS (shadow memory, quarantine) says nothing about memshard's own.
bool sanitizer_build(pid_t pid);

// Fails the current test when memshard's log holds a sanitizer report (with
// MEMSHARD_BINARY pointing at an ASan/UBSan build).
void expect_no_sanitizer_report(const std::string& log);

// The proxy's `stats`, asked on a fresh connection. Empty on failure.
std::map<std::string, uint64_t> proxy_stats(uint16_t port);
// One counter of the proxy's stats (0 when absent).
uint64_t proxy_stat(uint16_t port, const std::string& name);
// Polls `pred` every 20 ms until it holds or `limit` passes.
bool eventually(const std::function<bool()>& pred, std::chrono::milliseconds limit);
// Polls (up to `limit`) until the proxy holds no client connection but the
// one asking and owes no server a reply: what the clients of a finished
// test case sent has all reached the servers. A case that ended with the
// connection closed or left waiting may still have writes on their way,
// through another worker's server connection, which must not land after the
// next case's flush_all.
bool proxy_settled(uint16_t port, std::chrono::milliseconds limit);

// memshard on a fresh port in front of `servers`, one pool "main".
class Proxy {
 public:
  Proxy(const TempDir& dir, const std::vector<std::string>& servers, Directives directives,
        std::vector<std::string> extra_args = {"--threads", "2", "-s", "0"},
        std::vector<std::string> launcher = {});  // see Memshard
  ~Proxy();
  uint16_t port() const { return port_; }
  const std::string& config() const { return config_; }
  Process& process() { return memshard_->process(); }
  pid_t pid() { return memshard_->process().pid(); }
  // The last bytes of memshard's log.
  std::string log_tail(size_t bytes = 4000) const;
  // Prints the log tail when the current test has failed.
  void dump_log_on_failure() const;

 private:
  uint16_t port_ = 0;
  std::string config_, log_;
  std::unique_ptr<Memshard> memshard_;
};

// For each server of `fleet`, `per_server` keys "<prefix>N" it owns under
// `config` (memshard ring lookup). Adds a test failure when it cannot.
std::vector<std::vector<std::string>> keys_by_server(const std::string& config, Fleet& fleet,
                                                     size_t per_server, const std::string& prefix);
// Same, for servers given by address ("host:port").
std::vector<std::vector<std::string>> keys_by_address(const std::string& config,
                                                      const std::vector<std::string>& addresses,
                                                      size_t per_server, const std::string& prefix);

// Splits what a connection receives into whole replies: a line, VALUE
// blocks up to END, or a meta VA line and its data (as many as are
// pipelined), keeping the bytes of the next replies for the next call.
class ReplyReader {
 public:
  explicit ReplyReader(RawClient& c) : c_(c) {}
  // The next whole reply; empty on timeout or EOF (what was received stays
  // buffered, see pending()).
  std::string next(std::chrono::milliseconds limit = std::chrono::seconds(5));
  const std::string& pending() const { return buf_; }

 private:
  // Length of the first whole reply in buf_, or 0 when incomplete.
  size_t complete_reply() const;
  RawClient& c_;
  std::string buf_;
};

// One request as a scripted server reads it: its command line, split at
// spaces, and for a storage command (set, add, replace, append, prepend,
// cas, ms) its data block.
struct FakeRequest {
  std::string line;                // without "\r\n"
  std::vector<std::string> words;  // the line's words
  std::string data;                // without its "\r\n"
  std::string verb() const { return words.empty() ? std::string() : words[0]; }
  std::string key() const { return words.size() > 1 ? words[1] : std::string(); }
  // A word of the line after the key, exactly ("q", "noreply").
  bool has(std::string_view word) const;
  // The meta flag word after the key that starts with `flag` ("O12" for
  // 'O'), whole; empty when there is none.
  std::string flag(char flag) const;
};

// A TCP listener on 127.0.0.1 whose connections are served by `handler`
// on a thread per connection (the fd is closed when the handler returns).
// Stops accepting and joins everything at destruction; handlers must watch
// `stopping()` and return within a second or so of it.
class FakeServer {
 public:
  using Handler = std::function<void(int fd, FakeServer& self)>;
  explicit FakeServer(Handler handler);
  ~FakeServer();
  FakeServer(const FakeServer&) = delete;
  FakeServer& operator=(const FakeServer&) = delete;
  uint16_t port() const { return port_; }
  std::string address() const { return "127.0.0.1:" + std::to_string(port_); }
  bool stopping() const { return stop_.load(); }
  size_t accepted() const { return accepted_.load(); }

  // Handler helpers. Reads one line (up to "\n") into `line`, with at most
  // `limit` of waiting; false on EOF, timeout or stop.
  bool read_line(int fd, std::string& buffered, std::string& line,
                 std::chrono::milliseconds limit = std::chrono::seconds(10));
  // Reads one request (its line, and the data block of a storage
  // command); false on EOF, timeout or stop.
  bool read_request(int fd, std::string& buffered, FakeRequest& request,
                    std::chrono::milliseconds limit = std::chrono::seconds(10));
  static void send_all(int fd, std::string_view bytes);

 private:
  void accept_loop();
  Handler handler_;
  int listen_fd_ = -1;
  uint16_t port_ = 0;
  std::atomic<bool> stop_{false};
  std::atomic<size_t> accepted_{0};
  std::thread acceptor_;
  std::mutex mu_;
  std::vector<std::thread> conns_;
};

}  // namespace memshard::testing::failures
