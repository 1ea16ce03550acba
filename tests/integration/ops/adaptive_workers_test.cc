// Workers that follow the load (issue 25; proxy/runtime/worker_governor.h),
// seen from outside: memshard with --threads 2 starts with one worker
// taking connections; a load from two client threads, one on each of two
// CPUs, saturates it, so the governor tries a second worker and the
// connections whose packets arrive on the second CPU move to it (between
// two bursts, when they owe nothing); after the load stops the count comes
// back to one. Throughout, every connection checks every reply of every
// burst, in order and byte for byte (text: pipelined sets, gets and
// multi-gets; binary: hand-written SET and GETK frames with opaques), so a
// reply lost, duplicated or reordered by a move is a failure. Throughput is
// never asserted: only that the count grew, connections moved, the count
// shrank, no reply went wrong, and moved_connections counted the moves
// (those of parked connections that wake on a worker no longer active too).
#include <gtest/gtest.h>
#include <pthread.h>
#include <sched.h>
#include <sys/wait.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <ctime>
#include <exception>
#include <iostream>
#include <memory>
#include <mutex>
#include <optional>
#include <regex>
#include <sstream>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "ops_util.h"

namespace memshard::testing::ops {
namespace {

using Clock = std::chrono::steady_clock;

// Every wrong reply, from every thread: counted, the first few kept.
class Failures {
 public:
  void add(const std::string& what) {
    std::lock_guard<std::mutex> lock(mu_);
    ++count_;
    if (examples_.size() < 8) examples_.push_back(what);
  }
  uint64_t count() const {
    std::lock_guard<std::mutex> lock(mu_);
    return count_;
  }
  std::string report() const {
    std::lock_guard<std::mutex> lock(mu_);
    std::string out = std::to_string(count_) + " failure(s); the first:\n";
    for (const auto& e : examples_) out += "  - " + e + "\n";
    return out;
  }

 private:
  mutable std::mutex mu_;
  uint64_t count_ = 0;
  std::vector<std::string> examples_;
};

// One connection's pipelined bursts: send() writes a whole burst in one
// write, check() reads exactly its replies and compares them with what the
// connection itself stored. Between the two calls of consecutive bursts it
// owes nothing, which is when memshard may move it.
class Conn {
 public:
  Conn(std::string name, uint16_t port) : name_(std::move(name)), client_(port) {}
  virtual ~Conn() = default;
  Conn(const Conn&) = delete;
  Conn& operator=(const Conn&) = delete;

  // False once a burst went wrong: the stream is out of step, so the
  // connection takes no further part.
  bool usable() const { return !broken_; }
  uint64_t bursts() const { return bursts_; }
  const std::string& name() const { return name_; }

  void send_burst(Failures& f) {
    if (broken_) return;
    build(bursts_);
    try {
      client_.send(request_);
    } catch (const std::exception& e) {
      fail(f, std::string("send: ") + e.what());
    }
  }
  // Returns false when the replies did not arrive in time.
  bool check_burst(Failures& f, std::chrono::milliseconds limit) {
    if (broken_) return true;
    std::string got = client_.read_exact(expected_bytes_, limit);
    if (got.size() < expected_bytes_) {
      fail(f, "burst " + std::to_string(bursts_) + ": " + std::to_string(got.size()) + " of " +
                  std::to_string(expected_bytes_) +
                  " reply bytes within the time (missing replies); got: " + printable(got, 300));
      return false;
    }
    std::string why;
    if (!compare(got, why)) {
      fail(f, "burst " + std::to_string(bursts_) + ": " + why);
      return true;
    }
    ++bursts_;
    return true;
  }
  // Nothing arrives that no request asked for.
  void check_quiet(Failures& f) {
    if (broken_) return;
    std::string extra = client_.read_for(std::chrono::milliseconds(100));
    if (!extra.empty()) fail(f, "extra bytes after the last burst: " + printable(extra, 300));
  }

 protected:
  // Fills request_ and what compare() needs for burst number `n`.
  virtual void build(uint64_t n) = 0;
  virtual bool compare(const std::string& got, std::string& why) = 0;

