// memshard-openloop: an open-loop load generator for memcached, its proxies
// and memshard, free of coordinated omission in the way of wrk2.
//
//   memshard-openloop -p 22122 --rate 20000                      # 90/10 gets/sets over 32 connections
//   memshard-openloop -p 22122 --rate 20000 --idle-conns 968     # ... and 968 that send every 1-3 s
//   memshard-openloop -p 22122 --rate 5000 --multiget 10 -g 1    # 10-key multi-gets
//   memshard-openloop -p 22122 --closed                          # as fast as replies come: the maximum
//   memshard-openloop -p 22122 --rate 20000 --protocol meta --json
//
// Requests leave on a fixed timetable (openloop_schedule.h): the busy
// connections together send --rate requests a second less what the idle
// connections send, each busy connection on a fixed period; each idle one
// sends once every --idle-interval (1-3 s, drawn per request). A connection
// has one request in flight: one that falls due while it waits is queued
// behind it and sent when the reply comes, and every request's latency runs
// from the moment it was due, not from when it could leave. A stall of the
// target therefore counts once for every request that fell due in it, as a
// real client population would see it. Latency goes to histograms of 3
// significant digits (openloop_hist.h): p50, p90, p99, p99.9 and max, for
// all requests, the busy connections' and the idle ones'; and, for every
// --window seconds of the run (warm-up included), p50, p99, p99.9 and max of
// the requests due in it, with its wall-clock start, so that an event at a
// known time (a reload, a signal) can be read in the windows around it.
//
// The generator's own lateness is reported apart: its dispatch lag is how
// late each request was handed to its connection, the generator's doing
// alone (the machine it shares, its own loop); when its p99 is not far
// below the target's latency, the figures are the generator's.
//
// Bounded: it sends for --warmup + --duration seconds (and at most
// --max-requests), waits --timeout seconds for what is owed, then reports
// and exits; a watchdog ends it past all of that plus a minute. Every key is
// set first (text protocol, one connection); every value read back is
// checked. Exit code 0 when every request was answered correctly, 1 on any
// error, wrong value, timeout or lost connection, 2 on bad usage.
#include <arpa/inet.h>
#include <fcntl.h>
#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <signal.h>
#include <sys/epoll.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include <CLI/CLI.hpp>
#include <algorithm>
#include <atomic>
#include <cerrno>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <deque>
#include <memory>
#include <random>
#include <string>
#include <thread>
#include <vector>

#include "loadgen_value.h"
#include "openloop_hist.h"
#include "openloop_protocol.h"
#include "openloop_schedule.h"

