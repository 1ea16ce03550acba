// Helpers shared by the reload tests: config text, a memcached text-protocol
// client that reports every surprise instead of throwing, the proxy's own
// `stats`, bounded waits on them, and the ring a config designates
// (computed in-process with memshard_conf + memshard_ketama).
#pragma once

#include <gtest/gtest.h>
#include <sys/types.h>

#include <chrono>
#include <cstdint>
#include <functional>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "conf/config.h"
#include "harness.h"
#include "ketama/ring.h"

namespace memshard::testing::reload {

using namespace std::chrono_literals;

// ------------------------------------------------------------ config text

struct ServerRef {
  uint16_t port;
  uint32_t weight = 1;
};

struct PoolDef {
  std::string name = "main";
  std::string listen;  // "127.0.0.1:port"
  std::vector<ServerRef> servers;
  std::string hash = "fnv1a_64";
  std::string distribution = "ketama";
  // Extra directives, "key: value", written before servers.
  std::vector<std::string> directives;
};

std::string listen_on(uint16_t port);
// nutcracker.yml text for the pools, in order. Line 1 is the first pool's
// name, line 2 its listen, then hash and distribution, then the directives,
// then "servers:" and one line per server.
std::string yaml(const std::vector<PoolDef>& pools);
std::string yaml(const PoolDef& pool);

// --------------------------------------------------------------- client

// One reply to a retrieval command: the VALUE blocks in order.
struct Hit {
  std::string key;
  std::string data;
};

// A blocking memcached text-protocol client with bounded waits. Every
// failure (refused, closed, timed out, unexpected bytes) makes the call
// return false and leaves a description in error(); the connection is then
// no longer usable.
class Conn {
 public:
  explicit Conn(uint16_t port, std::chrono::milliseconds limit = 5s);
  ~Conn();
  Conn(const Conn&) = delete;
  Conn& operator=(const Conn&) = delete;

  bool ok() const { return fd_ >= 0 && error_.empty(); }
  const std::string& error() const { return error_; }
  int fd() const { return fd_; }

  bool send(std::string_view bytes);
  // One line without its "\r\n".
  bool read_line(std::string& line);
  // "set key 0 0 n" + data; true only on STORED.
  bool set(std::string_view key, std::string_view value);
  // get/multi-get; the hits in the order the server sent them. Anything
  // but VALUE blocks followed by END is an error.
  bool get(const std::vector<std::string>& keys, std::vector<Hit>& hits);
  // Reads a retrieval reply (after the request was sent).
  bool read_values(std::vector<Hit>& hits);
  // `stats` as a map.
  bool stats(std::map<std::string, std::string>& out);
  // True when the peer closed the connection within `limit` (EOF or
  // reset), with nothing else received.
  bool closed_by_peer(std::chrono::milliseconds limit);
  // True when nothing arrives within `limit` (what does arrive is kept).
  bool idle_for(std::chrono::milliseconds limit);
  // Bytes received and not yet consumed.
  size_t unread() const { return buf_.size() - pos_; }
  // What was received and not yet consumed, and the error if any, for
  // failure messages.
  std::string describe() const;
  void close();

 private:
  bool fill();
  bool fail(std::string why);

