// Backends that die, stop or all go away, with real memcached processes and
// real signals: which requests fail, how fast, and how memshard recovers.
#include <gtest/gtest.h>
#include <signal.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <iostream>
#include <map>
#include <memory>
#include <mutex>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "failure_util.h"
#include "protocol_client.h"

namespace memshard::testing::failures {
namespace {

using namespace std::chrono_literals;

// One request made by the load generator.
struct Op {
  int64_t start_ms = 0;  // since the load started
  int64_t end_ms = 0;
  size_t server = 0;  // owner of the key in the full ring
  bool is_set = false;
  bool error = false;  // SERVER_ERROR, garbage, or no reply in time
  bool miss = false;
  bool stale = false;  // a hit with another value than the set just before
  std::string reply;   // kept for errors only
};

// Client threads doing set-then-get on every key, each request waited for
// before the next (so one slow server cannot delay another's replies on
// the same connection). Bounded in requests and time.
class Load {
 public:
  Load(uint16_t port, std::vector<std::string> keys, std::vector<size_t> owners, size_t threads)
      : port_(port), keys_(std::move(keys)), owners_(std::move(owners)), t0_(Clock::now()) {
    for (size_t t = 0; t < threads; ++t)
      threads_.emplace_back([this, t, threads] { run(t, threads); });
  }
  ~Load() { stop(); }

  void stop() {
    stop_ = true;
    for (auto& t : threads_) {
      if (t.joinable()) t.join();
    }
  }
  // Milliseconds since the load started.
  int64_t now_ms() const { return ms_between(t0_, Clock::now()); }
  std::vector<Op> ops() {
    std::lock_guard<std::mutex> lock(mu_);
    return ops_;
  }

 private:
  static constexpr size_t kMaxOpsPerThread = 400'000;
  static constexpr auto kMaxRun = 90s;

  // Thread t owns the keys t, t + nthreads, ...: nobody else writes them,
  // so a get must see the value of the set just before it (unless the key
  // moved to another server in between).
  void run(size_t t, size_t nthreads) {
    std::vector<Op> mine;
    std::unique_ptr<RawClient> c;
    std::unique_ptr<ReplyReader> replies;
    size_t i = 0;
    uint64_t seq = 0;
    while (!stop_ && mine.size() < kMaxOpsPerThread && Clock::now() - t0_ < kMaxRun) {
      if (!c) {
        try {
          c = std::make_unique<RawClient>(port_);
          replies = std::make_unique<ReplyReader>(*c);
        } catch (const std::exception&) {
          std::this_thread::sleep_for(10ms);
          continue;
        }
      }
      size_t per_thread = std::max<size_t>(1, keys_.size() / nthreads);
      size_t k = (t + nthreads * (i++ % per_thread)) % keys_.size();
      std::string value = "v" + std::to_string(t) + "_" + std::to_string(seq++);
      bool broken = false;
      for (bool is_set : {true, false}) {
        Op op;
        op.server = owners_[k];
        op.is_set = is_set;
        op.start_ms = now_ms();
        std::string reply;
        try {
          c->send(is_set ? set_command(keys_[k], value) : "get " + keys_[k] + "\r\n");
          reply = replies->next(5s);
        } catch (const std::exception&) {
          reply = "";
        }
        op.end_ms = now_ms();
        if (is_set) {
          op.error = reply != "STORED\r\n";
        } else if (reply == "END\r\n") {
          op.miss = true;
        } else {
          std::vector<Value> values;
          op.error =
              !parse_values(reply, values) || values.size() != 1 || values[0].key != keys_[k];
          op.stale = !op.error && values[0].data != value;
        }
        if (op.error) op.reply = reply.empty() ? "<no reply>" : reply.substr(0, 200);
        mine.push_back(std::move(op));
        if (reply.empty()) broken = true;
      }
      if (broken) {
        replies.reset();
        c.reset();
      }  // a lost reply would shift every later one: reconnect
    }
    std::lock_guard<std::mutex> lock(mu_);
    ops_.insert(ops_.end(), mine.begin(), mine.end());
  }