namespace {

using memshard::bench::encode_request;
using memshard::bench::KeyNames;
using memshard::bench::LatencyHistogram;
using memshard::bench::parse_reply;
using memshard::bench::Protocol;
using memshard::bench::ReplyResult;
using memshard::bench::Request;
using memshard::bench::Schedule;
using memshard::bench::ScheduleConfig;
using memshard::bench::ValuePattern;

constexpr int kWindowSubBits = 7;  // windows: 2 significant digits are enough for a spike

std::atomic<bool> g_interrupted{false};
void on_signal(int) {
  g_interrupted.store(true);
}

int64_t now_ns() {
  timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return static_cast<int64_t>(ts.tv_sec) * 1'000'000'000 + ts.tv_nsec;
}
double unix_now() {
  timespec ts;
  clock_gettime(CLOCK_REALTIME, &ts);
  return static_cast<double>(ts.tv_sec) + static_cast<double>(ts.tv_nsec) / 1e9;
}

struct Options {
  std::string host = "127.0.0.1";
  uint16_t port = 11211;
  int threads = 2;
  int conns = 32;
  int idle_conns = 0;
  std::string idle_interval = "1-3";
  double idle_min = 1, idle_max = 3;
  double rate = 0;
  bool closed = false;
  double duration = 10;
  double warmup = 2;
  double timeout = 5;
  uint64_t max_requests = 0;
  std::string protocol_name = "text";
  Protocol protocol = Protocol::text;
  double get_ratio = 0.9;
  int multiget = 1;
  size_t value_size = 100;
  uint32_t keys = 10000;
  std::string key_prefix = "openloop:";
  uint64_t seed = 1;
  bool populate = true;
  double window = 1.0;
  double spin_us = 0;
  double min_sleep_us = 20;
  int burst_conns = 0;
  double burst_at = 0;
  bool json = false;
  bool quiet = false;
};

struct Counters {
  uint64_t dispatched = 0;  // requests that fell due
  uint64_t completed = 0;   // answered (any answer)
  uint64_t measured = 0;    // answered, due within the measured window
  uint64_t gets = 0, sets = 0, hits = 0, misses = 0, mismatches = 0;
  uint64_t server_errors = 0, protocol_errors = 0, conn_errors = 0, lost = 0, timeouts = 0;
  uint64_t queued = 0;  // fell due while their connection waited for a reply
  void add(const Counters& o) {
    dispatched += o.dispatched;
    completed += o.completed;
    measured += o.measured;
    gets += o.gets;
    sets += o.sets;
    hits += o.hits;
    misses += o.misses;
    mismatches += o.mismatches;
    server_errors += o.server_errors;
    protocol_errors += o.protocol_errors;
    conn_errors += o.conn_errors;
    lost += o.lost;
    timeouts += o.timeouts;
    queued += o.queued;
  }
  uint64_t errors() const {
    return mismatches + server_errors + protocol_errors + conn_errors + lost + timeouts;
  }
};

struct Result {
  LatencyHistogram all, busy, idle, burst, lag;
  LatencyHistogram sent;  // from when each request left, not when it was due
  std::vector<LatencyHistogram> windows;
  Counters n;
  explicit Result(size_t nwindows) {
    windows.reserve(nwindows);
    for (size_t i = 0; i < nwindows; ++i) windows.emplace_back(kWindowSubBits);
  }
  void merge(const Result& o) {
    all.merge(o.all);
    busy.merge(o.busy);
    idle.merge(o.idle);
    burst.merge(o.burst);
    lag.merge(o.lag);
    sent.merge(o.sent);
    for (size_t i = 0; i < windows.size() && i < o.windows.size(); ++i) windows[i].merge(o.windows[i]);
    n.add(o.n);
  }
};

struct Conn {
  int fd = -1;
  bool idle = false;
  bool burst = false;
  bool dead = false;
  bool waiting = false;  // a request is in flight
  bool want_write = false;
  int64_t due = 0;  // the in-flight request's due time
  int64_t sent = 0;  // when it was handed to the socket
  Request req;
  std::string out;
  size_t out_off = 0;
  std::string in;
  std::deque<int64_t> queue;  // due times of requests waiting for this connection
};

struct Timing {
  int64_t start = 0;          // the timetable's start (monotonic ns)
  int64_t measure_from = 0;   // requests due from here ...
  int64_t end = 0;            // ... to here are measured; nothing is due after
  int64_t window_ns = 1'000'000'000;
};

class Engine {
 public:
  Engine(const Options& o, int index, std::vector<int> busy_fds, std::vector<int> idle_fds,
         std::vector<int> burst_fds, const Timing& t, const ValuePattern& values, size_t nwindows)
      : o_(o), t_(t), values_(values), names_{o.key_prefix}, result_(nwindows),
        rng_(o.seed * 7919 + static_cast<uint64_t>(index)) {
    for (int fd : busy_fds) add_conn(fd, false);
    for (int fd : idle_fds) add_conn(fd, true);
    for (int fd : burst_fds) {
      add_conn(fd, true);
      conns_.back().burst = true;
    }
    ScheduleConfig c;
    c.threads = o.threads;
    c.thread_index = index;
    c.busy_conns = static_cast<int>(busy_fds.size());
    c.idle_conns = static_cast<int>(idle_fds.size());
    c.burst_conns = static_cast<int>(burst_fds.size());
    c.burst_at_ns = t.start + static_cast<int64_t>(o.burst_at * 1e9);
    c.idle_min_ns = static_cast<int64_t>(o.idle_min * 1e9);
    c.idle_max_ns = static_cast<int64_t>(o.idle_max * 1e9);
    c.seed = o.seed;
    c.start_ns = t.start;
    c.end_ns = t.end;
    sched_config_ = c;
  }
  void set_busy_rate(double r) { sched_config_.busy_rate = r; }
  const Result& result() const { return result_; }

