// Real processes for integration tests: memcached servers, nutcracker and
// the memshard binary, on 127.0.0.1 ports chosen free at run time, and a
// raw socket client. Every process is killed when its object goes away;
// every wait is bounded.
#pragma once

#include <signal.h>
#include <sys/types.h>

#include <chrono>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

struct ssl_st;  // OpenSSL's SSL, for RawClient's TLS

namespace memshard::testing {

// Bytes made readable for failure messages: control bytes escaped (after
// an escaped "\n" a real line break when `break_lines`), long strings cut
// in the middle.
std::string printable(std::string_view s, size_t max = 600, bool break_lines = false);

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
  // SIGSTOP, then waits (bounded) until every thread of the process is
  // stopped; false if they are not within `limit`.
  bool suspend(std::chrono::milliseconds limit = std::chrono::seconds(2));
  void resume() { signal(SIGCONT); }
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

// Waits until something accepts connections on host:port (an IPv4 literal).
bool wait_listening_at(const std::string& host, uint16_t port,
                       std::chrono::milliseconds limit = std::chrono::seconds(10));

// How many times `needle` occurs in `text`, without overlaps.
size_t count_of(std::string_view text, std::string_view needle);

// A TCP socket that process `pid` holds: its descriptors' sockets matched
// to /proc/<pid>/net/tcp and tcp6.
struct TcpSocket {
  uint16_t local_port = 0;
  std::string remote_address;  // as the kernel prints it: "0100007F" is 127.0.0.1
  uint16_t remote_port = 0;
  int state = 0;  // TCP_ESTABLISHED, TCP_LISTEN, ... (<netinet/tcp.h>)
};
// Empty when the process is gone or /proc is unreadable.
std::vector<TcpSocket> tcp_sockets_of(pid_t pid);

// The value of "STAT name" in a `stats` reply, or nullopt.
std::optional<std::string> stat_value(std::string_view stats_reply, std::string_view name);

class Memcached {
 public:
  // `host`: the IPv4 loopback address to listen on (127.0.0.2 lets a test
  // use port 11211 without colliding with a system memcached on 127.0.0.1).
  explicit Memcached(uint16_t port = 0, std::vector<std::string> extra_args = {},
                     std::string host = "127.0.0.1");
  // Killed outright: memcached looks at a SIGTERM only on its once-a-second
  // clock tick, which cost every test about a second at its end.
  ~Memcached();
  Memcached(const Memcached&) = delete;
  Memcached& operator=(const Memcached&) = delete;
  uint16_t port() const { return port_; }
  const std::string& host() const { return host_; }
  std::string address() const { return host_ + ":" + std::to_string(port_); }
  Process& process() { return process_; }
  // The value of one line of the server's own `stats`.
  uint64_t stat(const std::string& name) const;
  void restart();

 private:
  void launch();
  uint16_t port_;
  std::vector<std::string> extra_args_;
  std::string host_;
  Process process_;
};

// The memshard binary under test (path from the build), started on a config.
class Memshard {
 public:
  // `launcher`: a command that runs memshard ("prlimit", "--nofile=..", "--").
  Memshard(const std::string& config_path, std::vector<std::string> extra_args = {},
           uint16_t wait_port = 0, const std::string& log_file = "",
           std::vector<std::string> launcher = {});
  Process& process() { return process_; }

 private:
  Process process_;
};

// Path of the memshard binary under test.
std::string memshard_binary();

// From now on every RawClient made to a TCP port speaks TLS, trusting the
// CA in `ca_file` (empty: plain again): so a plain-text test runs over TLS
// unchanged (the differential test's TLS run, memcached -Z behind and in
// front). Not thread-safe; call before making clients.
void raw_clients_use_tls(const std::string& ca_file);

// A CA and a certificate it signed for localhost and 127.0.0.1, made in
// `dir` by the openssl command line (never committed).
struct TlsFiles {
  std::string ca, cert, key;
};
TlsFiles make_tls_files(const TempDir& dir);

// A blocking socket client with bounded waits.
class RawClient {
 public:
  explicit RawClient(uint16_t port);
  explicit RawClient(const std::string& unix_path);
  // TCP to an IPv4 literal other than 127.0.0.1.
  RawClient(const std::string& host, uint16_t port);
  ~RawClient();
  RawClient(const RawClient&) = delete;
  RawClient& operator=(const RawClient&) = delete;