  void fail(Failures& f, const std::string& what) {
    broken_ = true;
    f.add(name_ + ": " + what);
  }

  std::string name_;
  RawClient client_;
  std::string request_;
  size_t expected_bytes_ = 0;
  uint64_t bursts_ = 0;
  bool broken_ = false;
};

// The value stored for a key at burst `n`, request `j`: unique per
// connection, burst and request, of varying length.
std::string value_for(const std::string& conn, uint64_t n, size_t j) {
  std::string v = conn + "." + std::to_string(n) + "." + std::to_string(j) + ".";
  v.append((n * 13 + j * 7 + conn.size()) % 97, static_cast<char>('a' + (n + j) % 26));
  return v;
}

constexpr size_t kBurst = 16;

// Text protocol: sets of its own 10 keys, gets of them and multi-gets of
// all ten. Replies are known byte for byte.
class TextConn final : public Conn {
 public:
  TextConn(const std::string& name, uint16_t port) : Conn(name, port) {
    for (int i = 0; i < 10; ++i) keys_.push_back(name + "_k" + std::to_string(i));
    stored_.resize(keys_.size());
  }

 private:
  struct Stored {
    uint32_t flags = 0;
    std::string value;
  };

  std::string value_block(size_t k) const {
    const Stored& s = stored_[k];
    return "VALUE " + keys_[k] + " " + std::to_string(s.flags) + " " +
           std::to_string(s.value.size()) + "\r\n" + s.value + "\r\n";
  }
  void set(size_t k, uint64_t n, size_t j) {
    stored_[k] = {static_cast<uint32_t>((n * kBurst + j) % 65536), value_for(name_, n, j)};
    request_ += set_command(keys_[k], stored_[k].value, "set", stored_[k].flags);
    expect("set " + keys_[k], "STORED\r\n");
  }
  void get(size_t k) {
    request_ += "get " + keys_[k] + "\r\n";
    expect("get " + keys_[k], value_block(k) + "END\r\n");
  }
  void multi_get(size_t first, size_t count) {
    std::string line = "get", reply;
    for (size_t i = 0; i < count; ++i) {
      const size_t k = (first + i) % keys_.size();
      line += " " + keys_[k];
      reply += value_block(k);
    }
    request_ += line + "\r\n";
    expect(line, reply + "END\r\n");
  }
  void expect(std::string what, std::string reply) {
    expected_bytes_ += reply.size();
    expected_.emplace_back(std::move(what), std::move(reply));
  }

  void build(uint64_t n) override {
    request_.clear();
    expected_.clear();
    expected_bytes_ = 0;
    const size_t nk = keys_.size();
    if (n == 0) {
      // Every key stored first, so that every get after is a hit.
      for (size_t k = 0; k < nk; ++k) set(k, n, k);
      get(0);
      get(7);
      multi_get(0, nk);
      get(3);
      multi_get(5, 4);
      get(9);
      return;
    }
    for (size_t j = 0; j < kBurst; ++j) {
      const size_t k = (n * 5 + j) % nk;
      switch (j % 4) {
        case 0:
          set(k, n, j);
          break;
        case 1:  // the key just set
          get((n * 5 + j - 1) % nk);
          break;
        case 2:
          multi_get((n + j) % nk, nk);
          break;
        default:
          get((n * 3 + j) % nk);
          break;
      }
    }
  }

  bool compare(const std::string& got, std::string& why) override {
    size_t at = 0;
    for (size_t i = 0; i < expected_.size(); ++i) {
      const std::string& want = expected_[i].second;
      if (got.compare(at, want.size(), want) != 0) {
        why = "reply " + std::to_string(i + 1) + " of " + std::to_string(expected_.size()) +
              " (to \"" + printable(expected_[i].first, 80) + "\") is wrong: expected \"" +
              printable(want, 200) + "\", got \"" +
              printable(got.substr(at, want.size() + 40), 240) + "\"";
        return false;
      }
      at += want.size();
    }
    if (got.size() != at) {
      why = "extra bytes after the burst's replies: " + printable(got.substr(at), 200);
      return false;
    }
    return true;
  }

