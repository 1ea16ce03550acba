// memshard-load: connections, per-thread event loops and the coordinator of
// a phase (populate, then measure).
#include <event2/event.h>
#include <fcntl.h>
#include <netinet/tcp.h>
#include <openssl/err.h>
#include <openssl/ssl.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <charconv>
#include <cstdarg>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <limits>
#include <memory>
#include <optional>
#include <sstream>
#include <string>
#include <string_view>
#include <thread>

#include "loadgen.h"
#include "loadgen_skew.h"
#include "loadgen_value.h"

namespace memshard::bench {

std::atomic<bool> g_interrupted{false};

namespace {
std::atomic<int> g_error_lines{0};
}

int64_t now_ns() {
  timespec ts{};
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return static_cast<int64_t>(ts.tv_sec) * 1000000000LL + ts.tv_nsec;
}

void report_error(const Options& o, const char* fmt, ...) {
  int n = g_error_lines.fetch_add(1);
  if (n > o.max_error_lines) return;
  if (n == o.max_error_lines) {
    std::fprintf(stderr, "memshard-load: error: (further errors are counted, not printed)\n");
    return;
  }
  char buf[1024];
  va_list ap;
  va_start(ap, fmt);
  std::vsnprintf(buf, sizeof buf, fmt, ap);
  va_end(ap);
  std::fprintf(stderr, "memshard-load: error: %s\n", buf);
}

void Stats::merge(const Stats& o) {
  latency.merge(o.latency);
  gets += o.gets;
  sets += o.sets;
  keys_read += o.keys_read;
  hits += o.hits;
  misses += o.misses;
  mismatches += o.mismatches;
  server_errors += o.server_errors;
  protocol_errors += o.protocol_errors;
  conn_errors += o.conn_errors;
  timeouts += o.timeouts;
  unmeasured += o.unmeasured;
  last_completion_ns = std::max(last_completion_ns, o.last_completion_ns);
}

namespace {

enum class Role : uint8_t { busy, idle, populate };
enum class Kind : uint8_t { get, set };

struct Pending {
  int64_t sent_ns;
  uint32_t first_key;
  uint16_t nkeys;
  uint16_t cursor;  // keys of the request already matched or skipped (gets)
  Kind kind;
  bool measured;
};

bool is_error_line(std::string_view line) {
  return line == "ERROR" || line.starts_with("CLIENT_ERROR") || line.starts_with("SERVER_ERROR") ||
         line == "NOT_STORED" || line == "EXISTS" || line == "NOT_FOUND";
}

std::string printable(std::string_view s) {
  std::string r;
  for (char c : s.substr(0, 120)) {
    if (c >= 32 && c < 127) {
      r += c;
    } else {
      char b[8];
      std::snprintf(b, sizeof b, "\\x%02x", static_cast<unsigned char>(c));
      r += b;
    }
  }
  if (s.size() > 120) r += "...";
  return r;
}

template <typename T>
bool parse_num(std::string_view s, T& out) {
  auto [p, ec] = std::from_chars(s.data(), s.data() + s.size(), out);
  return ec == std::errc() && p == s.data() + s.size();
}

// Splits "a b c" on single spaces (memcached replies use exactly one).
size_t split(std::string_view line, std::string_view* out, size_t max) {
  size_t n = 0;
  while (!line.empty() && n < max) {
    size_t sp = line.find(' ');
    out[n++] = line.substr(0, sp);
    if (sp == std::string_view::npos) break;
    line.remove_prefix(sp + 1);
  }
  return n;
}

class Engine;

class Conn {
 public:
  Conn(Engine& e, Role role, int index);
  ~Conn();
  Conn(const Conn&) = delete;
  Conn& operator=(const Conn&) = delete;

  void start_connect();
  // An idle connection's single get (no-op once the connection is dead).
  void send_idle_request();
  void pump(int64_t now);
  void close_quietly();
  // Gives up on the connection without counting an error (the caller counts).
  void kill() {
    dead_ = true;
    abandon();
    close_quietly();
  }
  // Requests sent and not answered; they are dropped (and returned) here.
  size_t abandon();

  size_t inflight() const { return count_; }
  bool dead() const { return dead_; }
  bool ready() const { return ready_; }
  bool established() const { return established_; }  // its connect succeeded
  bool started() const { return fd_ >= 0 || dead_; }
  bool exhausted() const;  // a populate connection with nothing left to send

 private:
  static void on_read(evutil_socket_t, short, void* arg);
  static void on_write(evutil_socket_t, short, void* arg);
  static void on_retry(evutil_socket_t, short, void* arg);
  void handle_read();
  void handle_write();
  void try_connect();
  void connected();
  bool start_tls();
  void fail(const char* fmt, ...) __attribute__((format(printf, 2, 3)));
  bool process_input(int64_t now);
  bool process_binary_input(int64_t now);
  // A get's value for `key` arrived: matched against the keys the get asked
  // for (those skipped are misses) and checked byte for byte.
  void got_value(Pending& p, std::string_view key, uint32_t flags, const char* data, size_t bytes);
  // A get's reply is over: the keys not seen are misses.
  void end_get(Pending& p);
  void complete(int64_t now);
  bool flush();
  bool next_request(int64_t now);
  void add_get(uint32_t first, int n, int64_t now, bool measured);
  void add_set(uint32_t key, const ValuePattern& pat, size_t size, int64_t now, bool measured);
  void add_binary_header(uint8_t opcode, size_t key_length, uint8_t extras_length,
                         size_t body_length);
  std::string_view key_name(uint32_t idx, char* buf) const;
  void push(const Pending& p);
  Pending& front() { return ring_[head_]; }
  void ensure_space(size_t want);
  uint64_t rand() {  // xorshift64*
    rng_ ^= rng_ >> 12;
    rng_ ^= rng_ << 25;
    rng_ ^= rng_ >> 27;
    return rng_ * 0x2545F4914F6CDD1DULL;
  }