  void send(std::string_view bytes);
  // Reads until the received bytes end with `suffix` (or time runs out).
  std::string read_until(std::string_view suffix,
                         std::chrono::milliseconds limit = std::chrono::seconds(5));
  // Reads exactly n bytes (fewer on timeout or close).
  std::string read_exact(size_t n, std::chrono::milliseconds limit = std::chrono::seconds(5));
  // Reads until the received bytes hold `count` occurrences of `token`
  // (or time runs out).
  std::string read_count(std::string_view token, size_t count,
                         std::chrono::milliseconds limit = std::chrono::seconds(10));
  // Sends `request` and reads until `suffix`.
  std::string roundtrip(std::string_view request, std::string_view suffix = "\r\n");
  // Whatever arrives within `limit` (for checking that nothing does).
  std::string read_for(std::chrono::milliseconds limit);
  // True when the peer has closed the connection (reads EOF within limit).
  bool closed_by_peer(std::chrono::milliseconds limit = std::chrono::seconds(2));
  // Half-closes: the peer reads EOF, replies can still arrive.
  void shutdown_write();
  int fd() const { return fd_; }
  // One read of what is there (after poll() said so, or has_pending()):
  // bytes, 0 at the end, -1 on error.
  ssize_t recv_some(char* buf, size_t n);
  // TLS: bytes already decrypted and held, which poll() on fd() cannot see.
  bool has_pending() const;

 private:
  void start_tls_if_asked();
  int fd_ = -1;
  ::ssl_st* ssl_ = nullptr;
};

// ------------------------------------------------------------------ helpers

// A program run to completion with its output captured.
struct CommandResult {
  int exit_code = -1;  // -1 when killed by a signal or on timeout
  bool timed_out = false;
  std::string out;
  std::string err;
};
// Runs argv[0] (searched in PATH) with `input` on its stdin; kills it when
// it runs longer than `limit`.
CommandResult run_command(const std::vector<std::string>& argv, std::string_view input = {},
                          std::chrono::milliseconds limit = std::chrono::seconds(60));

// `memshard ring lookup -c config [--pool pool]` with the keys on stdin:
// the "host:port" (or socket path) of each key, in key order. Empty on
// failure (with the reason added to `error` when given). Keys must not hold '\n'.
std::vector<std::string> ring_lookup(const std::string& config_path,
                                     const std::vector<std::string>& keys,
                                     const std::string& pool = "", std::string* error = nullptr);

// N memcached servers on free 127.0.0.1 ports.
class Fleet {
 public:
  explicit Fleet(size_t n, std::vector<std::string> extra_args = {});
  size_t size() const { return servers_.size(); }
  Memcached& operator[](size_t i) { return *servers_[i]; }
  // Index of the server with this "host:port", or npos.
  size_t index_of(const std::string& address) const;
  // "127.0.0.1:port:1" for each server.
  std::vector<std::string> server_lines(uint32_t weight = 1) const;
  // flush_all on every server still running.
  void flush_all();

 private:
  std::vector<std::unique_ptr<Memcached>> servers_;
};

// One pool of a nutcracker.yml.
struct PoolSpec {
  std::string name = "pool";
  std::string listen;  // "127.0.0.1:port", or "/path/x.sock 0666"
  // Extra directives, written in order as "  key: value".
  std::vector<std::pair<std::string, std::string>> directives;
  std::vector<std::string> servers;  // "host:port:weight [name]" or "/path:weight"
};
std::string pool_yaml(const PoolSpec& pool);
std::string config_yaml(const std::vector<PoolSpec>& pools);

// nutcracker (twemproxy 0.5) on a config, its listen port given.
class Nutcracker {
 public:
  Nutcracker(const std::string& config_path, uint16_t listen_port, const std::string& log_file);
  Process& process() { return process_; }

 private:
  Process process_;
};
// True when nutcracker is installed.
bool have_nutcracker();

// One "VALUE key flags bytes [cas]" block of a retrieval reply.
struct Value {
  std::string key;
  uint32_t flags = 0;
  std::string data;
  std::string cas;  // empty when the reply had none
};
// Parses a whole retrieval reply (VALUE blocks, then END). False when it
// is not exactly that.
bool parse_values(std::string_view reply, std::vector<Value>& out);

// Reads a blocking socket until its peer closes it: the bytes read, and in
// `end` 0 for an EOF or the errno that ended it (ECONNRESET for a reset).
size_t read_until_closed(int fd, int& end);

// Builds a storage command with its data block.
std::string set_command(std::string_view key, std::string_view value, std::string_view verb = "set",
                        uint32_t flags = 0, std::string_view extra = "");

}  // namespace memshard::testing