  uint16_t port_;
  std::vector<std::string> keys_;
  std::vector<size_t> owners_;
  Clock::time_point t0_;
  std::atomic<bool> stop_{false};
  std::mutex mu_;
  std::vector<Op> ops_;
  std::vector<std::thread> threads_;
};

struct Summary {
  size_t ops = 0, errors = 0, misses = 0, stale = 0;
  int64_t max_latency_ms = 0;
  std::string first_error;
};

template <typename Pred>
Summary summarize(const std::vector<Op>& ops, Pred pred) {
  Summary s;
  for (const Op& op : ops) {
    if (!pred(op)) continue;
    ++s.ops;
    s.misses += op.miss;
    s.stale += op.stale;
    s.max_latency_ms = std::max(s.max_latency_ms, op.end_ms - op.start_ms);
    if (op.error) {
      if (s.errors++ == 0)
        s.first_error = printable(op.reply) + " at " + std::to_string(op.start_ms) + " ms";
    }
  }
  return s;
}

std::ostream& operator<<(std::ostream& o, const Summary& s) {
  return o << s.ops << " ops, " << s.errors << " errors, " << s.misses << " misses, " << s.stale
           << " stale, max latency " << s.max_latency_ms << " ms"
           << (s.errors ? ", first error: " + s.first_error : "");
}

class BackendFailures : public ::testing::Test {
 protected:
  void SetUp() override { fleet_ = std::make_unique<Fleet>(3); }

  void start(Directives d) {
    proxy_ = std::make_unique<Proxy>(dir_, fleet_->server_lines(), std::move(d));
  }

  // `per_server` keys of each server, flattened, with their owners.
  void pick_keys(size_t per_server, const std::string& prefix) {
    by_server_ = keys_by_server(proxy_->config(), *fleet_, per_server, prefix);
    keys_.clear();
    owners_.clear();
    for (size_t s = 0; s < by_server_.size(); ++s) {
      for (const auto& k : by_server_[s]) {
        keys_.push_back(k);
        owners_.push_back(s);
      }
    }
  }

  void preload(const std::string& value = "v") {
    RawClient c(proxy_->port());
    for (const auto& k : keys_) ASSERT_EQ(c.roundtrip(set_command(k, value)), "STORED\r\n") << k;
  }