  std::vector<std::string> keys_;
  std::vector<Stored> stored_;
  std::vector<std::pair<std::string, std::string>> expected_;  // request, reply
};

// Binary protocol, frames written by hand: SET (extras: flags, exptime)
// and GETK, each with its own opaque.
class BinaryConn final : public Conn {
 public:
  BinaryConn(const std::string& name, uint16_t port) : Conn(name, port) {
    for (int i = 0; i < 8; ++i) keys_.push_back(name + "_b" + std::to_string(i));
    stored_.resize(keys_.size());
  }

 private:
  static constexpr uint8_t kSet = 0x01, kGetK = 0x0c;

  struct Stored {
    uint32_t flags = 0;
    std::string value;
  };
  struct Expected {
    uint8_t opcode;
    uint32_t opaque;
    std::string key;  // GETK only
    uint32_t flags = 0;
    std::string value;
  };

  static void put16(std::string& s, uint16_t v) {
    s.push_back(static_cast<char>(v >> 8));
    s.push_back(static_cast<char>(v & 0xff));
  }
  static void put32(std::string& s, uint32_t v) {
    for (int shift = 24; shift >= 0; shift -= 8)
      s.push_back(static_cast<char>((v >> shift) & 0xff));
  }
  static uint64_t be(const std::string& s, size_t at, size_t n) {
    uint64_t v = 0;
    for (size_t i = 0; i < n; ++i) v = (v << 8) | static_cast<uint8_t>(s[at + i]);
    return v;
  }
  static std::string frame(uint8_t opcode, const std::string& key, const std::string& extras,
                           const std::string& value, uint32_t opaque) {
    std::string f;
    f.push_back(static_cast<char>(0x80));
    f.push_back(static_cast<char>(opcode));
    put16(f, static_cast<uint16_t>(key.size()));
    f.push_back(static_cast<char>(extras.size()));
    f.push_back(0);  // data type
    put16(f, 0);     // vbucket
    put32(f, static_cast<uint32_t>(extras.size() + key.size() + value.size()));
    put32(f, opaque);
    put32(f, 0);  // cas
    put32(f, 0);
    return f + extras + key + value;
  }

  void set(size_t k, uint64_t n, size_t j) {
    const uint32_t opaque = static_cast<uint32_t>(n * kBurst + j + 1);
    stored_[k] = {opaque * 3 + 1, value_for(name_, n, j)};
    std::string extras;
    put32(extras, stored_[k].flags);
    put32(extras, 0);  // exptime
    request_ += frame(kSet, keys_[k], extras, stored_[k].value, opaque);
    expected_.push_back({kSet, opaque, "", 0, ""});
    expected_bytes_ += 24;
  }
  void getk(size_t k, uint64_t n, size_t j) {
    const uint32_t opaque = static_cast<uint32_t>(n * kBurst + j + 1);
    request_ += frame(kGetK, keys_[k], "", "", opaque);
    expected_.push_back({kGetK, opaque, keys_[k], stored_[k].flags, stored_[k].value});
    expected_bytes_ += 24 + 4 + keys_[k].size() + stored_[k].value.size();
  }

  void build(uint64_t n) override {
    request_.clear();
    expected_.clear();
    expected_bytes_ = 0;
    const size_t nk = keys_.size();
    if (n == 0) {
      for (size_t k = 0; k < nk; ++k) set(k, n, k);
      for (size_t k = 0; k < nk; ++k) getk((k * 3) % nk, n, nk + k);
      return;
    }
    for (size_t j = 0; j < kBurst; ++j) {
      const size_t k = (n * 3 + j) % nk;
      if (j % 4 == 0) {
        set(k, n, j);
      } else if (j % 4 == 1) {
        getk((n * 3 + j - 1) % nk, n, j);  // the key just set
      } else {
        getk((n + j * 5) % nk, n, j);
      }
    }
  }

