// Helpers for the replicated-pool tests: memshard with `replicas: R` in
// front of real memcached servers, where a config puts each key's copies
// (its preference list, from ketama::Ring in-process), what each server
// holds (read directly, not through the proxy), a client for any text or
// meta request, and a bounded background load that checks every reply.
#pragma once

#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <random>
#include <string>
#include <string_view>
#include <thread>
#include <utility>
#include <vector>

#include "harness.h"
#include "ops_util.h"
#include "reload_util.h"

namespace memshard::testing::replicas {

using namespace std::chrono_literals;
using Clock = std::chrono::steady_clock;

// ------------------------------------------------------------------ keys

// Keys with entropy: "<tag>:<n>:<8 random letters>", from a generator
// seeded once per process (the seed is printed, so a run can be repeated
// with MEMSHARD_REPLICA_SEED=<seed>). fnv1a_64 puts keys that differ only
// in a short tail on nearby points; the random part spreads them.
std::string random_key(std::string_view tag, uint64_t n);
std::vector<std::string> random_keys(std::string_view tag, size_t count);
// A value that names its key, so a value given for the wrong key shows.
std::string value_of(std::string_view key, std::string_view salt = "v");

// --------------------------------------------------------------- configs

// One pool "main" on 127.0.0.1:listen over `servers` (weight 1 each), with
// `directives` ("key: value") before the servers.
std::string pool_config(uint16_t listen, const std::vector<uint16_t>& servers,
                        const std::vector<std::string>& directives,
                        const std::vector<uint32_t>& weights = {});

// Where a config puts keys: the ports of a key's preference list, from the
// same parsing and ring the proxy uses (conf + ketama::Ring).
class Copies {
 public:
  Copies(const std::string& config_text, size_t replicas);
  // The first `replicas` distinct servers clockwise from the key's point.
  std::vector<uint16_t> of(std::string_view key) const;
  // The unreplicated ring's answer (Ring::lookup).
  uint16_t primary(std::string_view key) const;
  const std::vector<uint16_t>& ports() const { return where_.ports(); }

 private:
  reload::Placement where_;
  size_t replicas_;
};

// ---------------------------------------------------------------- client

// A blocking client for text and meta requests with bounded waits. call()
// returns one whole reply: a line, VALUE blocks up to their END, or a meta
// "VA <n> ..." line with its data. On any failure (timeout, close) the
// reply is empty and error() says why; the connection is then unusable.
class Client {
 public:
  explicit Client(uint16_t port, std::chrono::milliseconds limit = 5s);
  ~Client();
  Client(const Client&) = delete;
  Client& operator=(const Client&) = delete;

  bool ok() const { return fd_ >= 0 && error_.empty(); }
  const std::string& error() const { return error_; }

  bool send(std::string_view bytes);
  std::string read_reply();
  std::string call(std::string_view request);
  // Whatever arrives within `limit` (for requests that get no reply).
  std::string read_for(std::chrono::milliseconds limit);

  // Conveniences: "set key flags exptime n" (the reply line), get (nullopt
  // on a miss; throws on anything but a retrieval reply).
  std::string set(std::string_view key, std::string_view value, uint32_t flags = 0,
                  int64_t exptime = 0, std::string_view verb = "set",
                  std::string_view extra = "");
  std::optional<std::string> get(std::string_view key);

 private:
  bool fill(Clock::time_point deadline);
  size_t complete() const;
  int fd_ = -1;
  std::chrono::milliseconds limit_;
  std::string buf_;
  std::string error_;
};

// A value held by a server, read with `mg <key> v f t`: data, flags and
// remaining TTL (-1: none).
struct Held {
  std::string data;
  uint32_t flags = 0;
  int64_t ttl = -1;
};
// What server `port` holds for `key` (directly, not through the proxy).
// Throws on a protocol failure.
std::optional<Held> held_on(uint16_t port, std::string_view key);
// The values a server holds for `keys` (multi-gets of at most 100 keys),
// by key; keys it misses are absent. Throws on a protocol failure.
std::map<std::string, std::string> values_on(uint16_t port, const std::vector<std::string>& keys);
// Writes straight to one server; true on STORED.
bool set_on(uint16_t port, std::string_view key, std::string_view value, uint32_t flags = 0,
            int64_t exptime = 0);

// ---------------------------------------------------------------- proxy

// memshard on a config in its own directory, its stats port on a free
// port, its log kept (printed when the test failed). reload() rewrites the
// config and sends SIGHUP, then waits for the new generation.
class Proxy {
 public:
  // `config`: made from the listen port chosen here.
  Proxy(const std::function<std::string(uint16_t listen)>& config,
        std::vector<std::string> extra = {"--threads", "2"});
  ~Proxy();
  uint16_t port() const { return port_; }
  uint16_t stats_port() const { return proxy_->stats_port; }
  Process& process() { return proxy_->process(); }
  const std::string& config_text() const { return text_; }
  ::testing::AssertionResult reload(const std::string& text);
  std::string log_tail(size_t bytes = 6000) const;

 private:
  TempDir dir_;
  uint16_t port_;
  std::string text_, log_;
  std::unique_ptr<ops::Proxy> proxy_;
};

// A pool counter from the JSON stats ("main" pool), or nullopt.
std::optional<uint64_t> json_pool_counter(uint16_t stats_port, const std::string& name);
// A pool sample of /metrics ({pool="main"}), or nullopt.
std::optional<double> metric_pool_value(uint16_t stats_port, const std::string& name);

// Polls `pred` every 20 ms until it holds or `limit` passes.
bool eventually(const std::function<bool()>& pred, std::chrono::milliseconds limit = 10s);

// ----------------------------------------------------------------- load

// Background traffic through the proxy, bounded in operations and time:
// `threads` connections, each looping over: a get of one of `existing`
// (its value checked), a set of a fresh key (recorded when STORED), now
// and then a multi-get of several `existing` keys (every one must hit, in
// order), and a get of the key it just set. A short pause every few
// operations keeps it from taking the machine. Every unexpected reply is
// an error (the first ones kept, with the time they happened).
class Load {
 public:
  Load(uint16_t port, std::vector<std::pair<std::string, std::string>> existing, std::string tag,
       int threads = 2, uint64_t max_ops_per_thread = 200000,
       std::chrono::milliseconds max_time = 60s);
  ~Load();
  // Stops the threads (bounded by their own per-request limits) and joins.
  void stop();
  uint64_t ops() const { return ops_.load(); }
  uint64_t errors() const { return errors_.load(); }
  std::string first_errors() const;
  // Keys set and answered STORED, with their values.
  std::vector<std::pair<std::string, std::string>> written() const;

 private:
  void run(int index);
  void error(const std::string& what);
  uint16_t port_;
  std::vector<std::pair<std::string, std::string>> existing_;
  std::string tag_;
  uint64_t max_ops_;
  Clock::time_point start_, deadline_;
  std::atomic<bool> stop_{false};
  std::atomic<uint64_t> ops_{0}, errors_{0};
  mutable std::mutex mu_;
  std::vector<std::string> first_errors_;
  std::vector<std::pair<std::string, std::string>> written_;
  std::vector<std::thread> threads_;
};

}  // namespace memshard::testing::replicas