  void run() {
    Schedule sched(sched_config_);
    ep_ = epoll_create1(EPOLL_CLOEXEC);
    for (size_t i = 0; i < conns_.size(); ++i) {
      epoll_event ev{};
      ev.events = EPOLLIN;
      ev.data.u32 = static_cast<uint32_t>(i);
      epoll_ctl(ep_, EPOLL_CTL_ADD, conns_[i].fd, &ev);
    }
    sleep_until(t_.start);
    uint64_t cap = o_.max_requests ? (o_.max_requests + static_cast<uint64_t>(o_.threads) - 1) /
                                         static_cast<uint64_t>(o_.threads)
                                   : UINT64_MAX;
    if (o_.closed) {
      int64_t now = now_ns();
      for (size_t i = 0; i < conns_.size(); ++i)
        if (!conns_[i].idle) dispatch(conns_[i], now, now);
    }
    const int64_t drain_deadline = t_.end + static_cast<int64_t>(o_.timeout * 1e9);
    bool stopped = false;
    std::vector<epoll_event> events(512);
    while (true) {
      int64_t now = now_ns();
      if (!stopped && (g_interrupted.load(std::memory_order_relaxed) || now >= t_.end ||
                       result_.n.dispatched >= cap))
        stopped = true;
      if (!stopped) {
        while (sched.next_at() <= now && result_.n.dispatched < cap) {
          auto d = sched.pop();
          dispatch(conns_[static_cast<size_t>(d.conn)], d.at, now);
        }
      }
      if (stopped && owed_ == 0) break;
      if (now >= drain_deadline || (stopped && g_interrupted.load() && now >= interrupt_deadline(now)))
        break;
      int64_t next = stopped ? drain_deadline : std::min(sched.next_at(), drain_deadline);
      if (!stopped && o_.closed) next = std::min(next, t_.end);
      int64_t wait = next > now ? next - now : 0;
      // --spin-us: wake that much early and poll until the request is due,
      // where waking from sleep is slow (a virtual machine's timer).
      if (!stopped && spin_ns_ > 0) wait = wait > spin_ns_ ? wait - spin_ns_ : 0;
      // A request due sooner than a sleep takes to wake from (--min-sleep-us)
      // is polled for, not slept for.
      if (!stopped && wait < min_sleep_ns_) wait = 0;
      if (wait > 100'000'000) wait = 100'000'000;  // see a signal within 0.1 s
      timespec ts{static_cast<time_t>(wait / 1'000'000'000), static_cast<long>(wait % 1'000'000'000)};
      int n = epoll_pwait2(ep_, events.data(), static_cast<int>(events.size()), &ts, nullptr);
      if (n < 0) {
        if (errno == EINTR) continue;
        std::perror("memshard-openloop: epoll_pwait2");
        break;
      }
      for (int i = 0; i < n; ++i) {
        Conn& c = conns_[events[static_cast<size_t>(i)].data.u32];
        if (c.dead) continue;
        uint32_t e = events[static_cast<size_t>(i)].events;
        if (e & EPOLLOUT) flush(c);
        if (!c.dead && (e & (EPOLLIN | EPOLLERR | EPOLLHUP))) on_readable(c);
      }
    }
    for (Conn& c : conns_) {
      if (c.dead) continue;
      if (c.waiting) ++result_.n.timeouts;
      result_.n.timeouts += c.queue.size();
      close(c.fd);
    }
    close(ep_);
  }


 private:
  int64_t interrupt_deadline(int64_t now) {
    if (interrupted_at_ == 0) interrupted_at_ = now;
    return interrupted_at_ + 1'000'000'000;  // interrupted: one second for what is owed
  }

  static void sleep_until(int64_t t) {
    timespec ts{static_cast<time_t>(t / 1'000'000'000), static_cast<long>(t % 1'000'000'000)};
    while (clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME, &ts, nullptr) == EINTR) {
    }
  }

  void add_conn(int fd, bool idle) {
    Conn c;
    c.fd = fd;
    c.idle = idle;
    conns_.push_back(std::move(c));
  }

  bool measured(int64_t due) const { return due >= t_.measure_from && due < t_.end; }

  void dispatch(Conn& c, int64_t due, int64_t now) {
    ++result_.n.dispatched;
    if (measured(due)) result_.lag.record(static_cast<uint64_t>(now > due ? now - due : 0));
    if (c.dead) {
      ++result_.n.lost;
      return;
    }
    ++owed_;
    if (c.waiting) {
      ++result_.n.queued;
      c.queue.push_back(due);
      return;
    }
    send(c, due);
  }

  void send(Conn& c, int64_t due) {
    Request& r = c.req;
    std::uniform_real_distribution<double> u(0, 1);
    r.set = u(rng_) >= o_.get_ratio;
    r.nkeys = r.set ? 1 : o_.multiget;
    for (int i = 0; i < r.nkeys; ++i) r.keys[i] = static_cast<uint32_t>(rng_() % o_.keys);
    if (r.set) ++result_.n.sets;
    else ++result_.n.gets;
    c.out.clear();
    c.out_off = 0;
    encode_request(o_.protocol, r, names_, values_, o_.value_size, c.out);
    c.due = due;
    c.sent = now_ns();
    c.waiting = true;
    flush(c);
  }