  bool compare(const std::string& got, std::string& why) override {
    size_t at = 0;
    for (size_t i = 0; i < expected_.size(); ++i) {
      const Expected& e = expected_[i];
      const std::string where =
          "frame " + std::to_string(i + 1) + " of " + std::to_string(expected_.size()) +
          " (opcode " + std::to_string(e.opcode) + ", opaque " + std::to_string(e.opaque) + "): ";
      if (got.size() < at + 24) {
        why = where + "missing";
        return false;
      }
      const auto magic = static_cast<uint8_t>(got[at]);
      const auto opcode = static_cast<uint8_t>(got[at + 1]);
      const uint64_t key_len = be(got, at + 2, 2), extras_len = static_cast<uint8_t>(got[at + 4]);
      const uint64_t status = be(got, at + 6, 2), body = be(got, at + 8, 4);
      const uint64_t opaque = be(got, at + 12, 4);
      std::ostringstream seen;
      seen << "magic " << int(magic) << " opcode " << int(opcode) << " status " << status
           << " opaque " << opaque << " key length " << key_len << " extras " << extras_len
           << " body " << body;
      if (magic != 0x81 || opcode != e.opcode || status != 0 || opaque != e.opaque) {
        why = where + "header is " + seen.str();
        return false;
      }
      const uint64_t want_extras = e.opcode == kGetK ? 4 : 0;
      if (key_len != e.key.size() || extras_len != want_extras ||
          body != want_extras + e.key.size() + e.value.size() || got.size() < at + 24 + body) {
        why = where + "expected key " + e.key + " and " + std::to_string(e.value.size()) +
              " value bytes; header is " + seen.str();
        return false;
      }
      const size_t p = at + 24;
      const uint64_t flags = want_extras ? be(got, p, 4) : 0;
      const std::string key = got.substr(p + want_extras, key_len);
      const std::string value = got.substr(p + want_extras + key_len, e.value.size());
      if (flags != e.flags || key != e.key || value != e.value) {
        why = where + "expected " + e.key + " flags " + std::to_string(e.flags) + " value \"" +
              printable(e.value, 120) + "\", got " + printable(key, 80) + " flags " +
              std::to_string(flags) + " value \"" + printable(value, 120) + "\"";
        return false;
      }
      at += 24 + body;
    }
    if (got.size() != at) {
      why = "extra bytes after the burst's frames: " + printable(got.substr(at), 200);
      return false;
    }
    return true;
  }

  std::vector<std::string> keys_;
  std::vector<Stored> stored_;
  std::vector<Expected> expected_;
};

// One client thread, pinned to one CPU, with its connections.
struct Load {
  int cpu = 0;
  std::vector<std::unique_ptr<Conn>> conns;
  std::atomic<uint64_t> rounds{0};
  bool pinned = false;
  std::string error;  // setting up failed
};

constexpr int kTextPerThread = 8;
constexpr int kBinaryPerThread = 1;
constexpr auto kReplyLimit = std::chrono::milliseconds(8000);

// Every connection keeps one burst in flight: as soon as a burst's replies
// are checked, the next burst goes out on that connection (so the worker
// always has work), and in that instant it owes nothing. `rounds` counts
// passes over the connections. Stops (with nothing in flight) once `stop`
// is set, after `max_rounds`, or when replies do not come in time.
void run_load(Load& load, Failures& f, const std::atomic<bool>& stop, uint64_t max_rounds) {
  bool late = false;
  for (auto& c : load.conns) c->send_burst(f);
  for (uint64_t r = 0; r < max_rounds; ++r) {
    const bool last = r + 1 == max_rounds || late || stop.load(std::memory_order_relaxed);
    for (auto& c : load.conns) {
      // Once one connection waited in vain, the rest are not waited for long.
      if (!c->check_burst(f, late ? std::chrono::milliseconds(500) : kReplyLimit)) late = true;
      if (!last) c->send_burst(f);
    }
    load.rounds.fetch_add(1, std::memory_order_relaxed);
    if (last) return;
  }
}

struct Snapshot {
  double at = 0;  // seconds since the load began
  uint64_t active = 0, moved = 0, curr = 0;
};

class AdaptiveWorkers : public ::testing::Test {
 protected:
  void SetUp() override {
    cpus_ = allowed_cpus();
    if (cpus_.size() < 2) GTEST_SKIP() << "needs two CPUs to run on";
    fleet_ = std::make_unique<Fleet>(2);
    port_ = free_port();
    PoolSpec pool{"alpha",
                  "127.0.0.1:" + std::to_string(port_),
                  {},
                  {(*fleet_)[0].address() + ":1", (*fleet_)[1].address() + ":1"}};
    log_ = dir_.path() + "/memshard.log";
    // memshard inherits this process's CPUs: its worker k stands for the k-th.
    proxy_ = start_proxy(dir_, config_yaml({pool}), port_, {"--threads", "2", "-v", "6"}, log_);
  }