  Engine& e_;
  Role role_;
  int index_;
  int fd_ = -1;
  SSL* ssl_ = nullptr;  // --tls-ca
  event* rev_ = nullptr;
  event* wev_ = nullptr;
  event* retry_ev_ = nullptr;  // a unix socket's connect that found the backlog full
  bool connecting_ = false, established_ = false, dead_ = false, ready_ = false,
       write_armed_ = false;
  std::unique_ptr<char[]> in_;
  size_t in_cap_ = 0, rpos_ = 0, wpos_ = 0;
  std::string out_;
  size_t opos_ = 0;
  std::vector<Pending> ring_;
  size_t head_ = 0, count_ = 0;
  uint64_t rng_;
  uint64_t next_key_ = 0, stride_ = 1;  // populate
  size_t depth_;
};

class Engine {
 public:
  Engine(const Options& opts, const Target& target, Phase ph, PhaseControl& control, int index,
         const ValuePattern& pat, const ValuePattern& populate_pat)
      : o(opts),
        t(target),
        phase(ph),
        ctl(control),
        thread_index(index),
        pattern(pat),
        populate_pattern(populate_pat),
        skew(opts.keys, opts.zipf, opts.hot_share) {}
  ~Engine() {
    conns.clear();
    if (tick_ev) event_free(tick_ev);
    if (base) event_base_free(base);
  }

  void add_conn(Role role, int index) {
    auto c = std::make_unique<Conn>(*this, role, index);
    if (role == Role::idle) {
      idle.push_back(c.get());
    } else {
      workers.push_back(c.get());
    }
    conns.push_back(std::move(c));
  }

  void run();
  bool may_send(int64_t now) const { return going && !stopping && now < deadline_ns; }
  bool burst_mode() const { return phase == Phase::measure && o.idle_burst; }
  // Burst mode: an idle connection is connected; its get waits for the burst.
  void on_idle_connected() {
    ++idle_connected;
    --idle_pending;
    start_idle();
  }
  // An idle connection is answered (ok) or has failed; `established`: its
  // connect had succeeded.
  void on_idle_done(bool ok, bool established) {
    if (!ok) ctl.idle_failed.fetch_add(1);
    ++idle_done;
    // A connection holds its place in the connect window until it is
    // answered (staggered) or connected (burst): in burst mode, one that
    // failed after connecting gave its place back already.
    if (burst_mode()) {
      if (established) return;
      ++idle_connected;
    }
    --idle_pending;
    start_idle();
  }

  const Options& o;
  const Target& t;
  Phase phase;
  PhaseControl& ctl;
  int thread_index;
  const ValuePattern& pattern;
  const ValuePattern& populate_pattern;
  const KeySkew skew;  // which key a get names (--zipf, --hot-share)
  event_base* base = nullptr;
  Stats stats;
  bool going = false, stopping = false;
  int64_t measure_start_ns = std::numeric_limits<int64_t>::max();
  int64_t deadline_ns = 0;
  int populate_conns_total = 1;  // for the key stride of populate connections

 private:
  static void on_tick(evutil_socket_t, short, void* arg) { static_cast<Engine*>(arg)->tick(); }
  void tick();
  void start_idle();