  void flush(Conn& c) {
    while (c.out_off < c.out.size()) {
      ssize_t w = ::send(c.fd, c.out.data() + c.out_off, c.out.size() - c.out_off, MSG_NOSIGNAL);
      if (w > 0) {
        c.out_off += static_cast<size_t>(w);
        continue;
      }
      if (w < 0 && errno == EINTR) continue;
      if (w < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) {
        watch_write(c, true);
        return;
      }
      fail(c);
      return;
    }
    watch_write(c, false);
  }

  void watch_write(Conn& c, bool on) {
    if (c.want_write == on) return;
    c.want_write = on;
    epoll_event ev{};
    ev.events = EPOLLIN | (on ? EPOLLOUT : 0u);
    ev.data.u32 = static_cast<uint32_t>(&c - conns_.data());
    epoll_ctl(ep_, EPOLL_CTL_MOD, c.fd, &ev);
  }

  void on_readable(Conn& c) {
    while (true) {
      ssize_t n = ::read(c.fd, scratch_, sizeof scratch_);
      if (n > 0) {
        c.in.append(scratch_, static_cast<size_t>(n));
        if (static_cast<size_t>(n) < sizeof scratch_) break;
        continue;
      }
      if (n < 0 && errno == EINTR) continue;
      if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) break;
      fail(c);  // closed by the server, or reset
      return;
    }
    if (!c.waiting) {
      if (!c.in.empty()) {
        ++result_.n.protocol_errors;
        fail(c);
      }
      return;
    }
    ReplyResult r = parse_reply(o_.protocol, c.req, c.in, values_, o_.value_size);
    if (r.kind == ReplyResult::incomplete) return;
    if (r.kind == ReplyResult::malformed || r.consumed != c.in.size()) {
      ++result_.n.protocol_errors;
      fail(c);
      return;
    }
    c.in.clear();
    complete(c, r);
  }

  void complete(Conn& c, const ReplyResult& r) {
    int64_t now = now_ns();
    auto latency = static_cast<uint64_t>(now > c.due ? now - c.due : 0);
    Counters& n = result_.n;
    ++n.completed;
    --owed_;
    n.hits += r.hits;
    n.misses += r.misses;
    n.mismatches += r.mismatches;
    if (r.server_error) ++n.server_errors;
    if (measured(c.due)) {
      ++n.measured;
      result_.all.record(latency);
      (c.burst ? result_.burst : c.idle ? result_.idle : result_.busy).record(latency);
      result_.sent.record(static_cast<uint64_t>(now > c.sent ? now - c.sent : 0));
    }
    if (c.due >= t_.start) {
      auto w = static_cast<size_t>((c.due - t_.start) / t_.window_ns);
      if (w < result_.windows.size()) result_.windows[w].record(latency);
    }
    c.waiting = false;
    if (o_.closed) {
      if (now < t_.end && !g_interrupted.load(std::memory_order_relaxed) &&
          (!o_.max_requests || n.dispatched * static_cast<uint64_t>(o_.threads) < o_.max_requests))
        dispatch(c, now, now);
      return;
    }
    if (!c.queue.empty()) {
      int64_t due = c.queue.front();
      c.queue.pop_front();
      send(c, due);
    }
  }

  void fail(Conn& c) {
    if (c.dead) return;
    c.dead = true;
    ++result_.n.conn_errors;
    uint64_t owed = (c.waiting ? 1 : 0) + c.queue.size();
    result_.n.lost += owed;
    owed_ -= owed;
    c.waiting = false;
    c.queue.clear();
    epoll_ctl(ep_, EPOLL_CTL_DEL, c.fd, nullptr);
    close(c.fd);
  }

  const Options& o_;
  Timing t_;
  const ValuePattern& values_;
  KeyNames names_;
  Result result_;
  std::mt19937_64 rng_;
  std::vector<Conn> conns_;
  ScheduleConfig sched_config_;
  int ep_ = -1;
  uint64_t owed_ = 0;  // requests due and not yet answered (in flight or queued)
  int64_t interrupted_at_ = 0;
  int64_t spin_ns_ = static_cast<int64_t>(o_.spin_us * 1000);
  int64_t min_sleep_ns_ = static_cast<int64_t>(o_.min_sleep_us * 1000);
  char scratch_[65536];
};