  // Over the stats port (JSON), so that polling adds no requests to what
  // the governor measures.
  std::optional<Snapshot> snapshot(Clock::time_point since) {
    std::string error;
    std::optional<Json> j = fetch_stats_json(proxy_->stats_port, &error);
    if (!j) return std::nullopt;
    Snapshot s;
    s.at = std::chrono::duration<double>(Clock::now() - since).count();
    auto field = [&](const char* name) {
      const Json* v = j->get(name);
      return v != nullptr ? v->u64().value_or(~uint64_t{0}) : ~uint64_t{0};
    };
    s.active = field("active_threads");
    s.moved = field("moved_connections");
    s.curr = field("curr_connections");
    return s;
  }

  // The text `stats` over the proxy port.
  std::string text_stats() {
    RawClient c(port_);
    return c.roundtrip("stats\r\n", "END\r\n");
  }
  uint64_t stat_u64(const std::string& stats, const std::string& name) {
    std::optional<std::string> v = stat_value(stats, name);
    return v ? std::stoull(*v) : ~uint64_t{0};
  }

  std::vector<double> per_worker() {
    std::vector<Sample> s;
    if (!fetch_metrics(proxy_->stats_port, s)) return {-1, -1};
    std::vector<double> out;
    for (const char* w : {"0", "1"})
      out.push_back(metric(s, "memshard_worker_connections", {{"worker", w}}).value_or(-1));
    return out;
  }

  std::string workers_lines() {
    std::string out;
    for (const std::string& line : lines_of(read_file(log_))) {
      if (line.find("workers: ") != std::string::npos) out += line + "\n";
    }
    return out;
  }

  static std::string describe(const std::vector<Snapshot>& seen) {
    std::ostringstream out;
    out.precision(1);
    out << std::fixed;
    for (const Snapshot& s : seen)
      out << "  t=" << s.at << "s active_threads " << s.active << " moved_connections " << s.moved
          << " curr_connections " << s.curr << "\n";
    return out.str();
  }

  // Starts one thread per Load running rounds until `stop` (or `max_rounds`
  // rounds, or replies stop coming).
  std::vector<std::thread> run(std::atomic<bool>& stop, uint64_t max_rounds) {
    std::vector<std::thread> threads;
    for (auto& l : loads_) {
      threads.emplace_back([this, &l, &stop, max_rounds] {
        PinnedTo pin(l->cpu);
        l->pinned = pin.ok();
        run_load(*l, failures_, stop, max_rounds);
      });
    }
    return threads;
  }