  int fd_ = -1;
  std::chrono::milliseconds limit_;
  std::string buf_;
  size_t pos_ = 0;
  std::string error_;
};

// True when a TCP connect to 127.0.0.1:port succeeds right now.
bool accepts(uint16_t port);

// The i-th key of a family: the number first. nutcracker's fnv1a_64 ring
// (the default hash here, as in most nutcracker.yml files) puts keys that
// differ only in their last characters on nearby points, so "tag:0" ..
// "tag:99" would all land on one or two servers; "0:tag" .. "99:tag" spread.
std::string key_of(std::string_view tag, uint64_t i);

// A value that names its key and counter and has a length derived from
// both, so a value given for the wrong key or cut short is recognized.
std::string value_for(std::string_view key, uint64_t counter);

// ------------------------------------------------------------ the proxy

// memshard's arguments after "-c file": `extra`, and "-s 0" (no stats port:
// the default 22222 is shared by every memshard on the machine, and its
// sockets would blur the descriptor counts).
std::vector<std::string> memshard_args(std::vector<std::string> extra);

// The proxy's `stats` over a fresh connection; empty on failure.
std::map<std::string, std::string> proxy_stats(uint16_t port);
uint64_t stat_of(const std::map<std::string, std::string>& stats, const std::string& name);

// Waits until `stats` answers through the proxy: its main loop runs, so its
// signal handlers are installed (a SIGHUP before that would kill it).
bool wait_ready(uint16_t port, std::chrono::milliseconds limit = 10s);

// Waits until the stat `name` satisfies `ok`; returns the last value seen
// (nullopt when `stats` never answered or time ran out before `ok`).
std::optional<uint64_t> wait_stat(uint16_t port, const std::string& name,
                                  const std::function<bool(uint64_t)>& ok,
                                  std::chrono::milliseconds limit = 10s);

// Waits until config_generation stays unchanged for `quiet`; the value.
std::optional<uint64_t> wait_generation_settled(uint16_t port, std::chrono::milliseconds quiet,
                                                std::chrono::milliseconds limit = 15s);

// The state letter of /proc/<pid>/stat ('R', 'S', 'T' ...); '?' when gone.
char process_state(pid_t pid);
// SIGSTOP, then waits (bounded) until the process is really stopped: kill()
// returns before the signal takes effect. False when it never stops.
bool stop_process(pid_t pid, std::chrono::milliseconds limit = 5s);

// Entries in /proc/<pid>/fd; -1 when unreadable.
int count_fds(pid_t pid);
// The count once it stays the same for `quiet` (bounded by `limit`).
int settled_fds(pid_t pid, std::chrono::milliseconds quiet = 500ms,
                std::chrono::milliseconds limit = 5s);
// Established TCP connections that process `pid` holds to 127.0.0.1:`port`.
int connections_to(pid_t pid, uint16_t port);
// Opens enough connections at once for each of `threads` workers to get
// some, whatever CPUs they come from (proxy/runtime/worker_picker.h), sends each a
// multi-get over 200 keys (which span the servers), closes them. Succeeds
// once memshard (`pid`) holds at least `threads` connections to each of
// `servers`, so every worker is connected to every server: a worker still
// counting a client that closed just before can draw every warm-up
// connection away from the others, so it retries, with more connections.
::testing::AssertionResult warm_every_worker(uint16_t port, pid_t pid,
                                             const std::vector<uint16_t>& servers, int threads = 2);

// Whole file, empty when missing.
std::string read_file(const std::string& path);

// ----------------------------------------------------------------- rings

// Where a config (given as text) places keys: the memcached port of each.
class Placement {
 public:
  explicit Placement(const std::string& config_text, const std::string& pool = "main");
  uint16_t port_of(std::string_view key) const;
  const ketama::Ring& ring() const { return ring_; }
  const std::vector<uint16_t>& ports() const { return ports_; }

 private:
  std::vector<uint16_t> ports_;  // before ring_: the ring's builder fills it
  ketama::Ring ring_;
};

// A binary-protocol get (opcode 0x00) through `c`: the value, or nullopt
// for a miss. Any key a binary client can send (spaces, control bytes).
std::optional<std::string> binary_get(RawClient& c, const std::string& key);
// A binary set (opcode 0x01, flags 0, no expiry) through `c`: its status
// (0 stored).
uint16_t binary_set(RawClient& c, const std::string& key, const std::string& value);
// A binary delete (opcode 0x04): its status (0 deleted, 1 not found).
uint16_t binary_delete(RawClient& c, const std::string& key);
// An mg straight to a memcached server, the key base64 with `b`: the value,
// or nullopt on a miss. For keys a classic get cannot name.
std::optional<std::string> direct_meta_get(uint16_t port, const std::string& key);

// A GET straight to a memcached server: the value, or nullopt on a miss.
// Throws on a protocol failure.
std::optional<std::string> direct_get(uint16_t port, const std::string& key);

// Sets `n` fresh keys key_of(prefix, i) through the proxy, then asks every
// server of `fleet` directly: each key must be on exactly the server the
// config designates, with its value, and on no other.
::testing::AssertionResult keys_land_per_config(uint16_t proxy_port, const std::string& config_text,
                                                const std::vector<uint16_t>& fleet,
                                                const std::string& prefix, int n = 60,
                                                const std::string& pool = "main");

}  // namespace memshard::testing::reload