  std::vector<std::unique_ptr<Conn>> conns;
  std::vector<Conn*> workers;  // busy or populate
  std::vector<Conn*> idle;
  size_t idle_next = 0, idle_pending = 0, idle_done = 0;
  size_t idle_connected = 0;  // burst mode: connected, or failed before
  bool starting_idle = false;
  bool connect_stage_done = false, burst_sent = false;  // burst mode
  bool prepared = false, drained = false;
  int64_t stop_ns = 0;
  event* tick_ev = nullptr;
};

// ---------------------------------------------------------------- Conn

Conn::Conn(Engine& e, Role role, int index)
    : e_(e),
      role_(role),
      index_(index),
      rng_(mix64(e.o.seed * 7919 + static_cast<uint64_t>(index) * 104729 +
                 static_cast<uint64_t>(role) + 1) |
           1) {
  if (role == Role::idle) {
    depth_ = 1;
  } else if (role == Role::populate) {
    depth_ = static_cast<size_t>(std::max(e.o.depth, 16));
    next_key_ = static_cast<uint64_t>(index);
    stride_ = static_cast<uint64_t>(e.populate_conns_total);
  } else {
    depth_ = static_cast<size_t>(e.o.depth);
  }
  ring_.resize(depth_);
}

Conn::~Conn() {
  close_quietly();
}

namespace {
// One client context for the process (--tls-ca), made on first use.
SSL_CTX* tls_context(const std::string& ca) {
  static SSL_CTX* ctx = [&] {
    SSL_CTX* c = SSL_CTX_new(TLS_client_method());
    if (SSL_CTX_load_verify_locations(c, ca.c_str(), nullptr) != 1) {
      std::fprintf(stderr, "memshard-load: cannot load --tls-ca %s\n", ca.c_str());
      std::exit(2);
    }
    SSL_CTX_set_verify(c, SSL_VERIFY_PEER, nullptr);
    SSL_CTX_set_mode(c, SSL_MODE_ENABLE_PARTIAL_WRITE | SSL_MODE_ACCEPT_MOVING_WRITE_BUFFER);
    return c;
  }();
  return ctx;
}
}  // namespace

// --tls-ca: the handshake is made blocking, once per connection, before
// the workload starts on it (its cost is not what a run measures).
bool Conn::start_tls() {
  ssl_ = SSL_new(tls_context(e_.o.tls_ca));
  SSL_set_fd(ssl_, fd_);
  int flags = fcntl(fd_, F_GETFL);
  fcntl(fd_, F_SETFL, flags & ~O_NONBLOCK);
  int r = SSL_connect(ssl_);
  fcntl(fd_, F_SETFL, flags);
  if (r == 1) return true;
  char buf[256];
  ERR_error_string_n(ERR_get_error(), buf, sizeof buf);
  fail("TLS handshake: %s", buf);
  return false;
}

void Conn::close_quietly() {
  if (rev_) event_free(rev_);
  if (wev_) event_free(wev_);
  if (retry_ev_) event_free(retry_ev_);
  rev_ = wev_ = retry_ev_ = nullptr;
  if (ssl_) SSL_free(ssl_);
  ssl_ = nullptr;
  if (fd_ >= 0) ::close(fd_);
  fd_ = -1;
}

size_t Conn::abandon() {
  size_t n = count_;
  count_ = 0;
  head_ = 0;
  return n;
}

bool Conn::exhausted() const {
  return role_ == Role::populate && next_key_ >= e_.o.keys;
}

void Conn::fail(const char* fmt, ...) {
  if (dead_) return;
  dead_ = true;
  char buf[512];
  va_list ap;
  va_start(ap, fmt);
  std::vsnprintf(buf, sizeof buf, fmt, ap);
  va_end(ap);
  ++e_.stats.conn_errors;
  static const char* const kRoles[] = {"busy", "idle", "populate"};
  report_error(e_.o, "%s connection %d: %s (%zu requests in flight lost)",
               kRoles[static_cast<int>(role_)], index_, buf, count_);
  abandon();
  close_quietly();
  if (role_ == Role::idle && !ready_) e_.on_idle_done(false, established_);
}

void Conn::start_connect() {
  const Target& t = e_.t;
  fd_ = ::socket(t.addr.ss_family, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
  if (fd_ < 0) {
    fail("socket: %s", std::strerror(errno));
    return;
  }
  if (t.addr.ss_family != AF_UNIX) {
    int one = 1;
    setsockopt(fd_, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
  }
  rev_ = event_new(e_.base, fd_, EV_READ | EV_PERSIST, on_read, this);
  wev_ = event_new(e_.base, fd_, EV_WRITE, on_write, this);
  try_connect();
}

void Conn::try_connect() {
  const Target& t = e_.t;
  int rc = ::connect(fd_, reinterpret_cast<const sockaddr*>(&t.addr), t.addr_len);
  if (rc == 0) {
    connected();
  } else if (errno == EINPROGRESS || (errno == EAGAIN && t.addr.ss_family != AF_UNIX)) {
    connecting_ = true;
    event_add(wev_, nullptr);
  } else if (errno == EAGAIN) {
    // A unix socket's connect never waits: EAGAIN says the listen backlog is
    // full and nothing is in progress (the socket, still unconnected, would
    // look writable at once and its first send fail with ENOTCONN). Try
    // again shortly on the same socket; the timeout still bounds the wait.
    connecting_ = true;
    if (!retry_ev_) retry_ev_ = evtimer_new(e_.base, on_retry, this);
    timeval tv{0, 1000};
    evtimer_add(retry_ev_, &tv);
  } else {
    fail("connect: %s", std::strerror(errno));
  }
}

void Conn::on_retry(evutil_socket_t, short, void* arg) {
  static_cast<Conn*>(arg)->try_connect();
}

void Conn::connected() {
  connecting_ = false;
  established_ = true;
  in_cap_ = role_ == Role::idle ? 2048 : 65536;
  in_.reset(new char[in_cap_]);
  if (!e_.o.tls_ca.empty() && !start_tls()) return;
  event_add(rev_, nullptr);
  if (role_ != Role::idle) {
    pump(now_ns());
  } else if (e_.burst_mode()) {
    e_.on_idle_connected();
  } else {
    send_idle_request();
  }
}

void Conn::send_idle_request() {
  if (dead_ || !established_) return;
  add_get(static_cast<uint32_t>(rand() % e_.o.keys), 1, now_ns(), false);
  flush();
}

void Conn::on_write(evutil_socket_t, short, void* arg) {
  static_cast<Conn*>(arg)->handle_write();
}
void Conn::on_read(evutil_socket_t, short, void* arg) {
  static_cast<Conn*>(arg)->handle_read();
}

void Conn::handle_write() {
  write_armed_ = false;
  if (connecting_) {
    int err = 0;
    socklen_t len = sizeof err;
    if (getsockopt(fd_, SOL_SOCKET, SO_ERROR, &err, &len) < 0) err = errno;
    if (err != 0) {
      fail("connect: %s", std::strerror(err));
      return;
    }
    connected();
    return;
  }
  flush();
}

bool Conn::flush() {
  while (opos_ < out_.size()) {
    ssize_t n;
    if (ssl_) {
      int r = SSL_write(ssl_, out_.data() + opos_, static_cast<int>(out_.size() - opos_));
      int e = r > 0 ? SSL_ERROR_NONE : SSL_get_error(ssl_, r);
      n = r > 0 ? r : -1;
      errno = e == SSL_ERROR_WANT_WRITE || e == SSL_ERROR_WANT_READ ? EAGAIN : EPROTO;
    } else {
      n = ::send(fd_, out_.data() + opos_, out_.size() - opos_, MSG_NOSIGNAL);
    }
    if (n > 0) {
      opos_ += static_cast<size_t>(n);
      continue;
    }
    if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) {
      if (!write_armed_) {
        event_add(wev_, nullptr);
        write_armed_ = true;
      }
      return true;
    }
    if (n < 0 && errno == EINTR) continue;
    fail("send: %s", std::strerror(errno));
    return false;
  }
  out_.clear();
  opos_ = 0;
  return true;
}

void Conn::ensure_space(size_t want) {
  if (rpos_ > 0 && (rpos_ == wpos_ || in_cap_ - wpos_ < want)) {
    std::memmove(in_.get(), in_.get() + rpos_, wpos_ - rpos_);
    wpos_ -= rpos_;
    rpos_ = 0;
  }
  if (in_cap_ - wpos_ < want) {
    size_t cap = std::max(in_cap_ * 2, wpos_ + want);
    std::unique_ptr<char[]> bigger(new char[cap]);
    std::memcpy(bigger.get(), in_.get(), wpos_);
    in_ = std::move(bigger);
    in_cap_ = cap;
  }
}

void Conn::handle_read() {
  for (;;) {
    ensure_space(role_ == Role::idle ? 512 : 16384);
    size_t room = in_cap_ - wpos_;
    ssize_t n;
    if (ssl_) {
      // One record per read: read on until OpenSSL wants the socket again.
      int r = SSL_read(ssl_, in_.get() + wpos_, static_cast<int>(room));
      int e = r > 0 ? SSL_ERROR_NONE : SSL_get_error(ssl_, r);
      if (r > 0) {
        wpos_ += static_cast<size_t>(r);
        continue;
      }
      if (e == SSL_ERROR_WANT_READ || e == SSL_ERROR_WANT_WRITE) break;
      n = e == SSL_ERROR_ZERO_RETURN ? 0 : -1;
      errno = EPROTO;
    } else {
      n = ::recv(fd_, in_.get() + wpos_, room, 0);
    }
    if (n > 0) {
      wpos_ += static_cast<size_t>(n);
      if (static_cast<size_t>(n) < room) break;
      continue;
    }
    if (n == 0) {
      fail("connection closed by the server");
      return;
    }
    if (errno == EINTR) continue;
    if (errno == EAGAIN || errno == EWOULDBLOCK) break;
    fail("recv: %s", std::strerror(errno));
    return;
  }
  int64_t now = now_ns();
  if (!process_input(now)) return;
  if (role_ != Role::idle) pump(now);
}

std::string_view Conn::key_name(uint32_t idx, char* buf) const {
  const std::string& prefix = e_.o.key_prefix;
  std::memcpy(buf, prefix.data(), prefix.size());
  auto [p, ec] = std::to_chars(buf + prefix.size(), buf + prefix.size() + 16, idx);
  (void)ec;
  return std::string_view(buf, static_cast<size_t>(p - buf));
}

void Conn::push(const Pending& p) {
  ring_[(head_ + count_) % depth_] = p;
  ++count_;
}

// Binary protocol (--protocol binary): memcached's request header, numbers
// big-endian; opaque and cas zero (replies come back in request order).
void Conn::add_binary_header(uint8_t opcode, size_t key_length, uint8_t extras_length,
                             size_t body_length) {
  char h[24] = {};
  h[0] = static_cast<char>(0x80);
  h[1] = static_cast<char>(opcode);
  h[2] = static_cast<char>(key_length >> 8);
  h[3] = static_cast<char>(key_length);
  h[4] = static_cast<char>(extras_length);
  for (int i = 0; i < 4; ++i) h[8 + i] = static_cast<char>(body_length >> (8 * (3 - i)));
  out_.append(h, sizeof h);
}

void Conn::add_get(uint32_t first, int n, int64_t now, bool measured) {
  char kb[300];
  if (e_.o.binary) {
    // One key: GETK, whose reply (hit or miss) names the key. More: GETKQ
    // for each key (only hits answer), then a NOOP that ends the reply, as
    // libmemcached and Dalli send multi-gets.
    for (int i = 0; i < n; ++i) {
      std::string_view key =
          key_name(static_cast<uint32_t>((first + static_cast<uint64_t>(i)) % e_.o.keys), kb);
      add_binary_header(n == 1 ? 0x0c : 0x0d, key.size(), 0, key.size());
      out_ += key;
    }
    if (n > 1) add_binary_header(0x0a, 0, 0, 0);
    push(Pending{now, first, static_cast<uint16_t>(n), 0, Kind::get, measured});
    if (measured) {
      ++e_.stats.gets;
      e_.stats.keys_read += static_cast<uint64_t>(n);
    }
    return;
  }
  out_ += "get";
  for (int i = 0; i < n; ++i) {
    out_ += ' ';
    out_ += key_name(static_cast<uint32_t>((first + static_cast<uint64_t>(i)) % e_.o.keys), kb);
  }
  out_ += "\r\n";
  push(Pending{now, first, static_cast<uint16_t>(n), 0, Kind::get, measured});
  if (measured) {
    ++e_.stats.gets;
    e_.stats.keys_read += static_cast<uint64_t>(n);
  }
}

void Conn::add_set(uint32_t key, const ValuePattern& pat, size_t size, int64_t now, bool measured) {
  char kb[300];
  std::string_view name = key_name(key, kb);
  if (e_.o.binary) {
    // SET: extras are the flags and an exptime of 0, then key and value.
    add_binary_header(0x01, name.size(), 8, 8 + name.size() + size);
    const uint32_t flags = pat.flags(name);
    char extras[8] = {static_cast<char>(flags >> 24),
                      static_cast<char>(flags >> 16),
                      static_cast<char>(flags >> 8),
                      static_cast<char>(flags),
                      0,
                      0,
                      0,
                      0};
    out_.append(extras, sizeof extras);
    out_ += name;
    size_t at = out_.size();
    out_.resize(at + size);
    pat.fill(name, size, out_.data() + at);
    push(Pending{now, key, 1, 0, Kind::set, measured});
    if (measured) ++e_.stats.sets;
    return;
  }
  char num[64];
  out_ += "set ";
  out_ += name;
  out_ += ' ';
  auto r1 = std::to_chars(num, num + sizeof num, pat.flags(name));
  out_.append(num, r1.ptr);
  out_ += " 0 ";
  auto r2 = std::to_chars(num, num + sizeof num, size);
  out_.append(num, r2.ptr);
  out_ += "\r\n";
  size_t at = out_.size();
  out_.resize(at + size + 2);
  pat.fill(name, size, out_.data() + at);
  out_[at + size] = '\r';
  out_[at + size + 1] = '\n';
  push(Pending{now, key, 1, 0, Kind::set, measured});
  if (measured) ++e_.stats.sets;
}

bool Conn::next_request(int64_t now) {
  const Options& o = e_.o;
  if (!e_.may_send(now)) return false;
  if (role_ == Role::populate) {
    if (next_key_ >= o.keys) return false;
    size_t size = o.populate_size ? o.populate_size : o.value_size;
    add_set(static_cast<uint32_t>(next_key_), e_.populate_pattern, size, now, false);
    next_key_ += stride_;
    return true;
  }
  bool measured = now >= e_.measure_start_ns;
  if (measured && o.requests > 0 &&
      e_.ctl.measured_sent.fetch_add(1, std::memory_order_relaxed) >= o.requests)
    return false;
  uint64_t r = rand();
  // 24 bits of r choose get or set; the rest choose the key.
  double u = static_cast<double>(r & 0xffffff) / static_cast<double>(0x1000000);
  auto key = static_cast<uint32_t>((r >> 24) % o.keys);
  if (u < o.get_ratio) {
    if (o.zipf > 0 || o.hot_share > 0) key = e_.skew.pick(r, rand());
    add_get(key, o.multiget, now, measured);
  } else {
    add_set(key, e_.pattern, o.value_size, now, measured);
  }
  return true;
}

void Conn::pump(int64_t now) {
  if (dead_ || connecting_ || fd_ < 0 || role_ == Role::idle) return;
  bool added = false;
  while (count_ < depth_ && next_request(now)) added = true;
  if (added && !write_armed_) flush();
}

void Conn::complete(int64_t now) {
  Pending& p = front();
  if (p.measured) {
    e_.stats.latency.record(static_cast<uint64_t>(std::max<int64_t>(0, now - p.sent_ns)));
    if (now > e_.stats.last_completion_ns) e_.stats.last_completion_ns = now;
  } else {
    ++e_.stats.unmeasured;
  }
  head_ = (head_ + 1) % depth_;
  --count_;
  if (role_ == Role::idle && !ready_) {
    ready_ = true;
    e_.on_idle_done(true, true);
  }
}

void Conn::got_value(Pending& p, std::string_view key, uint32_t flags, const char* data,
                     size_t bytes) {
  const Options& o = e_.o;
  Stats& st = e_.stats;
  char kb[300];
  while (p.cursor < p.nkeys &&
         key_name(static_cast<uint32_t>((p.first_key + uint64_t{p.cursor}) % o.keys), kb) != key) {
    ++p.cursor;
    ++st.misses;
    if (!o.allow_misses)
      report_error(
          o,
          "connection %d: miss on key '%s' (keys are expected to be there; "
          "--allow-misses accepts misses)",
          index_,
          printable(
              key_name(static_cast<uint32_t>((p.first_key + uint64_t{p.cursor} - 1) % o.keys), kb))
              .c_str());
  }
  if (p.cursor >= p.nkeys) {
    ++st.mismatches;
    report_error(
        o, "connection %d: VALUE for key '%s' that this get did not ask for (or out of order)",
        index_, printable(key).c_str());
    return;
  }
  ++p.cursor;
  const ValuePattern& pat = e_.pattern;
  if (bytes != o.value_size || flags != pat.flags(key) || !pat.check(key, data, bytes)) {
    ++st.mismatches;
    if (bytes != o.value_size) {
      report_error(o, "connection %d: key '%s': value of %zu bytes, expected %zu", index_,
                   printable(key).c_str(), bytes, o.value_size);
    } else if (flags != pat.flags(key)) {
      report_error(o, "connection %d: key '%s': flags %u, expected %u", index_,
                   printable(key).c_str(), flags, pat.flags(key));
    } else {
      size_t at = pat.first_difference(key, data, bytes);
      report_error(
          o, "connection %d: key '%s': value differs from byte %zu on: '%s'", index_,
          printable(key).c_str(), at,
          printable(std::string_view(data + at, std::min<size_t>(bytes - at, 40))).c_str());
    }
  } else {
    ++st.hits;
  }
}

void Conn::end_get(Pending& p) {
  const Options& o = e_.o;
  Stats& st = e_.stats;
  while (p.cursor < p.nkeys) {
    ++st.misses;
    if (!o.allow_misses) {
      char kb[300];
      report_error(
          o,
          "connection %d: miss on key '%s' (keys are expected to be there; --allow-misses "
          "accepts misses)",
          index_,
          printable(
              key_name(static_cast<uint32_t>((p.first_key + uint64_t{p.cursor}) % o.keys), kb))
              .c_str());
    }
    ++p.cursor;
  }
}

// Binary replies, in request order: a SET's status; a GETK's hit (flags,
// key, value) or miss; for a multi-get, the GETKQ hits up to the NOOP.
bool Conn::process_binary_input(int64_t now) {
  const Options& o = e_.o;
  Stats& st = e_.stats;
  while (count_ > 0 && wpos_ - rpos_ >= 24) {
    const char* b = in_.get() + rpos_;
    const auto* u = reinterpret_cast<const unsigned char*>(b);
    const size_t avail = wpos_ - rpos_;
    if (u[0] != 0x81) {
      ++st.protocol_errors;
      fail("reply without the binary response magic: '%s'",
           printable(std::string_view(b, std::min<size_t>(avail, 40))).c_str());
      return false;
    }
    const uint8_t opcode = u[1];
    const size_t key_length = size_t{u[2]} << 8 | u[3];
    const size_t extras_length = u[4];
    const uint16_t status = static_cast<uint16_t>(u[6] << 8 | u[7]);
    const size_t body = size_t{u[8]} << 24 | size_t{u[9]} << 16 | size_t{u[10]} << 8 | u[11];
    if (key_length + extras_length > body) {
      ++st.protocol_errors;
      fail("reply frame whose key and extras exceed its body (opcode 0x%02x)", opcode);
      return false;
    }
    const size_t need = 24 + body;
    if (avail < need) {
      ensure_space(need - avail);  // keeps the frame; the next read completes it
      break;
    }
    Pending& p = front();
    const std::string_view message(b + 24, body);
    if (p.kind == Kind::set) {
      if (opcode != 0x01) {
        ++st.protocol_errors;
        fail("unexpected reply to a set: opcode 0x%02x", opcode);
        return false;
      }
      if (status != 0) {
        ++st.server_errors;
        report_error(o, "connection %d: set answered status 0x%04x '%s'", index_, status,
                     printable(message).c_str());
      }
      rpos_ += need;
      complete(now);
      continue;
    }
    // A get: GETK (one key), GETKQ hits and the NOOP (several).
    const bool single = p.nkeys == 1;
    if (!single && opcode == 0x0a) {
      end_get(p);
      rpos_ += need;
      complete(now);
      continue;
    }
    if (opcode != (single ? 0x0c : 0x0d)) {
      ++st.protocol_errors;
      fail("unexpected reply to a get: opcode 0x%02x status 0x%04x", opcode, status);
      return false;
    }
    if (status == 0) {
      if (extras_length != 4) {
        ++st.protocol_errors;
        fail("get hit with %zu bytes of extras", extras_length);
        return false;
      }
      const uint32_t flags =
          static_cast<uint32_t>(u[24]) << 24 | uint32_t{u[25]} << 16 | uint32_t{u[26]} << 8 | u[27];
      const std::string_view key(b + 24 + 4, key_length);
      got_value(p, key, flags, b + 24 + 4 + key_length, body - 4 - key_length);
    } else if (status != 1 || !single) {
      ++st.server_errors;
      report_error(o, "connection %d: get answered status 0x%04x '%s'", index_, status,
                   printable(message).c_str());
    }
    rpos_ += need;
    if (single) {
      end_get(p);
      complete(now);
    }
  }
  if (count_ == 0 && rpos_ < wpos_) {
    ++st.protocol_errors;
    fail("%zu bytes received with no request in flight: '%s'", wpos_ - rpos_,
         printable(std::string_view(in_.get() + rpos_, std::min<size_t>(wpos_ - rpos_, 80)))
             .c_str());
    return false;
  }
  if (rpos_ == wpos_) rpos_ = wpos_ = 0;
  return true;
}

bool Conn::process_input(int64_t now) {
  if (e_.o.binary) return process_binary_input(now);
  const Options& o = e_.o;
  Stats& st = e_.stats;
  while (count_ > 0 && rpos_ < wpos_) {
    Pending& p = front();
    const char* b = in_.get() + rpos_;
    size_t avail = wpos_ - rpos_;
    const char* nl = static_cast<const char*>(std::memchr(b, '\n', avail));
    if (!nl) {
      if (avail > 4096) {
        ++st.protocol_errors;
        fail("reply line longer than 4096 bytes: '%s'",
             printable(std::string_view(b, 200)).c_str());
        return false;
      }
      break;
    }
    size_t consumed = static_cast<size_t>(nl - b) + 1;
    std::string_view line(b, consumed - 1);
    if (line.empty() || line.back() != '\r') {
      ++st.protocol_errors;
      fail("reply line not ended by \\r\\n: '%s'", printable(line).c_str());
      return false;
    }
    line.remove_suffix(1);
    if (p.kind == Kind::set) {
      if (line != "STORED") {
        if (is_error_line(line)) {
          ++st.server_errors;
          report_error(o, "connection %d: set answered '%s'", index_, printable(line).c_str());
        } else {
          ++st.protocol_errors;
          fail("unexpected reply to a set: '%s'", printable(line).c_str());
          return false;
        }
      }
      rpos_ += consumed;
      complete(now);
      continue;
    }
    // A get.
    if (line.starts_with("VALUE ")) {
      std::string_view tok[5];
      size_t nt = split(line, tok, 5);
      uint32_t flags = 0;
      size_t bytes = 0;
      if (nt < 4 || nt > 5 || !parse_num(tok[2], flags) || !parse_num(tok[3], bytes)) {
        ++st.protocol_errors;
        fail("malformed VALUE line: '%s'", printable(line).c_str());
        return false;
      }
      size_t need = consumed + bytes + 2;
      if (avail < need) {
        ensure_space(need - avail);  // keeps the data; the next read completes it
        break;
      }
      const char* data = b + consumed;
      if (data[bytes] != '\r' || data[bytes + 1] != '\n') {
        ++st.protocol_errors;
        fail("value of '%s' (%zu bytes) not followed by \\r\\n", printable(tok[1]).c_str(), bytes);
        return false;
      }
      got_value(p, tok[1], flags, data, bytes);
      rpos_ += need;
      continue;
    }
    if (line == "END") {
      end_get(p);
      rpos_ += consumed;
      complete(now);
      continue;
    }
    if (is_error_line(line)) {
      ++st.server_errors;
      report_error(o, "connection %d: get answered '%s'", index_, printable(line).c_str());
      rpos_ += consumed;
      complete(now);
      continue;
    }
    ++st.protocol_errors;
    fail("unexpected reply to a get: '%s'", printable(line).c_str());
    return false;
  }
  if (count_ == 0 && rpos_ < wpos_) {
    ++st.protocol_errors;
    fail("%zu bytes received with no request in flight: '%s'", wpos_ - rpos_,
         printable(std::string_view(in_.get() + rpos_, std::min<size_t>(wpos_ - rpos_, 80)))
             .c_str());
    return false;
  }
  if (rpos_ == wpos_) rpos_ = wpos_ = 0;
  return true;
}

// ---------------------------------------------------------------- Engine

// Idle connections being started at once, per thread: staggered, from
// connect() to the reply to their get; burst, from connect() to connected.
// Bounded so that the proxy's listen backlog is not overrun.
constexpr size_t kIdleConnectsInFlight = 64;

void Engine::start_idle() {
  // A connect may complete (or fail) synchronously, which gives its place
  // back through here: the outer loop takes over rather than recursing once
  // per connection (a unix socket connects synchronously every time).
  if (starting_idle) return;
  starting_idle = true;
  while (idle_pending < kIdleConnectsInFlight && idle_next < idle.size()) {
    Conn* c = idle[idle_next++];
    ++idle_pending;
    c->start_connect();
  }
  starting_idle = false;
}

void Engine::run() {
  base = event_base_new();
  if (!base) {
    std::fprintf(stderr, "memshard-load: event_base_new failed\n");
    std::abort();
  }
  tick_ev = event_new(base, -1, EV_PERSIST, on_tick, this);
  timeval tv{0, 5000};
  event_add(tick_ev, &tv);
  for (Conn* c : workers) c->start_connect();
  start_idle();
  event_base_dispatch(base);
  conns.clear();  // closes every socket on this thread
}

void Engine::tick() {
  int64_t now = now_ns();
  if (!prepared) {
    if (idle_done < idle.size() && now >= ctl.prepare_deadline_ns.load()) {
      // Idle connections that did not connect and answer in time: give up on them.
      size_t never = idle.size() - idle_next;
      idle_next = idle.size();
      if (never > 0) {
        stats.conn_errors += never;
        idle_done += never;
        if (burst_mode()) idle_connected += never;
        ctl.idle_failed.fetch_add(static_cast<int>(never));
        report_error(o, "%zu idle connections not even started within the timeout", never);
      }
      for (Conn* c : idle) {
        if (c->started() && !c->ready() && !c->dead()) {
          ++stats.timeouts;
          c->kill();
          report_error(o, c->established()
                              ? "an idle connection got no reply within the timeout"
                              : "an idle connection did not connect within the timeout");
          on_idle_done(false, c->established());
        }
      }
    }
    if (burst_mode() && !connect_stage_done && idle_connected >= idle.size()) {
      connect_stage_done = true;
      ctl.engines_connected.fetch_add(1);
    }
    if (burst_mode() && connect_stage_done && !burst_sent) {
      // Block here until every engine is connected (the coordinator then
      // sets `burst`) rather than polling at the next tick: the threads'
      // gets then leave within microseconds of each other, not up to a tick
      // apart. This engine has nothing else to do meanwhile (its busy
      // connections wait for `go`), and the wait is bounded: every engine
      // ends its connect stage by the prepare deadline.
      ctl.burst.wait(false);
      burst_sent = true;
      for (Conn* c : idle) c->send_idle_request();
    }
    if (idle_done >= idle.size()) {
      prepared = true;
      ctl.engines_prepared.fetch_add(1);
    }
  }
  if (!going && ctl.go.load(std::memory_order_acquire)) {
    going = true;
    measure_start_ns = ctl.measure_start_ns.load();
    deadline_ns = ctl.deadline_ns.load();
    for (Conn* c : workers) c->pump(now);
  }
  if (!going) return;
  if (!stopping) {
    bool stop = g_interrupted.load(std::memory_order_relaxed) || now >= deadline_ns;
    if (o.requests > 0 && phase == Phase::measure &&
        ctl.measured_sent.load(std::memory_order_relaxed) >= o.requests)
      stop = true;
    if (!workers.empty()) {
      bool any_left = false;
      for (Conn* c : workers)
        if (!c->dead() && !c->exhausted()) any_left = true;
      if (!any_left) stop = true;
    }
    if (stop) {
      stopping = true;
      stop_ns = now;
    }
  }
  if (stopping && !drained) {
    bool quiet = true;
    for (Conn* c : workers)
      if (!c->dead() && c->inflight() > 0) quiet = false;
    if (!quiet && now >= stop_ns + static_cast<int64_t>(o.timeout * 1e9)) {
      size_t lost = 0;
      for (Conn* c : workers) {
        if (!c->dead() && c->inflight() > 0) {
          lost += c->inflight();
          c->kill();
        }
      }
      stats.timeouts += lost;
      report_error(o, "%zu requests got no reply within %.1f s of the end of the run", lost,
                   o.timeout);
      quiet = true;
    }
    if (quiet) {
      drained = true;
      ctl.engines_drained.fetch_add(1);
    }
  }
  if (drained && ctl.release.load(std::memory_order_acquire)) event_base_loopbreak(base);
}

}  // namespace

namespace {

// utime and stime, summed over `pids`, in seconds; nullopt when one cannot
// be read.
std::optional<CpuTime> read_cpu_time(const std::vector<int>& pids) {
  if (pids.empty()) return std::nullopt;
  static const double ticks = static_cast<double>(sysconf(_SC_CLK_TCK));
  CpuTime total;
  for (int pid : pids) {
    std::ifstream f("/proc/" + std::to_string(pid) + "/stat");
    std::string s;
    if (!std::getline(f, s)) return std::nullopt;
    size_t close = s.rfind(')');
    if (close == std::string::npos) return std::nullopt;
    std::istringstream in(s.substr(close + 2));
    std::string field;
    // Fields after the command: state(3) ... utime(14) stime(15).
    unsigned long long utime = 0, stime = 0;
    for (int i = 3; i <= 15 && in >> field; ++i) {
      if (i == 14) utime = std::stoull(field);
      if (i == 15) stime = std::stoull(field);
    }
    total.user_seconds += static_cast<double>(utime) / ticks;
    total.kernel_seconds += static_cast<double>(stime) / ticks;
  }
  return total;
}

void sleep_until(int64_t t) {
  while (true) {
    int64_t now = now_ns();
    if (now >= t) return;
    int64_t d = std::min<int64_t>(t - now, 1000000);
    std::this_thread::sleep_for(std::chrono::nanoseconds(d));
  }
}

}  // namespace

PhaseResult run_phase(const Options& o, const Target& target, Phase phase) {
  size_t max_size = std::max(o.value_size, o.populate_size);
  ValuePattern pattern(o.seed, max_size);
  ValuePattern populate_pattern(o.populate_seed ? o.populate_seed : o.seed, max_size);
  PhaseControl ctl;
  int nthreads = std::max(1, o.threads);

  int pconns = o.populate_conns > 0 ? o.populate_conns : std::min(std::max(o.conns, 4), 32);
  pconns = static_cast<int>(std::min<uint64_t>(static_cast<uint64_t>(pconns), o.keys));
  std::vector<std::unique_ptr<Engine>> engines;
  for (int i = 0; i < nthreads; ++i) {
    engines.push_back(
        std::make_unique<Engine>(o, target, phase, ctl, i, pattern, populate_pattern));
    engines.back()->populate_conns_total = pconns;
  }
  if (phase == Phase::populate) {
    for (int i = 0; i < pconns; ++i)
      engines[static_cast<size_t>(i % nthreads)]->add_conn(Role::populate, i);
  } else {
    for (int i = 0; i < o.conns; ++i)
      engines[static_cast<size_t>(i % nthreads)]->add_conn(Role::busy, i);
    for (int i = 0; i < o.idle; ++i)
      engines[static_cast<size_t>(i % nthreads)]->add_conn(Role::idle, i);
  }

  int64_t start = now_ns();
  ctl.prepare_deadline_ns = start + static_cast<int64_t>((o.timeout + o.idle / 500.0) * 1e9);
  std::vector<std::thread> threads;
  for (auto& e : engines) threads.emplace_back([&e] { e->run(); });

  if (phase == Phase::measure && o.idle_burst) {
    while (ctl.engines_connected.load() < nthreads)
      std::this_thread::sleep_for(std::chrono::milliseconds(1));
    int64_t burst = now_ns();
    if (o.idle > 0) {
      int failed = ctl.idle_failed.load();
      std::fprintf(stderr,
                   "memshard-load: burst: %d idle connections connected (%d failed) in %.2f s; "
                   "each now sends its get at once\n",
                   o.idle - failed, failed, static_cast<double>(burst - start) / 1e9);
    }
    ctl.burst.store(true);
    ctl.burst.notify_all();
    while (ctl.engines_prepared.load() < nthreads)
      std::this_thread::sleep_for(std::chrono::milliseconds(1));
    if (o.idle > 0) {
      std::fprintf(stderr, "memshard-load: burst: all gets answered (or failed) in %.3f s\n",
                   static_cast<double>(now_ns() - burst) / 1e9);
    }
  }
  while (ctl.engines_prepared.load() < nthreads)
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
  if (phase == Phase::measure && o.idle > 0) {
    int failed = ctl.idle_failed.load();
    std::fprintf(stderr, "memshard-load: ready: %d idle connections open (%d failed) in %.2f s\n",
                 o.idle - failed, failed, static_cast<double>(now_ns() - start) / 1e9);
    std::fflush(stderr);
  }
  int64_t go = now_ns();
  int64_t measure_start, deadline;
  if (phase == Phase::populate) {
    measure_start = std::numeric_limits<int64_t>::max();
    deadline = go + static_cast<int64_t>(std::max(60.0, o.timeout * 6) * 1e9);
  } else {
    measure_start = go + static_cast<int64_t>(o.warmup * 1e9);
    deadline = measure_start + static_cast<int64_t>(o.duration * 1e9);
  }
  ctl.measure_start_ns = measure_start;
  ctl.deadline_ns = deadline;
  ctl.go.store(true, std::memory_order_release);

  PhaseResult result;
  std::optional<CpuTime> cpu0;
  if (phase == Phase::measure) {
    while (now_ns() < measure_start && !g_interrupted.load() &&
           ctl.engines_drained.load() < nthreads)
      sleep_until(std::min(measure_start, now_ns() + 5000000));
    cpu0 = read_cpu_time(o.cpu_pids);
  }
  while (ctl.engines_drained.load() < nthreads)
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
  std::optional<CpuTime> cpu1;
  if (phase == Phase::measure) cpu1 = read_cpu_time(o.cpu_pids);
  int64_t end = now_ns();
  ctl.release.store(true, std::memory_order_release);
  for (auto& t : threads) t.join();

  for (auto& e : engines) result.stats.merge(e->stats);
  if (phase == Phase::measure) {
    int64_t last = result.stats.last_completion_ns;
    result.window_ns = last > measure_start ? last - measure_start : 0;
    if (cpu0 && cpu1)
      result.cpu = CpuTime{cpu1->user_seconds - cpu0->user_seconds,
                           cpu1->kernel_seconds - cpu0->kernel_seconds};
  } else {
    result.window_ns = end - go;
  }
  return result;
}

}  // namespace memshard::bench
