// Helpers of the fleet tests: several memshard processes in front of one
// set of real memcached servers, each with its own config file and port,
// reloaded one by one as a rollout reaches them; and a load of writers and
// readers through random instances that checks every read against the
// versions acknowledged before it was sent.
#pragma once

#include <gtest/gtest.h>

#include <atomic>
#include <cstdint>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "reload_util.h"

namespace memshard::testing::reload {

// Seconds since the epoch, now.
int64_t unix_now();

class Fleet {
 public:
  // `servers` memcached servers; instances are started by start().
  explicit Fleet(size_t servers);

  uint16_t server_port(size_t i) const { return mc_[i]->port(); }
  Memcached& server(size_t i) { return *mc_[i]; }
  size_t size() const { return ports_.size(); }
  uint16_t port(size_t instance) const { return ports_[instance]; }
  std::vector<uint16_t> ports() const { return ports_; }
  Process& process(size_t instance) { return ms_[instance]->process(); }
  std::string log(size_t instance) const;

  // Pool "main" of instance `instance` over the servers (indices), with
  // the directives ("key: value").
  std::string config(size_t instance, const std::vector<size_t>& servers,
                     const std::vector<std::string>& directives) const;
  // `instances` instances on the same config, each ready to serve.
  ::testing::AssertionResult start(size_t instances, const std::vector<size_t>& servers,
                                   const std::vector<std::string>& directives);
  // Writes the instance's config and signals it; succeeds once its
  // config_generation moved.
  ::testing::AssertionResult reload(size_t instance, const std::vector<size_t>& servers,
                                    const std::vector<std::string>& directives);
  // The instance's `stats`.
  std::map<std::string, std::string> stats(size_t instance) const;

 private:
  TempDir dir_;
  std::vector<std::unique_ptr<Memcached>> mc_;
  std::vector<uint16_t> ports_;
  std::vector<std::unique_ptr<Memshard>> ms_;
};

// Writers, each owning `keys` keys of its own and writing versions 1, 2,
// 3... of them, one write at a time, each through a random instance; and
// readers, each read of a random key through a random instance. A read
// that returns a version older than one acknowledged before it was sent is
// stale; a miss of a key with an acknowledged version is lost; anything
// but a hit or a miss is an error.
class VersionLoad {
 public:
  VersionLoad(std::vector<uint16_t> ports, size_t writers, size_t keys, size_t readers,
              uint64_t seed);
  ~VersionLoad();
  void start();
  void stop();

  uint64_t reads() const { return reads_.load(); }
  uint64_t writes() const { return writes_.load(); }
  uint64_t stale() const { return stale_.load(); }
  uint64_t lost() const { return lost_.load(); }
  uint64_t errors() const { return errors_.load(); }
  // Every key, writer by writer.
  std::vector<std::string> keys() const;
  // Per key (keys() order), the version acknowledged last.
  std::vector<uint64_t> acked() const;
  // Whether every key has had a write acknowledged since `before` (an
  // acked() taken earlier).
  bool each_written_since(const std::vector<uint64_t>& before) const;
  // The counts and the first surprises, for failure messages.
  std::string summary() const;

 private:
  void write(size_t writer, uint64_t seed);
  void read(uint64_t seed);
  void note(std::atomic<uint64_t>& count, std::string what);
  std::string key(size_t writer, size_t i) const;

  std::vector<uint16_t> ports_;
  size_t writers_, keys_, readers_;
  uint64_t seed_;
  std::vector<std::atomic<uint64_t>> acked_;  // per key: the version acknowledged last
  std::atomic<bool> stop_{false};
  std::atomic<uint64_t> reads_{0}, writes_{0}, stale_{0}, lost_{0}, errors_{0};
  mutable std::mutex examples_mu_;
  std::vector<std::string> examples_;
  std::vector<std::thread> threads_;
};

}  // namespace memshard::testing::reload