int connect_to(const sockaddr_storage& addr, socklen_t len) {
  int fd = socket(addr.ss_family, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (fd < 0) return -1;
  if (connect(fd, reinterpret_cast<const sockaddr*>(&addr), len) != 0) {
    close(fd);
    return -1;
  }
  int one = 1;
  setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
  return fd;
}

// Sets every key once over one blocking connection, 200 requests at a time.
bool populate(const Options& o, const sockaddr_storage& addr, socklen_t len,
              const ValuePattern& values) {
  int fd = connect_to(addr, len);
  if (fd < 0) return false;
  timeval tv{10, 0};
  setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
  KeyNames names{o.key_prefix};
  std::string out, in;
  char buf[65536];
  bool ok = true;
  for (uint32_t first = 0; first < o.keys && ok; first += 200) {
    uint32_t last = std::min(o.keys, first + 200);
    out.clear();
    Request r;
    r.set = true;
    for (uint32_t k = first; k < last; ++k) {
      r.keys[0] = k;
      encode_request(Protocol::text, r, names, values, o.value_size, out);
    }
    size_t off = 0;
    while (off < out.size()) {
      ssize_t w = ::send(fd, out.data() + off, out.size() - off, MSG_NOSIGNAL);
      if (w <= 0) {
        ok = false;
        break;
      }
      off += static_cast<size_t>(w);
    }
    uint32_t answered = 0;
    while (ok && answered < last - first) {
      ReplyResult res = parse_reply(Protocol::text, r, in, values, o.value_size);
      if (res.kind == ReplyResult::done) {
        if (res.server_error) ok = false;
        in.erase(0, res.consumed);
        ++answered;
        continue;
      }
      if (res.kind == ReplyResult::malformed) {
        ok = false;
        break;
      }
      ssize_t n = ::read(fd, buf, sizeof buf);
      if (n <= 0) {
        ok = false;
        break;
      }
      in.append(buf, static_cast<size_t>(n));
    }
  }
  close(fd);
  return ok;
}

double us(uint64_t ns) {
  return static_cast<double>(ns) / 1000.0;
}

void print_latency_json(const char* name, const LatencyHistogram& h, bool comma) {
  std::printf(
      "\"%s\":{\"count\":%llu,\"mean\":%.1f,\"p50\":%.1f,\"p90\":%.1f,\"p99\":%.1f,\"p999\":%.1f,"
      "\"max\":%.1f}%s",
      name, static_cast<unsigned long long>(h.count()), h.mean() / 1000.0, us(h.percentile(50)),
      us(h.percentile(90)), us(h.percentile(99)), us(h.percentile(99.9)), us(h.max()),
      comma ? "," : "");
}

void print_latency_line(const char* name, const LatencyHistogram& h) {
  std::printf("  %-22s %9llu   p50 %9.1f  p90 %9.1f  p99 %9.1f  p99.9 %9.1f  max %9.1f us\n", name,
              static_cast<unsigned long long>(h.count()), us(h.percentile(50)),
              us(h.percentile(90)), us(h.percentile(99)), us(h.percentile(99.9)), us(h.max()));
}

bool parse_interval(const std::string& s, double& lo, double& hi) {
  auto dash = s.find('-');
  try {
    if (dash == std::string::npos) {
      lo = hi = std::stod(s);
    } else {
      lo = std::stod(s.substr(0, dash));
      hi = std::stod(s.substr(dash + 1));
    }
  } catch (...) {
    return false;
  }
  return lo > 0 && hi >= lo;
}

}  // namespace