  TempDir dir_;
  std::unique_ptr<Fleet> fleet_;
  std::unique_ptr<Proxy> proxy_;
  std::vector<std::vector<std::string>> by_server_;
  std::vector<std::string> keys_;
  std::vector<size_t> owners_;
};

// ===================================================== 1. kill -9 under load

TEST_F(BackendFailures, KilledServerIsEjectedKeysRerouteThenReadmittedAfterRestart) {
  start({{"timeout", "300"},
         {"auto_eject_hosts", "true"},
         {"server_failure_limit", "2"},
         {"server_retry_timeout", "500"}});
  pick_keys(20, "ej");
  Memcached& victim = (*fleet_)[0];

  Load load(proxy_->port(), keys_, owners_, 4);
  std::this_thread::sleep_for(500ms);
  int64_t t_kill = load.now_ms();
  victim.process().signal(SIGKILL);
  ASSERT_TRUE(eventually([&] { return proxy_stat(proxy_->port(), "server_ejects") >= 1; }, 5s))
      << "the killed server was not ejected within 5 s";
  int64_t t_eject = load.now_ms();
  std::this_thread::sleep_for(1000ms);

  int64_t t_restart = load.now_ms();
  victim.restart();  // same port
  int64_t t_restarted = load.now_ms();
  ASSERT_TRUE(
      eventually([&] { return proxy_stat(proxy_->port(), "server_readmissions") >= 1; }, 5s))
      << "the restarted server was not re-admitted within 5 s (probe every 500 ms)";
  int64_t t_readmit = load.now_ms();
  std::this_thread::sleep_for(1000ms);
  uint64_t sets_on_victim = victim.stat("cmd_set");
  uint64_t gets_on_victim = victim.stat("cmd_get");
  load.stop();
  std::vector<Op> ops = load.ops();
  auto stats = proxy_stats(proxy_->port());

  std::cout << "kill at " << t_kill << " ms, ejection seen at " << t_eject << " ms, restart at "
            << t_restart << "-" << t_restarted << " ms, readmission seen at " << t_readmit
            << " ms\n";
  Summary before = summarize(ops, [&](const Op& o) { return o.end_ms < t_kill; });
  Summary others = summarize(ops, [&](const Op& o) { return o.server != 0; });
  Summary victim_until_eject = summarize(ops, [&](const Op& o) {
    return o.server == 0 && o.start_ms >= t_kill && o.start_ms < t_eject;
  });
  // Workers install the new ring a moment after the main thread counts the
  // ejection: 200 ms of grace.
  Summary after_eject = summarize(ops, [&](const Op& o) { return o.start_ms > t_eject + 200; });
  Summary victim_ejected = summarize(ops, [&](const Op& o) {
    return o.server == 0 && o.start_ms > t_eject + 200 && o.end_ms < t_restart;
  });
  Summary after_readmit = summarize(ops, [&](const Op& o) { return o.start_ms > t_readmit + 200; });
  Summary all = summarize(ops, [](const Op&) { return true; });
  std::cout << "before kill:                " << before << "\n"
            << "other servers' keys:        " << others << "\n"
            << "victim's keys, kill→eject:  " << victim_until_eject << "\n"
            << "all keys after ejection:    " << after_eject << "\n"
            << "victim's keys while out:    " << victim_ejected << "\n"
            << "all keys after readmission: " << after_readmit << "\n"
            << "whole run:                  " << all << "\n"
            << "restarted server: cmd_set " << sets_on_victim << ", cmd_get " << gets_on_victim
            << "; proxy server_ejects " << stats["server_ejects"] << ", server_readmissions "
            << stats["server_readmissions"] << ", forward_error " << stats["forward_error"] << "\n";

  EXPECT_GT(before.ops, 100u);
  EXPECT_EQ(before.errors, 0u) << before;
  EXPECT_EQ(before.stale + before.misses, 0u) << before;
  // Only the dead server's keys ever fail.
  EXPECT_EQ(others.errors, 0u) << others;
  EXPECT_LT(t_eject - t_kill, 3000) << "ejection took too long";
  // Once it is out of the ring its keys live elsewhere: no error at all,
  // through the restart and the re-admission.
  EXPECT_GT(victim_ejected.ops, 20u);
  EXPECT_EQ(victim_ejected.errors, 0u) << victim_ejected;
  EXPECT_EQ(after_eject.errors, 0u) << after_eject;
  EXPECT_GT(after_readmit.ops, 50u);
  EXPECT_EQ(after_readmit.errors, 0u) << after_readmit;
  EXPECT_LT(all.max_latency_ms, 2000) << "a request took longer than timeout (300 ms) + 1.7 s";
  EXPECT_EQ(stats["server_ejects"], 1u);
  EXPECT_EQ(stats["server_readmissions"], 1u);
  // The restarted (empty) server gets its keys back: the load's sets and gets.
  EXPECT_GT(sets_on_victim, 0u) << "no set reached the re-admitted server";
  EXPECT_GT(gets_on_victim, 0u) << "no get reached the re-admitted server";
  RawClient direct(victim.port());
  size_t found = 0;
  for (const auto& k : by_server_[0]) {
    std::string r = direct.roundtrip("get " + k + "\r\n", "END\r\n");
    found += r.starts_with("VALUE ");
  }
  EXPECT_GT(found, 0u) << "none of its keys were stored on the re-admitted server";
}

TEST_F(BackendFailures, KilledServerWithoutEjectionFailsFastAndRecoversWhenRestarted) {
  start({{"timeout", "300"}});
  pick_keys(20, "ne");
  Memcached& victim = (*fleet_)[0];

  Load load(proxy_->port(), keys_, owners_, 4);
  std::this_thread::sleep_for(500ms);
  int64_t t_kill = load.now_ms();
  victim.process().signal(SIGKILL);
  std::this_thread::sleep_for(1500ms);
  int64_t t_restart = load.now_ms();
  victim.restart();
  int64_t t_restarted = load.now_ms();
  // Back-off is at most 1 s: after that the next request reconnects.
  std::this_thread::sleep_for(2500ms);
  uint64_t sets_on_victim = victim.stat("cmd_set");
  load.stop();
  std::vector<Op> ops = load.ops();
  auto stats = proxy_stats(proxy_->port());

  Summary before = summarize(ops, [&](const Op& o) { return o.end_ms < t_kill; });
  Summary others = summarize(ops, [&](const Op& o) { return o.server != 0; });
  Summary victim_down = summarize(ops, [&](const Op& o) {
    return o.server == 0 && o.start_ms > t_kill + 100 && o.end_ms < t_restart;
  });
  Summary victim_back =
      summarize(ops, [&](const Op& o) { return o.server == 0 && o.start_ms > t_restarted + 1500; });
  std::cout << "before kill:              " << before << "\n"
            << "other servers' keys:      " << others << "\n"
            << "victim's keys while dead: " << victim_down << "\n"
            << "victim's keys, restarted: " << victim_back << "\n"
            << "restarted server cmd_set " << sets_on_victim << "; proxy server_ejects "
            << stats["server_ejects"] << ", forward_error " << stats["forward_error"] << "\n";

  EXPECT_EQ(before.errors, 0u) << before;
  EXPECT_EQ(before.stale + before.misses, 0u) << before;
  EXPECT_EQ(others.errors, 0u) << others;
  // Nothing takes its place: every request for its keys fails, and fast.
  EXPECT_GT(victim_down.ops, 20u);
  EXPECT_EQ(victim_down.errors, victim_down.ops) << victim_down;
  EXPECT_LT(victim_down.max_latency_ms, 1000) << "failing requests are not failing fast";
  EXPECT_EQ(stats["server_ejects"], 0u);
  // Restarted: it serves its keys again without anyone's help.
  EXPECT_GT(victim_back.ops, 20u);
  EXPECT_EQ(victim_back.errors, 0u) << victim_back;
  EXPECT_GT(sets_on_victim, 0u);
}

// A server that dies again right after it was re-admitted, before any
// request to it succeeded, must be ejected again. (One worker thread, so
// every request goes through the same failure count.)
TEST_F(BackendFailures, ServerDyingAgainRightAfterReadmissionIsEjectedAgain) {
  proxy_ = std::make_unique<Proxy>(dir_, fleet_->server_lines(),
                                   Directives{{"timeout", "300"},
                                              {"auto_eject_hosts", "true"},
                                              {"server_failure_limit", "2"},
                                              {"server_retry_timeout", "300"}},
                                   std::vector<std::string>{"--threads", "1", "-s", "0"});
  pick_keys(3, "re");
  preload();
  Memcached& victim = (*fleet_)[0];
  RawClient c(proxy_->port());
  const std::string& k = by_server_[0][0];
  // Requests for its keys until it is out (a request during the reconnect
  // back-off fails without counting, hence the pauses).
  auto fail_until_ejected = [&](uint64_t ejects) {
    std::vector<std::string> replies;
    bool out = eventually(
        [&] {
          replies.push_back(c.roundtrip("get " + k + "\r\n", "\r\n"));
          std::this_thread::sleep_for(30ms);
          return proxy_stat(proxy_->port(), "server_ejects") >= ejects;
        },
        3s);
    std::string shown;
    for (size_t i = 0; i < replies.size() && i < 4; ++i) shown += printable(replies[i]) + " ";
    EXPECT_TRUE(out) << "not ejected (time " << ejects << ") after " << replies.size()
                     << " failed requests for its key: " << shown;
    return out;
  };
  victim.process().signal(SIGKILL);
  ASSERT_TRUE(fail_until_ejected(1));
  victim.restart();
  ASSERT_TRUE(
      eventually([&] { return proxy_stat(proxy_->port(), "server_readmissions") >= 1; }, 5s));
  // Dies again before any request reached it.
  victim.process().signal(SIGKILL);
  fail_until_ejected(2);
  // Ejected: its keys are served by the others (a miss, not an error).
  std::string r = c.roundtrip("get " + k + "\r\n", "\r\n");
  EXPECT_EQ(r, "END\r\n") << "its keys still fail: " << printable(r);
}

// ========================================================= 2. SIGSTOP

TEST_F(BackendFailures, StoppedServerTimesOutOthersStayPromptAndItRecoversOnSigcont) {
  constexpr int kTimeoutMs = 800;
  start({{"timeout", std::to_string(kTimeoutMs)}});
  pick_keys(6, "st");
  preload("v");
  Memcached& stopped = (*fleet_)[0];
  ASSERT_TRUE(stopped.process().suspend()) << "memcached did not stop";

  // Requests for the stopped server, one after the other on one client.
  std::vector<int64_t> stopped_latency;
  std::vector<std::string> stopped_replies;
  std::thread slow([&] {
    RawClient c(proxy_->port());
    for (size_t i = 0; i < 3; ++i) {
      auto t0 = Clock::now();
      stopped_replies.push_back(c.roundtrip("get " + by_server_[0][i] + "\r\n", "\r\n"));
      stopped_latency.push_back(ms_between(t0, Clock::now()));
    }
  });
  // Meanwhile, other servers' keys on other clients: answered at once.
  std::vector<std::unique_ptr<RawClient>> fast;
  for (int i = 0; i < 4; ++i) fast.push_back(std::make_unique<RawClient>(proxy_->port()));
  int64_t fast_max = 0;
  size_t fast_ops = 0, fast_bad = 0;
  std::string fast_first_bad;
  auto until = Clock::now() + std::chrono::milliseconds(3 * kTimeoutMs);
  for (size_t i = 0; Clock::now() < until && i < 100'000; ++i) {
    size_t server = 1 + i % 2;
    const std::string& k = by_server_[server][i % by_server_[server].size()];
    auto t0 = Clock::now();
    std::string r = fast[i % fast.size()]->roundtrip("get " + k + "\r\n", "END\r\n");
    fast_max = std::max(fast_max, ms_between(t0, Clock::now()));
    ++fast_ops;
    if (r != "VALUE " + k + " 0 1\r\nv\r\nEND\r\n" && fast_bad++ == 0) fast_first_bad = r;
  }
  // A multi-get that touches it: the other servers' keys, after the timeout.
  // (After the slow client is done: a request queued behind one that times
  // out fails with it, at once, as the connection is closed.)
  slow.join();
  RawClient multi(proxy_->port());
  auto tm = Clock::now();
  std::string mg = multi.roundtrip(
      "get " + by_server_[0][3] + " " + by_server_[1][3] + " " + by_server_[2][3] + "\r\n",
      "END\r\n");
  int64_t multi_ms = ms_between(tm, Clock::now());

  std::cout << "stopped server's gets: ";
  for (size_t i = 0; i < stopped_latency.size(); ++i) {
    std::cout << stopped_latency[i] << " ms (" << printable(stopped_replies[i]) << ") ";
  }
  std::cout << "\nother servers: " << fast_ops << " gets while it was stopped, max " << fast_max
            << " ms; multi-get touching it: " << multi_ms << " ms\n";
  ASSERT_EQ(stopped_replies.size(), 3u);
  for (size_t i = 0; i < 3; ++i) {
    EXPECT_EQ(stopped_replies[i], "SERVER_ERROR backend timeout\r\n");
    EXPECT_LT(stopped_latency[i], kTimeoutMs + 2000) << "timeout " << kTimeoutMs << " ms";
    // Never early: the loop's timers run on the coarse clock, which can be
    // ahead by a tick, so the proxy re-checks the precise time when one fires.
    EXPECT_GE(stopped_latency[i], kTimeoutMs) << "timed out early";
  }
  EXPECT_GT(fast_ops, 50u);
  EXPECT_EQ(fast_bad, 0u) << "first bad reply: " << printable(fast_first_bad);
  // Well under the timeout: they did not wait behind the stopped server.
  EXPECT_LT(fast_max, kTimeoutMs / 2);
  EXPECT_EQ(mg, "VALUE " + by_server_[1][3] + " 0 1\r\nv\r\nVALUE " + by_server_[2][3] +
                    " 0 1\r\nv\r\nEND\r\n");
  EXPECT_LT(multi_ms, kTimeoutMs + 2000);
  EXPECT_GE(proxy_stat(proxy_->port(), "server_timeouts"), 4u);

  stopped.process().resume();
  RawClient c(proxy_->port());
  ReplyReader replies(c);
  const std::string& k0 = by_server_[0][0];
  std::string r;
  auto deadline = Clock::now() + 5s;
  while (Clock::now() < deadline) {
    c.send("get " + k0 + "\r\n");
    r = replies.next(3s);
    if (r == "VALUE " + k0 + " 0 1\r\nv\r\nEND\r\n") break;
    std::this_thread::sleep_for(50ms);
  }
  EXPECT_EQ(r, "VALUE " + k0 + " 0 1\r\nv\r\nEND\r\n") << "no recovery within 5 s of SIGCONT";
  // Every key of every server, on a fresh client and on the one that timed out.
  RawClient fresh(proxy_->port());
  for (RawClient* client : {&c, &fresh}) {
    for (const auto& k : keys_) {
      EXPECT_EQ(client->roundtrip("get " + k + "\r\n", "END\r\n"),
                "VALUE " + k + " 0 1\r\nv\r\nEND\r\n");
    }
  }
}

// The same for a client of each protocol: every form of its requests for
// the stopped server's keys, pipelined between two other servers' reads
// and ended as its batches end (meta mn, a binary noop). Each is answered
// SERVER_ERROR backend timeout (a binary client: temporary failure, with
// that message), quiet ones too, after `timeout` and in request order;
// another client's reads of the other servers meanwhile are answered; once
// the server runs again, the same client reads its keys.
class StoppedServer : public BackendFailures, public ::testing::WithParamInterface<Protocol> {};

TEST_P(StoppedServer, AnswersEveryFormAtTimeoutInOrderAndRecovers) {
  const Protocol p = GetParam();
  constexpr int kTimeoutMs = 800;
  start({{"timeout", std::to_string(kTimeoutMs)}});
  pick_keys(12, "sp");
  preload("v");
  Memcached& stopped = (*fleet_)[0];
  ASSERT_TRUE(stopped.process().suspend()) << "memcached did not stop";

  ProtocolClient c(p, proxy_->port());
  const Form& read = read_form(p);
  uint32_t tag = 0;
  const Ask first{&read, by_server_[1][0], ++tag};
  std::string batch = request(first);
  Replies want = hit(first, "v");
  for (size_t i = 0; i < forms(p).size(); ++i) {
    const Ask a{&forms(p)[i], by_server_[0][i], ++tag};
    batch += request(a);
    want = want + failed(a, "SERVER_ERROR backend timeout");
  }
  const Ask last{&read, by_server_[2][0], ++tag};
  const uint32_t end = ++tag;
  batch += request(last) + end_of_batch(p, end);
  want = want + hit(last, "v") + batch_end(p, end);

  const auto t0 = Clock::now();
  c.send(batch);
  // Meanwhile, the other servers' keys on another client.
  {
    ProtocolClient other(p, proxy_->port());
    const Ask oa{&read, by_server_[1][1], ++tag}, ob{&read, by_server_[2][1], ++tag};
    const uint32_t oend = ++tag;
    other.send(request(oa) + request(ob) + end_of_batch(p, oend));
    const Replies owant = hit(oa, "v") + hit(ob, "v") + batch_end(p, oend);
    EXPECT_EQ(show(other.read(owant.size())), show(owant));
  }
  const Replies got = c.read(want.size(), std::chrono::milliseconds(kTimeoutMs + 5000));
  const int64_t took = ms_between(t0, Clock::now());
  std::cout << protocol_name(p) << ": " << forms(p).size()
            << " requests for a stopped server answered in " << took << " ms (timeout "
            << kTimeoutMs << " ms)\n";
  EXPECT_EQ(show(got), show(want));
  EXPECT_EQ(printable(c.pending()), "") << "bytes beyond the replies";
  EXPECT_GE(took, kTimeoutMs) << "timed out early";
  EXPECT_LT(took, kTimeoutMs + 3000);

  stopped.process().resume();
  // The same client, the server's keys again (keys the batch did not write).
  const std::string again = by_server_[0][11];
  Replies seen;
  bool back = eventually(
      [&] {
        const Ask ask{&read, again, ++tag};
        const uint32_t e = ++tag;
        c.send(request(ask) + end_of_batch(p, e));
        const Replies expect = hit(ask, "v") + batch_end(p, e);
        seen = c.read(expect.size(), 3s);
        return seen == expect;
      },
      5s);
  EXPECT_TRUE(back) << "no recovery within 5 s of SIGCONT; last:\n" << show(seen);
  for (size_t s = 1; s < 3; ++s) {
    const Ask ask{&read, by_server_[s][2], ++tag};
    c.send(request(ask));
    EXPECT_EQ(show(c.read(1)), show(hit(ask, "v")));
  }
}

INSTANTIATE_TEST_SUITE_P(Protocols, StoppedServer, ::testing::ValuesIn(kProtocols),
                         [](const ::testing::TestParamInfo<Protocol>& p) {
                           return std::string(protocol_name(p.param));
                         });

// ============================================== 3. every server of the pool down

void hammer_all_down(Proxy& proxy, Fleet& fleet,
                     const std::vector<std::vector<std::string>>& by_server, bool ejecting) {
  for (size_t i = 0; i < fleet.size(); ++i) fleet[i].process().signal(SIGKILL);
  std::this_thread::sleep_for(100ms);
  pid_t pid = proxy.pid();
  uint64_t rss_start = rss_kib(pid);

  std::atomic<bool> stop{false};
  std::mutex mu;
  std::vector<int64_t> latencies;
  size_t bad = 0, pipelined = 0;
  std::string first_bad;
  auto note_bad = [&](const std::string& what) {
    std::lock_guard<std::mutex> lock(mu);
    if (bad++ == 0) first_bad = what;
  };
  std::string multi = "get";
  for (const auto& keys : by_server) multi += " " + keys[0];
  multi += "\r\n";
  std::vector<std::thread> threads;
  // Two clients measure each request; two pipeline batches of 64.
  for (int t = 0; t < 2; ++t) {
    threads.emplace_back([&, t] {
      RawClient c(proxy.port());
      std::vector<int64_t> mine;
      for (size_t i = 0; !stop && i < 200'000; ++i) {
        const std::string& k = by_server[i % by_server.size()][(i / 3) % by_server[0].size()];
        std::string req = i % 3 == 0   ? set_command(k, "x")
                          : i % 3 == 1 ? "get " + k + "\r\n"
                                       : multi;
        auto t0 = Clock::now();
        std::string r = c.roundtrip(req, "\r\n");
        mine.push_back(ms_between(t0, Clock::now()));
        if (!r.starts_with("SERVER_ERROR ") || !r.ends_with("\r\n") ||
            r.find("\r\n") != r.size() - 2) {
          note_bad("thread " + std::to_string(t) + ": " + printable(req, 80) + " → " +
                   printable(r));
          return;
        }
      }
      std::lock_guard<std::mutex> lock(mu);
      latencies.insert(latencies.end(), mine.begin(), mine.end());
    });
  }
  for (int t = 0; t < 2; ++t) {
    threads.emplace_back([&] {
      RawClient c(proxy.port());
      std::string batch;
      for (int i = 0; i < 64; ++i) {
        const std::string& k = by_server[i % by_server.size()][0];
        batch += i % 2 ? "get " + k + "\r\n" : set_command(k, "y");
      }
      for (size_t round = 0; !stop && round < 20'000; ++round) {
        c.send(batch);
        std::string r = c.read_count("SERVER_ERROR", 64, 5s);
        if (r.size() < 64 * 14 || !r.ends_with("\r\n")) {
          note_bad("pipeline: " + printable(r));
          return;
        }
        std::lock_guard<std::mutex> lock(mu);
        pipelined += 64;
      }
    });
  }
  std::this_thread::sleep_for(1000ms);
  uint64_t rss_warm = rss_kib(pid), rss_max = rss_warm;
  for (int i = 0; i < 30; ++i) {  // 3 s more
    std::this_thread::sleep_for(100ms);
    rss_max = std::max(rss_max, rss_kib(pid));
  }
  uint64_t rss_end = rss_kib(pid);
  stop = true;
  for (auto& th : threads) th.join();

  std::sort(latencies.begin(), latencies.end());
  int64_t p50 = latencies.empty() ? -1 : latencies[latencies.size() / 2];
  int64_t p99 = latencies.empty() ? -1 : latencies[latencies.size() * 99 / 100];
  int64_t worst = latencies.empty() ? -1 : latencies.back();
  std::cout << (ejecting ? "[auto_eject] " : "") << "all servers down: " << latencies.size()
            << " timed requests (p50 " << p50 << " ms, p99 " << p99 << " ms, max " << worst
            << " ms), " << pipelined << " pipelined; memshard RSS " << rss_start
            << " KiB at start, " << rss_warm << " after 1 s, " << rss_end << " after 4 s (max "
            << rss_max << "); growth 1 s→4 s: " << static_cast<int64_t>(rss_max - rss_warm)
            << " KiB\n";
  EXPECT_EQ(bad, 0u) << first_bad;
  EXPECT_GT(latencies.size(), 200u);
  EXPECT_GT(pipelined, 640u);
  EXPECT_LT(worst, 500) << "a request to a pool with no server took half a second or more";
  // Steady failure must not cost memory: < 8 MiB over 3 s of hammering.
  if (sanitizer_build(pid)) {
    std::cout << "(ASan build: RSS bound not asserted)\n";
  } else {
    EXPECT_LT(rss_max, rss_warm + 8 * 1024) << "RSS grew while every request failed";
  }
  if (ejecting) {
    EXPECT_EQ(proxy_stat(proxy.port(), "server_ejects"), 3u);
  }

  // The servers come back: service resumes by itself, on every server.
  for (size_t i = 0; i < fleet.size(); ++i) fleet[i].restart();
  if (ejecting) {
    // Each ejected server is re-admitted by its own probe, up to one probe
    // interval after its restart; until all three are back, a key may
    // rightly land on another live server, so placement is checked after.
    EXPECT_TRUE(
        eventually([&] { return proxy_stat(proxy.port(), "server_readmissions") == 3u; }, 5s))
        << "not every restarted server was re-admitted within 5 s";
  }
  RawClient c(proxy.port());
  for (size_t s = 0; s < by_server.size(); ++s) {
    const std::string& k = by_server[s][1];
    std::string r;
    bool ok = eventually(
        [&] {
          r = c.roundtrip(set_command(k, "back"), "\r\n");
          return r == "STORED\r\n";
        },
        5s);
    EXPECT_TRUE(ok) << "server " << s << " not used again within 5 s: " << printable(r);
    EXPECT_EQ(c.roundtrip("get " + k + "\r\n", "END\r\n"),
              "VALUE " + k + " 0 4\r\nback\r\nEND\r\n");
    RawClient direct(fleet[s].port());
    EXPECT_EQ(direct.roundtrip("get " + k + "\r\n", "END\r\n"),
              "VALUE " + k + " 0 4\r\nback\r\nEND\r\n")
        << "the key is not on its own server";
  }
  if (ejecting) {
    EXPECT_EQ(proxy_stat(proxy.port(), "server_readmissions"), 3u);
  }
}

TEST_F(BackendFailures, AllServersDownFailFastWithoutGrowingAndServiceResumes) {
  start({{"timeout", "300"}});
  pick_keys(4, "ad");
  preload();
  hammer_all_down(*proxy_, *fleet_, by_server_, false);
}

TEST_F(BackendFailures, AllServersEjectedFailFastWithoutGrowingAndAreReadmitted) {
  start({{"timeout", "300"},
         {"auto_eject_hosts", "true"},
         {"auto_eject_max", "100%"},  // every server may go (the default keeps half)
         {"server_failure_limit", "2"},
         {"server_retry_timeout", "300"}});
  pick_keys(4, "ae");
  preload();
  hammer_all_down(*proxy_, *fleet_, by_server_, true);
}

// ================================================ load shedding (issue 38)

// server_queue_limit with a frozen server: clients that pipeline thousands
// of its keys get every answer after one timeout, not a timeout per 128
// keys in flight (the requests past the limit are answered at once, and
// such answers hold no client's budget of keys in flight); the answers
// come in request order, a live server's key in between answered with its
// value; other clients on other servers keep their latency; memshard's
// memory stays bounded.
TEST_F(BackendFailures, AFrozenServerSheds) {
  constexpr int kTimeoutMs = 2000;
  constexpr int kClients = 4, kGets = 2000;
  start({{"timeout", std::to_string(kTimeoutMs)}, {"server_queue_limit", "100"}});
  pick_keys(50, "shed");
  preload("v");
  const uint64_t rss_before = rss_kib(proxy_->pid());
  Memcached& frozen = (*fleet_)[0];
  ASSERT_TRUE(frozen.process().suspend()) << "memcached did not stop";

  // Every 100th get is a live server's key, the others the frozen one's.
  std::string pipeline;
  std::vector<std::string> order;
  size_t line_ends = 0;  // "\r\n" in all the answers: 1 an error, 3 a hit
  for (int i = 0; i < kGets; ++i) {
    const bool live = i % 100 == 50;
    const std::string& k = live ? by_server_[1][static_cast<size_t>(i / 100) % 50]
                                : by_server_[0][static_cast<size_t>(i) % 50];
    pipeline += "get " + k + "\r\n";
    order.push_back(live ? k : "");
    line_ends += live ? 3 : 1;
  }
  std::vector<std::string> got(kClients);
  std::vector<int64_t> took(kClients);
  std::vector<std::thread> piped;
  for (int c = 0; c < kClients; ++c) {
    piped.emplace_back([&, c] {
      RawClient client(proxy_->port());
      const auto t0 = Clock::now();
      client.send(pipeline);
      got[c] = client.read_count("\r\n", line_ends, std::chrono::milliseconds(30 * kTimeoutMs));
      took[c] = ms_between(t0, Clock::now());
    });
  }
  // Meanwhile another client on a live server's keys: never waits a timeout.
  int64_t live_max = 0;
  size_t live_ops = 0;
  {
    RawClient live(proxy_->port());
    const auto until = Clock::now() + std::chrono::milliseconds(kTimeoutMs);
    for (size_t i = 0; Clock::now() < until && i < 10'000; ++i) {
      const std::string& k = by_server_[2][i % 50];
      const auto t0 = Clock::now();
      EXPECT_EQ(live.roundtrip("get " + k + "\r\n", "END\r\n"),
                "VALUE " + k + " 0 1\r\nv\r\nEND\r\n");
      live_max = std::max(live_max, ms_between(t0, Clock::now()));
      ++live_ops;
    }
  }
  for (auto& t : piped) t.join();
  frozen.process().resume();

  for (int c = 0; c < kClients; ++c) {
    // Each answer in its place: errors for the frozen server's keys, the
    // value for a live one's.
    size_t at = 0, answers = 0;
    for (const std::string& live_key : order) {
      if (at >= got[c].size()) break;
      if (live_key.empty()) {
        const size_t eol = got[c].find("\r\n", at);
        ASSERT_NE(eol, std::string::npos);
        EXPECT_TRUE(got[c].compare(at, 13, "SERVER_ERROR ") == 0)
            << "answer " << answers << ": " << printable(got[c].substr(at, 60));
        at = eol + 2;
      } else {
        const std::string want = "VALUE " + live_key + " 0 1\r\nv\r\nEND\r\n";
        ASSERT_EQ(got[c].compare(at, want.size(), want), 0)
            << "answer " << answers << " out of order: " << printable(got[c].substr(at, 60));
        at += want.size();
      }
      ++answers;
    }
    EXPECT_EQ(answers, static_cast<size_t>(kGets)) << "client " << c;
    // Without shedding: one timeout per 128 keys in flight, about 16 here.
    EXPECT_LT(took[c], 4 * kTimeoutMs) << "client " << c << " waited a timeout per batch";
  }
  // Per server, in `stats servers`.
  uint64_t shed = 0;
  {
    RawClient c(proxy_->port());
    std::istringstream in(c.roundtrip("stats servers\r\n", "END\r\n"));
    for (std::string line; std::getline(in, line);) {
      const size_t at = line.find(":requests_shed ");
      if (at != std::string::npos) shed += std::stoull(line.substr(at + 15));
    }
  }
  std::cout << kClients << " clients x " << kGets
            << " pipelined gets for a frozen server: " << took[0]
            << " ms; a live server's gets meanwhile: " << live_ops << ", max " << live_max
            << " ms; shed " << shed << "\n";
  EXPECT_GT(shed, 0u);
  EXPECT_GT(live_ops, 10u);
  EXPECT_LT(live_max, kTimeoutMs) << "a live server's key waited on the frozen one";
  if (!sanitizer_build(proxy_->pid())) {
    EXPECT_LT(rss_kib(proxy_->pid()), rss_before + 64 * 1024) << "memory grew with the backlog";
  }
}

}  // namespace
}  // namespace memshard::testing::failures