  std::vector<int> cpus_;
  TempDir dir_;
  std::string log_;
  std::unique_ptr<Fleet> fleet_;
  uint16_t port_ = 0;
  std::unique_ptr<Proxy> proxy_;
  std::vector<std::unique_ptr<Load>> loads_;
  Failures failures_;
};

// The CPU two spinning threads get in `span`, in cores (2.0: both free).
// A second worker raises throughput only where a second core is free: the
// governor rightly keeps one worker on a machine that a CPU hog fills
// (scripts/test --stress), and this test has nothing to show there.
double free_cores(std::chrono::milliseconds span) {
  std::atomic<bool> stop{false};
  std::atomic<int64_t> cpu_ns{0};
  std::vector<std::thread> spinners;
  for (int i = 0; i < 2; ++i) {
    spinners.emplace_back([&] {
      volatile uint64_t n = 0;
      while (!stop) n = n + 1;
      timespec ts{};
      clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
      cpu_ns += int64_t{ts.tv_sec} * 1000000000 + ts.tv_nsec;
    });
  }
  const auto start = Clock::now();
  std::this_thread::sleep_for(span);
  stop = true;
  for (auto& t : spinners) t.join();
  const double wall_ns = std::chrono::duration<double, std::nano>(Clock::now() - start).count();
  return static_cast<double>(cpu_ns.load()) / wall_ns;
}

TEST_F(AdaptiveWorkers, GrowUnderLoadShrinkWhenIdleNoReplyLostOrReordered) {
  if (const double cores = free_cores(std::chrono::milliseconds(500)); cores < 1.3) {
    GTEST_SKIP() << "two spinning threads got " << cores
                 << " cores: a second worker cannot add throughput on this machine now";
  }
  const auto test_start = Clock::now();
  // 1. One worker of two takes connections at first.
  {
    const std::string stats = text_stats();
    ASSERT_EQ(stat_u64(stats, "threads"), 2u) << stats;
    ASSERT_EQ(stat_u64(stats, "active_threads"), 1u) << stats;
    ASSERT_EQ(stat_u64(stats, "moved_connections"), 0u) << stats;
  }

  // 2. Connections opened from a thread on each of the first two CPUs.
  size_t total_conns = 0;
  for (int t = 0; t < 2; ++t) {
    auto l = std::make_unique<Load>();
    l->cpu = cpus_[static_cast<size_t>(t)];
    loads_.push_back(std::move(l));
  }
  {
    std::vector<std::thread> openers;
    for (size_t t = 0; t < loads_.size(); ++t) {
      openers.emplace_back([this, t] {
        Load& l = *loads_[t];
        PinnedTo pin(l.cpu);
        if (!pin.ok()) {
          l.error = "cannot pin a thread to CPU " + std::to_string(l.cpu);
          return;
        }
        try {
          for (int i = 0; i < kTextPerThread; ++i)
            l.conns.push_back(std::make_unique<TextConn>(
                "t" + std::to_string(t) + "c" + std::to_string(i), port_));
          for (int i = 0; i < kBinaryPerThread; ++i)
            l.conns.push_back(std::make_unique<BinaryConn>(
                "t" + std::to_string(t) + "bin" + std::to_string(i), port_));
        } catch (const std::exception& e) {
          l.error = e.what();
        }
      });
    }
    for (auto& th : openers) th.join();
  }
  for (auto& l : loads_) {
    ASSERT_EQ(l->error, "");
    total_conns += l->conns.size();
  }

  // 3. The load, until the count has grown and connections have moved, and
  // 3 s more so that moved connections keep being checked.
  std::vector<Snapshot> seen;
  const auto load_start = Clock::now();
  std::atomic<bool> stop{false};
  std::vector<std::thread> threads = run(stop, ~uint64_t{0});
  bool grew = false, moved = false;
  uint64_t rounds_when_moved = 0;
  std::optional<Clock::time_point> met_at;
  while (Clock::now() - load_start < std::chrono::seconds(20)) {
    std::this_thread::sleep_for(std::chrono::milliseconds(200));
    if (std::optional<Snapshot> s = snapshot(load_start)) {
      seen.push_back(*s);
      if (!grew && s->active == 2) std::cout << "two workers active at t=" << s->at << " s\n";
      grew = grew || s->active == 2;
      moved = s->moved > 0 && s->moved != ~uint64_t{0};
    }
    if (failures_.count() > 0) break;
    if (grew && moved && !met_at) {
      met_at = Clock::now();
      for (auto& l : loads_) rounds_when_moved += l->rounds.load();
    }
    if (met_at && Clock::now() - *met_at >= std::chrono::seconds(3)) break;
  }
  stop = true;
  for (auto& th : threads) th.join();
  const double load_seconds = std::chrono::duration<double>(Clock::now() - load_start).count();
  uint64_t rounds = 0;
  for (auto& l : loads_) {
    EXPECT_TRUE(l->pinned) << "CPU " << l->cpu;
    rounds += l->rounds.load();
  }
  std::cout << "load: " << load_seconds << " s, " << rounds << " rounds of " << total_conns
            << " bursts (" << rounds_when_moved << " before the count grew and moves began)\n";
  ASSERT_EQ(failures_.count(), 0u) << failures_.report() << "seen:\n"
                                   << describe(seen) << "log:\n"
                                   << workers_lines();
  ASSERT_TRUE(grew && moved) << "within 20 s of load the active workers "
                             << (grew ? "grew to 2" : "never grew") << " and "
                             << (moved ? "connections moved" : "no connection moved") << "; seen:\n"
                             << describe(seen) << "log:\n"
                             << workers_lines();
  EXPECT_GT(rounds, rounds_when_moved) << "no burst was checked after the moves";

  // 4. Idle (connections open, owing nothing): back to one worker.
  const auto idle_start = Clock::now();
  std::vector<Snapshot> idle_seen;
  bool shrank = false;
  while (Clock::now() - idle_start < std::chrono::seconds(15)) {
    if (std::optional<Snapshot> s = snapshot(load_start)) {
      idle_seen.push_back(*s);
      if (s->active == 1) {
        shrank = true;
        break;
      }
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(200));
  }
  const double idle_seconds = std::chrono::duration<double>(Clock::now() - idle_start).count();
  std::cout << "idle until one worker: " << idle_seconds << " s; moved_connections "
            << (idle_seen.empty() ? 0 : idle_seen.back().moved) << " (at the end of the load "
            << (seen.empty() ? 0 : seen.back().moved) << ")\n";
  ASSERT_TRUE(shrank) << "15 s after the load stopped, still more than one worker active; seen:\n"
                      << describe(idle_seen) << "log:\n"
                      << workers_lines();
  // Every connection is still there (none lost on its way between workers).
  EXPECT_TRUE(wait_until([&] {
    std::optional<Snapshot> s = snapshot(load_start);
    return s && s->curr == total_conns;
  })) << "curr_connections: "
      << (snapshot(load_start) ? snapshot(load_start)->curr : 0) << ", expected " << total_conns;

  // What worker 1 (no longer active) still holds: parked connections (idle
  // for more than --park-after) stay parked there until they wake. Read in
  // this order, every one of them that leaves worker 1 from now on is a
  // move that moved_connections counts after `moved_before`.
  std::this_thread::sleep_for(std::chrono::milliseconds(500));
  const std::optional<Snapshot> before_last = snapshot(load_start);
  ASSERT_TRUE(before_last);
  const uint64_t moved_before = before_last->moved;
  const double left_on_1 = per_worker()[1];
  std::cout << "before the last burst: worker connections " << per_worker()[0] << " / " << left_on_1
            << ", moved_connections " << moved_before << "\n";

  // One more burst on every connection, from the same CPUs: answered
  // correctly by whichever worker holds it now (parked ones wake on the
  // worker no longer active and move before a byte is read).
  {
    std::atomic<bool> never{false};
    std::vector<std::thread> last = run(never, 1);
    for (auto& th : last) th.join();
  }
  for (auto& l : loads_) {
    for (auto& c : l->conns) c->check_quiet(failures_);
  }
  EXPECT_EQ(failures_.count(), 0u) << failures_.report();
  uint64_t usable = 0;
  for (auto& l : loads_) {
    for (auto& c : l->conns) usable += c->usable() ? 1 : 0;
  }
  EXPECT_EQ(usable, total_conns);

  // With one worker active, every connection ends up on worker 0.
  {
    const std::string stats = text_stats();
    if (stat_u64(stats, "active_threads") == 1) {
      EXPECT_TRUE(wait_until([&] { return per_worker()[1] == 0; }))
          << "worker 1 (inactive) still holds " << per_worker()[1] << " connection(s)";
      // Each connection that left worker 1 (woken from parking, or idle and
      // not parked) was a move, and moved_connections counts every move.
      const std::optional<Snapshot> after = snapshot(load_start);
      ASSERT_TRUE(after);
      EXPECT_GE(static_cast<double>(after->moved - moved_before), left_on_1)
          << left_on_1 << " connection(s) were on worker 1 (not active) before the last burst "
          << "and none is now, but moved_connections grew only from " << moved_before << " to "
          << after->moved;
    }
    EXPECT_EQ(stat_u64(stats, "threads"), 2u) << stats;
    EXPECT_GT(stat_u64(stats, "moved_connections"), 0u) << stats;
    std::cout << "after the last burst: active_threads " << stat_u64(stats, "active_threads")
              << ", moved_connections " << stat_u64(stats, "moved_connections") << "\n";
    // The `stats` connection itself is one more.
    EXPECT_EQ(stat_u64(stats, "curr_connections"), total_conns + 1) << stats;
  }

  // 5. The log says so: two active, then one.
  const std::string lines = workers_lines();
  std::cout << "workers lines:\n" << lines;
  const size_t two = lines.find("workers: 2 of 2 active");
  ASSERT_NE(two, std::string::npos) << lines;
  EXPECT_NE(lines.find("workers: 1 of 2 active", two), std::string::npos) << lines;

  // memshard exits cleanly (under ASan: no report).
  loads_.clear();
  const int status = proxy_->process().stop(std::chrono::milliseconds(10000));
  const std::string log = read_file(log_);
  EXPECT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0)
      << "status " << status << "; log tail:\n"
      << log.substr(log.size() > 3000 ? log.size() - 3000 : 0);
  EXPECT_EQ(log.find("Sanitizer"), std::string::npos) << log;
  std::cout << "total: " << std::chrono::duration<double>(Clock::now() - test_start).count()
            << " s\n";
}

// At debug level each governor tick says each worker's part: requests a
// second, busy share and connections. One client on an adaptive memshard
// with one worker active shows on worker 0, and worker 1 shows nothing.
TEST(AdaptiveWorkersLog, DebugTicksShowEachWorkersPart) {
  if (allowed_cpus().size() < 2) GTEST_SKIP() << "needs two CPUs to run on";
  Fleet fleet(1);
  TempDir dir;
  const uint16_t port = free_port();
  PoolSpec pool{"alpha", "127.0.0.1:" + std::to_string(port), {}, {fleet[0].address() + ":1"}};
  const std::string log = dir.path() + "/memshard.log";
  std::unique_ptr<Proxy> proxy =
      start_proxy(dir, config_yaml({pool}), port, {"--threads", "2", "-v", "7"}, log);
  RawClient client(port);
  const std::regex busy_tick(
      "workers: tick at 1 active: [0-9]+ requests/s, [0-9]+% busy; worker 0: ([0-9]+) "
      "requests/s, [0-9]+% busy, 1 connections; worker 1: 0 requests/s, 0% busy, 0 connections");
  const auto served_tick = [&] {
    for (const std::string& line : lines_of(read_file(log))) {
      std::smatch m;
      if (std::regex_search(line, m, busy_tick) && std::stoull(m[1].str()) > 0) return true;
    }
    return false;
  };
  // Requests until a tick (every 250 ms) has counted some: 10 s at most.
  const auto deadline = Clock::now() + std::chrono::seconds(10);
  bool seen = false;
  while (!seen && Clock::now() < deadline) {
    for (int i = 0; i < 50; ++i) ASSERT_EQ(client.roundtrip("get k\r\n"), "END\r\n");
    seen = served_tick();
  }
  std::string ticks;
  for (const std::string& line : lines_of(read_file(log))) {
    if (line.find("tick at") != std::string::npos) ticks += line + "\n";
  }
  EXPECT_TRUE(seen) << "no tick line with worker 0 serving one connection:\n" << ticks;
}

}  // namespace
}  // namespace memshard::testing::ops