int main(int argc, char** argv) {
  Options o;
  CLI::App app{"memshard-openloop: open-loop memcached load at a fixed rate, latency from each "
               "request's due time"};
  app.add_option("-H,--host", o.host, "target host");
  app.add_option("-p,--port", o.port, "target port");
  app.add_option("-t,--threads", o.threads, "threads (connections are split among them)")
      ->check(CLI::Range(1, 64));
  app.add_option("-c,--conns", o.conns, "busy connections")->check(CLI::Range(0, 100000));
  app.add_option("--idle-conns", o.idle_conns,
                 "connections that each send once every --idle-interval seconds")
      ->check(CLI::Range(0, 100000));
  app.add_option("--idle-interval", o.idle_interval,
                 "MIN-MAX seconds between an idle connection's requests, drawn uniformly");
  app.add_option("--burst-conns", o.burst_conns,
                 "connections that send one request each, all at --burst-at (beside the rest)")
      ->check(CLI::Range(0, 100000));
  app.add_option("--burst-at", o.burst_at,
                 "seconds after the start (warm-up included) when the burst connections send")
      ->check(CLI::Range(0.0, 7200.0));
  app.add_option("-r,--rate", o.rate,
                 "requests/s of the whole generator, the idle connections' included");
  app.add_flag("--closed", o.closed,
               "closed loop instead: each busy connection sends again as soon as its reply "
               "comes (the target's maximum; --rate is not used)");
  app.add_option("-D,--duration", o.duration, "measured seconds")->check(CLI::Range(0.1, 3600.0));
  app.add_option("--warmup", o.warmup, "seconds of load before measuring")
      ->check(CLI::Range(0.0, 3600.0));
  app.add_option("--timeout", o.timeout, "seconds to wait for what is owed after the last request")
      ->check(CLI::Range(0.1, 600.0));
  app.add_option("-n,--max-requests", o.max_requests, "send at most this many requests (0: no cap)");
  app.add_option("-P,--protocol", o.protocol_name, "text, meta or binary");
  app.add_option("-g,--get-ratio", o.get_ratio, "share of requests that are gets")
      ->check(CLI::Range(0.0, 1.0));
  app.add_option("-m,--multiget", o.multiget, "keys per get")->check(CLI::Range(1, Request::kMaxKeys));
  app.add_option("-s,--value-size", o.value_size, "bytes per value")->check(CLI::Range(1, 1 << 20));
  app.add_option("-k,--keys", o.keys, "distinct keys")->check(CLI::Range(1u, 100000000u));
  app.add_option("--key-prefix", o.key_prefix, "prefix of every key");
  app.add_option("--seed", o.seed, "seed of the keys, the mix and the idle intervals");
  bool no_populate = false;
  app.add_flag("--no-populate", no_populate, "do not set every key first");
  app.add_option("--window", o.window, "seconds per window of the per-window latency (JSON)")
      ->check(CLI::Range(0.01, 3600.0));
  app.add_option("--spin-us", o.spin_us,
                 "wake this many microseconds before a request is due and poll until it is "
                 "(costs CPU; 0: sleep until due)")
      ->check(CLI::Range(0.0, 10000.0));
  app.add_option("--min-sleep-us", o.min_sleep_us,
                 "poll rather than sleep when the next request is due sooner than this (a "
                 "wake-up from sleep is about 20 us late on the bench VM)")
      ->check(CLI::Range(0.0, 10000.0));
  app.add_flag("--json", o.json, "one JSON line on stdout instead of the text report");
  CLI11_PARSE(app, argc, argv);
  o.populate = !no_populate;
  if (!memshard::bench::parse_protocol(o.protocol_name, o.protocol)) {
    std::fprintf(stderr, "memshard-openloop: --protocol is text, meta or binary\n");
    return 2;
  }
  if (!parse_interval(o.idle_interval, o.idle_min, o.idle_max)) {
    std::fprintf(stderr, "memshard-openloop: --idle-interval takes MIN-MAX seconds, 0 < MIN <= MAX\n");
    return 2;
  }
  double busy_rate = 0;
  if (!o.closed) {
    if (o.rate <= 0) {
      std::fprintf(stderr, "memshard-openloop: --rate R (requests/s) or --closed\n");
      return 2;
    }
    busy_rate = memshard::bench::busy_rate_for(o.rate, o.idle_conns, o.idle_min, o.idle_max);
    if (busy_rate < 0 || (busy_rate > 0 && o.conns == 0)) {
      std::fprintf(stderr,
                   "memshard-openloop: --rate %.0f does not fit %d idle connections (they alone "
                   "send %.0f/s) and %d busy ones\n",
                   o.rate, o.idle_conns, o.rate - busy_rate, o.conns);
      return 2;
    }
  } else if (o.conns == 0) {
    std::fprintf(stderr, "memshard-openloop: --closed needs busy connections\n");
    return 2;
  }

  signal(SIGINT, on_signal);
  signal(SIGTERM, on_signal);
  signal(SIGPIPE, SIG_IGN);
  prctl(PR_SET_TIMERSLACK, 1UL, 0UL, 0UL, 0UL);  // wake when a request is due, not 50 us later
  rlimit rl{};
  if (getrlimit(RLIMIT_NOFILE, &rl) == 0 && rl.rlim_cur < rl.rlim_max) {
    rl.rlim_cur = rl.rlim_max;
    setrlimit(RLIMIT_NOFILE, &rl);
  }
  // The watchdog: whatever happens, the process ends.
  alarm(static_cast<unsigned>(o.warmup + o.duration + o.timeout) + 120u);

  addrinfo hints{};
  hints.ai_socktype = SOCK_STREAM;
  addrinfo* res = nullptr;
  if (getaddrinfo(o.host.c_str(), std::to_string(o.port).c_str(), &hints, &res) != 0 || !res) {
    std::fprintf(stderr, "memshard-openloop: cannot resolve %s\n", o.host.c_str());
    return 2;
  }
  sockaddr_storage addr{};
  std::memcpy(&addr, res->ai_addr, res->ai_addrlen);
  auto addr_len = static_cast<socklen_t>(res->ai_addrlen);
  freeaddrinfo(res);

  ValuePattern values(o.seed, o.value_size);
  if (o.populate && !populate(o, addr, addr_len, values)) {
    std::fprintf(stderr, "memshard-openloop: setting the keys failed\n");
    return 1;
  }

  // Connections, dealt round robin to the threads.
  std::vector<std::vector<int>> busy(static_cast<size_t>(o.threads)),
      idle(static_cast<size_t>(o.threads)), burst(static_cast<size_t>(o.threads));
  const int all_conns = o.conns + o.idle_conns + o.burst_conns;
  for (int i = 0; i < all_conns; ++i) {
    int fd = connect_to(addr, addr_len);
    if (fd < 0) {
      std::fprintf(stderr, "memshard-openloop: connection %d of %d failed: %s\n", i + 1,
                   all_conns, std::strerror(errno));
      return 1;
    }
    fcntl(fd, F_SETFL, fcntl(fd, F_GETFL) | O_NONBLOCK);
    auto t = static_cast<size_t>(i % o.threads);
    (i < o.conns ? busy[t] : i < o.conns + o.idle_conns ? idle[t] : burst[t]).push_back(fd);
  }

  Timing timing;
  timing.window_ns = static_cast<int64_t>(o.window * 1e9);
  timing.start = now_ns() + 50'000'000;
  timing.measure_from = timing.start + static_cast<int64_t>(o.warmup * 1e9);
  timing.end = timing.measure_from + static_cast<int64_t>(o.duration * 1e9);
  const double start_unix = unix_now() + static_cast<double>(timing.start - now_ns()) / 1e9;
  auto nwindows = static_cast<size_t>(
      std::ceil(static_cast<double>(timing.end - timing.start) / static_cast<double>(timing.window_ns)));

  std::vector<std::unique_ptr<Engine>> engines;
  for (int i = 0; i < o.threads; ++i) {
    auto e = std::make_unique<Engine>(o, i, busy[static_cast<size_t>(i)], idle[static_cast<size_t>(i)],
                                      burst[static_cast<size_t>(i)], timing, values, nwindows);
    e->set_busy_rate(busy_rate);
    engines.push_back(std::move(e));
  }
  std::vector<std::thread> threads;
  for (auto& e : engines) threads.emplace_back([&e] { e->run(); });
  for (auto& t : threads) t.join();

  Result total(nwindows);
  for (auto& e : engines) total.merge(e->result());
  const Counters& n = total.n;
  const double achieved = static_cast<double>(n.measured) / o.duration;

  if (o.json) {
    std::printf("{\"target\":\"%s:%u\",\"protocol\":\"%s\",\"mode\":\"%s\",\"rate\":%.1f,"
                "\"busy_rate\":%.1f,\"achieved\":%.1f,\"conns\":%d,\"idle_conns\":%d,\"burst_conns\":%d,"
                "\"idle_interval\":[%.3f,%.3f],\"multiget\":%d,\"get_ratio\":%.3f,"
                "\"value_size\":%zu,\"threads\":%d,\"warmup\":%.3f,\"duration\":%.3f,"
                "\"start_unix\":%.6f,\"measure_start_unix\":%.6f,\"window\":%.3f,",
                o.host.c_str(), o.port, memshard::bench::protocol_name(o.protocol),
                o.closed ? "closed" : "open", o.closed ? achieved : o.rate, busy_rate, achieved,
                o.conns, o.idle_conns, o.burst_conns, o.idle_min, o.idle_max, o.multiget, o.get_ratio,
                o.value_size, o.threads, o.warmup, o.duration, start_unix, start_unix + o.warmup,
                o.window);
    std::printf("\"dispatched\":%llu,\"completed\":%llu,\"measured\":%llu,\"queued\":%llu,"
                "\"gets\":%llu,\"sets\":%llu,\"hits\":%llu,\"misses\":%llu,\"mismatches\":%llu,"
                "\"server_errors\":%llu,\"protocol_errors\":%llu,\"conn_errors\":%llu,"
                "\"lost\":%llu,\"timeouts\":%llu,\"errors\":%llu,\"latency_us\":{",
                static_cast<unsigned long long>(n.dispatched),
                static_cast<unsigned long long>(n.completed),
                static_cast<unsigned long long>(n.measured), static_cast<unsigned long long>(n.queued),
                static_cast<unsigned long long>(n.gets), static_cast<unsigned long long>(n.sets),
                static_cast<unsigned long long>(n.hits), static_cast<unsigned long long>(n.misses),
                static_cast<unsigned long long>(n.mismatches),
                static_cast<unsigned long long>(n.server_errors),
                static_cast<unsigned long long>(n.protocol_errors),
                static_cast<unsigned long long>(n.conn_errors),
                static_cast<unsigned long long>(n.lost), static_cast<unsigned long long>(n.timeouts),
                static_cast<unsigned long long>(n.errors()));
    print_latency_json("all", total.all, true);
    print_latency_json("busy", total.busy, true);
    print_latency_json("idle", total.idle, true);
    print_latency_json("burst", total.burst, true);
    print_latency_json("from_send", total.sent, true);
    print_latency_json("dispatch_lag", total.lag, false);
    std::printf("},\"windows\":[");
    for (size_t i = 0; i < total.windows.size(); ++i) {
      const LatencyHistogram& w = total.windows[i];
      std::printf("%s{\"start_unix\":%.3f,\"count\":%llu,\"p50\":%.1f,\"p99\":%.1f,\"p999\":%.1f,"
                  "\"max\":%.1f}",
                  i ? "," : "", start_unix + o.window * static_cast<double>(i),
                  static_cast<unsigned long long>(w.count()), us(w.percentile(50)),
                  us(w.percentile(99)), us(w.percentile(99.9)), us(w.max()));
    }
    std::printf("]}\n");
  } else {
    if (o.closed)
      std::printf("memshard-openloop: closed loop over %d connections, %s, %.1f s measured after %.1f s\n",
                  o.conns, memshard::bench::protocol_name(o.protocol), o.duration, o.warmup);
    else
      std::printf("memshard-openloop: %.0f requests/s offered (%d busy connections at %.0f/s, %d idle "
                  "every %.3g-%.3g s), %s, %.1f s measured after %.1f s\n",
                  o.rate, o.conns, busy_rate, o.idle_conns, o.idle_min, o.idle_max,
                  memshard::bench::protocol_name(o.protocol), o.duration, o.warmup);
    std::printf("  answered %llu measured (%.0f/s), %llu queued behind a reply, gets %llu, sets %llu, "
                "hits %llu, misses %llu, errors %llu\n",
                static_cast<unsigned long long>(n.measured), achieved,
                static_cast<unsigned long long>(n.queued), static_cast<unsigned long long>(n.gets),
                static_cast<unsigned long long>(n.sets), static_cast<unsigned long long>(n.hits),
                static_cast<unsigned long long>(n.misses),
                static_cast<unsigned long long>(n.errors()));
    print_latency_line("latency, all", total.all);
    if (o.idle_conns > 0) {
      print_latency_line("busy connections", total.busy);
      print_latency_line("idle connections", total.idle);
    }
    if (o.burst_conns > 0) print_latency_line("burst connections", total.burst);
    print_latency_line("from send, not due", total.sent);
    print_latency_line("generator dispatch lag", total.lag);
  }
  if (n.errors()) {
    std::fprintf(stderr,
                 "memshard-openloop: %llu errors (wrong values %llu, server errors %llu, protocol "
                 "errors %llu, connections lost %llu, requests lost with them %llu, timeouts %llu)\n",
                 static_cast<unsigned long long>(n.errors()),
                 static_cast<unsigned long long>(n.mismatches),
                 static_cast<unsigned long long>(n.server_errors),
                 static_cast<unsigned long long>(n.protocol_errors),
                 static_cast<unsigned long long>(n.conn_errors),
                 static_cast<unsigned long long>(n.lost), static_cast<unsigned long long>(n.timeouts));
    return 1;
  }
  return 0;
}
