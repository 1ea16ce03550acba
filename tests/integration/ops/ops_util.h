// Helpers for the operations tests: a strict JSON parser (for the
// twemproxy-style stats document), a Prometheus text parser, clients for
// the stats port, a memshard started with its stats port on a free port,
// and bounded waits on files and conditions.
#pragma once

#include <pthread.h>
#include <sched.h>
#include <sys/types.h>

#include <chrono>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "harness.h"

namespace memshard::testing::ops {

using namespace std::chrono_literals;

// ------------------------------------------------------------------ JSON

struct Json {
  enum class Kind { null, boolean, number, string, array, object };
  Kind kind = Kind::null;
  bool boolean = false;
  std::string number;  // the literal, as written
  std::string string;
  std::vector<Json> items;
  std::vector<std::pair<std::string, Json>> members;  // in document order

  bool is_object() const { return kind == Kind::object; }
  // The member named `key` of an object, or nullptr.
  const Json* get(std::string_view key) const;
  // A non-negative integer number; nullopt for anything else.
  std::optional<uint64_t> u64() const;
};

// Strict RFC 8259 parsing of one document (whitespace around it allowed).
// An object with the same key twice is an error too: a reader keeps only
// one of them. On failure returns nullopt and sets `error` (with the byte
// offset).
std::optional<Json> parse_json(std::string_view text, std::string* error);

// Parses the text with python3's json module as a second opinion (with
// duplicate keys refused). nullopt when python3 is missing; else "" when
// it parsed, or python's complaint.
std::optional<std::string> python_json_check(const std::string& text);

// ------------------------------------------------------------- Prometheus

struct Sample {
  std::string name;
  std::map<std::string, std::string> labels;
  double value = 0;
};

// Parses the text exposition format's sample lines (comments skipped).
// Returns false (with `error`) on a line it cannot read.
bool parse_prometheus(std::string_view text, std::vector<Sample>& out, std::string* error);

// The value of the only sample named `name` whose labels include all of
// `match`; nullopt when there is none or more than one.
std::optional<double> metric(const std::vector<Sample>& samples, const std::string& name,
                             const std::map<std::string, std::string>& match = {});

// Every sample named `name` whose labels include all of `match`.
std::vector<Sample> samples_of(const std::vector<Sample>& samples, const std::string& name,
                               const std::map<std::string, std::string>& match = {});

// ------------------------------------------------------------ stats port

// Connects to 127.0.0.1:port, sends `request` (nothing when empty), half
// closes when asked, and returns everything received until the server
// closes (or `limit` runs out; then `closed` says so).
struct StatsExchange {
  std::string bytes;
  bool closed = false;
};
StatsExchange stats_exchange(uint16_t port, std::string_view request, bool half_close,
                             std::chrono::milliseconds limit = 5s);

struct HttpResponse {
  bool ok = false;  // a status line, headers and a complete body arrived
  int status = 0;
  std::map<std::string, std::string> headers;  // names lower-cased
  std::string body;
  std::string raw;
};
HttpResponse http_get(uint16_t port, const std::string& path);

// The JSON document the way twemproxy's readers get it (connect, send
// nothing, half-close). nullopt with `error` on failure.
std::optional<Json> fetch_stats_json(uint16_t port, std::string* error = nullptr);

// /metrics parsed; false with `error` on failure.
bool fetch_metrics(uint16_t port, std::vector<Sample>& out, std::string* body = nullptr,
                   std::string* error = nullptr);

// `stats servers` over the proxy port: server -> field -> value.
std::map<std::string, std::map<std::string, std::string>> stats_servers(uint16_t proxy_port,
                                                                        const std::string& pool);

// ------------------------------------------------------------ processes

// A memshard on a config written to dir/memshard.yml, with its stats port
// on a free port (never the shared default 22222).
struct Proxy {
  uint16_t stats_port = 0;
  std::string config_path;
  std::unique_ptr<Memshard> memshard;

  Process& process() { return memshard->process(); }
};
// Starts memshard with `-s <free port> -a 127.0.0.1` plus `extra`, and
// waits until `listen_port` and the stats port accept connections and the
// wait_listening probe's connection is closed again. `launcher` runs it
// (Memshard's launcher).
std::unique_ptr<Proxy> start_proxy(const TempDir& dir, const std::string& config_yaml,
                                   uint16_t listen_port, std::vector<std::string> extra = {},
                                   const std::string& stderr_file = "",
                                   std::vector<std::string> launcher = {});

// ------------------------------------------------------------------ misc

// Polls `pred` every 10 ms until it holds or `limit` passes.
bool wait_until(const std::function<bool()>& pred, std::chrono::milliseconds limit = 5s);

std::string read_file(const std::string& path);
bool file_exists(const std::string& path);
std::vector<std::string> lines_of(std::string_view text);

// Keys that the config's ring places on each server ("host:port"): at
// least `per_server` keys for every server in `servers`, named
// prefix + number. Empty map (with `error`) when ring lookup fails.
std::map<std::string, std::vector<std::string>> keys_by_server(
    const std::string& config_path, const std::vector<std::string>& servers,
    const std::string& prefix, size_t per_server, const std::string& pool = "",
    std::string* error = nullptr);

// True when the process `pid` exists and is not a zombie.
bool pid_alive(pid_t pid);

// Sends SIGSTOP to `pid` and waits until every thread of it is stopped
// (SIGSTOP takes effect asynchronously). False on timeout.
bool stop_process(pid_t pid, std::chrono::milliseconds limit = 5s);

// The TCP ports the process `pid` listens on (its sockets in LISTEN state,
// from /proc), sorted.
std::vector<uint16_t> listening_tcp_ports(pid_t pid);

}  // namespace memshard::testing::ops

namespace memshard::testing::ops {

// ------------------------------------------------------- counted traffic

// What one server of a pool must have counted after run_traffic.
struct ServerExpect {
  uint64_t requests = 0;
  uint64_t request_bytes = 0;
  uint64_t response_bytes = 0;
  uint64_t stored = 0;
  uint64_t hits = 0;
  uint64_t misses = 0;
};

struct Traffic {
  std::map<std::string, ServerExpect> servers;  // by "host:port"
  uint64_t requests = 0;                        // client requests
  uint64_t fragments = 0;                       // backend operations
  // Three client connections, left open: #0 did the sets, #1 the single
  // gets, #2 one multi-get over every server.
  std::vector<std::unique_ptr<RawClient>> clients;
};

// Known traffic through a pool listening on `port`. `keys` holds at least
// four keys per server ("host:port" -> keys the ring puts there): per
// server, keys 0 and 1 are set, then key 0 (hit) and key 2 (miss) are got
// one by one, then one multi-get asks for keys 0-3 of every server
// (interleaved). Counts exact per-server bytes from memcached's replies.
// Returns false with `failure` when a reply is not the expected one.
bool run_traffic(uint16_t port, const std::map<std::string, std::vector<std::string>>& keys,
                 Traffic& out, std::string* failure);

// The CPUs this process may run on, ascending.
std::vector<int> allowed_cpus();

// Runs this thread on `cpu` alone while in scope: on loopback a
// connection's packets arrive on the sending thread's CPU (its handshake
// too), which is what memshard reads back (SO_INCOMING_CPU) to pick a
// connection's worker.
class PinnedTo {
 public:
  explicit PinnedTo(int cpu);
  ~PinnedTo();
  PinnedTo(const PinnedTo&) = delete;
  PinnedTo& operator=(const PinnedTo&) = delete;
  bool ok() const { return ok_; }

 private:
  cpu_set_t saved_;
  bool ok_ = false;
};

}  // namespace memshard::testing::ops
