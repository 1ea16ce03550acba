// Fakes for testing proxy/backends without a whole proxy: the event loop a
// worker would give a BackendServer (FakeContext), a memcached server the
// test plays by hand over loopback TCP (FakeServer), and a client owed a
// reply slot (FakeOwner). The fixture drives the loop as Worker::run()
// does: one event_base_loop(EVLOOP_ONCE), then StreamLoop::flush().
//
// Every wait is bounded in iterations and in time, and a repeating tick
// ends each iteration within kTickUsec, so a broken connection fails a
// test instead of hanging it. Nothing asserts how long something took.
#pragma once

#include <event2/buffer.h>
#include <event2/event.h>
#include <gtest/gtest.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <csignal>
#include <cstdint>
#include <cstring>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "proxy/backends/backend.h"
#include "proxy/backends/context.h"
#include "proxy/backends/reply_slot.h"
#include "proxy/protocol/replies.h"
#include "proxy/support/stats.h"
#include "proxy/transport/socket_address.h"
#include "proxy/transport/stream.h"
#include "tests/proxy/transport/test_sockets.h"

namespace memshard::proxy::testing_backends {

using Clock = std::chrono::steady_clock;

inline constexpr long kTickUsec = 10'000;

// ---------------------------------------------------------------------------
// Sockets

using test_sockets::Fd;
using test_sockets::tcp_socket;

namespace own = proto::reply::own;

// One of the proxy's own reply lines as a client receives it.
inline std::string line(std::string_view text) {
  return std::string(text) + "\r\n";
}

inline std::string buffer_text(evbuffer* b) {
  std::string s(evbuffer_get_length(b), '\0');
  if (!s.empty()) evbuffer_copyout(b, s.data(), s.size());
  return s;
}

// ---------------------------------------------------------------------------
// The loop a worker gives its backends.

class FakeContext final : public BackendContext {
 public:
  FakeContext() = default;
  ~FakeContext() {
    streams_.reset();
    event_base_free(base_);
  }
  FakeContext(const FakeContext&) = delete;
  FakeContext& operator=(const FakeContext&) = delete;

  event_base* base() const override { return base_; }
  StreamLoop& streams() override { return *streams_; }
  // Like Worker::now_usec: read once per iteration. A frozen clock lets a
  // test step over the reconnect back-off without depending on how fast
  // the machine is.
  uint64_t now_usec() override {
    if (frozen_) return *frozen_;
    if (cached_ == 0) {
      cached_ = static_cast<uint64_t>(std::chrono::duration_cast<std::chrono::microseconds>(
                                          Clock::now().time_since_epoch())
                                          .count()) +
                offset_;
    }
    return cached_;
  }
  WorkerStats& stats() override { return stats_; }
  void server_failing(const std::string& pool, const std::string& identity) override {
    failing.emplace_back(pool, identity);
  }
  void server_unreachable(const std::string& pool, const std::string& identity) override {
    unreachable.emplace_back(pool, identity);
  }

  void new_iteration() { cached_ = 0; }
  void freeze() { frozen_ = now_usec(); }
  void advance_usec(uint64_t usec) {
    if (frozen_) *frozen_ += usec;
    offset_ += usec;
    cached_ = 0;
  }

  std::vector<std::pair<std::string, std::string>> failing;      // (pool, identity)
  std::vector<std::pair<std::string, std::string>> unreachable;  // (pool, identity)

 private:
  event_base* base_ = event_base_new();
  std::unique_ptr<StreamLoop> streams_ = std::make_unique<StreamLoop>(base_);
  WorkerStats stats_;
  uint64_t cached_ = 0;
  uint64_t offset_ = 0;
  std::optional<uint64_t> frozen_;
};

// ---------------------------------------------------------------------------
// A memcached server played by the test: it accepts, reads what memshard
// sent, writes chosen bytes and hangs up when told, never on its own.

class FakeServer {
 public:
  FakeServer() : listener_(tcp_socket(address_, true)) {}

  const SocketAddress& address() const { return address_; }
  AddressList addresses() const { return {address_}; }
  bool connected() const { return conn_.get() >= 0; }
  int accepted() const { return accepted_; }
  bool peer_closed() const { return peer_closed_; }

  // Accepts a waiting connection when none is open, then takes what it
  // sent. Called by the test between loop iterations.
  void poll() {
    if (conn_.get() < 0) {
      int fd = accept4(listener_.get(), nullptr, nullptr, SOCK_NONBLOCK | SOCK_CLOEXEC);
      if (fd < 0) return;
      conn_.reset(fd);
      ++accepted_;
      peer_closed_ = false;
    }
    char buf[64 * 1024];
    while (true) {
      ssize_t n = recv(conn_.get(), buf, sizeof(buf), MSG_DONTWAIT);
      if (n > 0) {
        received.append(buf, static_cast<size_t>(n));
        reads.push_back(static_cast<size_t>(n));
      } else if (n == 0) {
        peer_closed_ = true;
        return;
      } else if (errno != EINTR) {
        return;
      }
    }
  }

  // Loopback takes a few kilobytes at once: anything else is a test bug.
  void send(std::string_view bytes) {
    ASSERT_TRUE(connected());
    ssize_t n = ::send(conn_.get(), bytes.data(), bytes.size(), MSG_DONTWAIT | MSG_NOSIGNAL);
    ASSERT_EQ(n, static_cast<ssize_t>(bytes.size())) << strerror(errno);
  }

  void hang_up() {
    conn_.reset();
    received.clear();
    reads.clear();
  }

  // Waits (bounded) until bytes are readable on the open connection,
  // without running memshard's loop: for bytes it has already written.
  bool wait_readable(int timeout_ms = 2000) {
    pollfd p{conn_.get(), POLLIN, 0};
    return ::poll(&p, 1, timeout_ms) == 1;
  }

  std::string received;       // bytes read on the open connection
  std::vector<size_t> reads;  // the size of each read, in order

 private:
  SocketAddress address_;
  Fd listener_;
  Fd conn_;
  int accepted_ = 0;
  bool peer_closed_ = false;
};

// ---------------------------------------------------------------------------
// A client owed one reply slot. Allocated as Worker::acquire_slot does.

class FakeOwner final : public SlotOwner {
 public:
  FakeOwner() : slot(std::make_unique<ReplySlot>()) { slot->set_owner(this); }
  void on_slot_complete() override {
    ++completions;
    EXPECT_TRUE(slot->complete()) << "told before the slot was complete";
  }
  std::string reply() const { return buffer_text(slot->reply()); }

  std::unique_ptr<ReplySlot> slot;
  int completions = 0;
};

// ---------------------------------------------------------------------------

class BackendTest : public testing::Test {
 protected:
  // A write to a peer that hung up must fail with EPIPE, not kill the test.
  static void SetUpTestSuite() { signal(SIGPIPE, SIG_IGN); }

  BackendTest() {
    tick_ = event_new(ctx_.base(), -1, EV_PERSIST, &BackendTest::on_tick, nullptr);
    timeval tv{0, kTickUsec};
    event_add(tick_, &tv);
  }
  ~BackendTest() override {
    servers_.clear();  // their events live on the context's base
    event_free(tick_);
  }

  static void on_tick(evutil_socket_t, short, void*) {}

  BackendServer& add_server(AddressList addresses, ServerSettings settings = {}) {
    settings.pool = "pool";
    std::string identity = "server" + std::to_string(servers_.size());
    servers_.push_back(
        std::make_unique<BackendServer>(ctx_, identity, std::move(addresses), std::move(settings),
                                        std::make_shared<ServerStats>(), pool_stats_));
    return *servers_.back();
  }

  // One worker iteration.
  void iterate() {
    event_base_loop(ctx_.base(), EVLOOP_ONCE);
    ctx_.streams().flush();
    ctx_.new_iteration();
  }

  // Iterates until `done` (which may play the servers' part) holds; false
  // when the budget ran out first.
  bool run_until(const std::function<bool()>& done) {
    auto deadline = Clock::now() + std::chrono::seconds(20);
    for (int i = 0; i < 20000 && Clock::now() < deadline; ++i) {
      if (done()) return true;
      iterate();
    }
    return done();
  }

  void run_iterations(int n) {
    for (int i = 0; i < n; ++i) iterate();
  }

  // Runs the loop until `server` has received `want` bytes, which it must
  // match exactly; clears them for the next exchange.
  void expect_request(FakeServer& server, std::string_view want) {
    EXPECT_TRUE(run_until([&] {
      server.poll();
      return server.received.size() >= want.size();
    })) << "the server got only '"
        << server.received << "'";
    EXPECT_EQ(server.received, want);
    server.received.clear();
    server.reads.clear();
  }

  bool run_until_complete(const FakeOwner& owner) {
    return run_until([&] { return owner.completions > 0; });
  }

  // A one-line (or quiet) request as ClientConn::forward sends it.
  void forward(BackendConn& conn, FakeOwner& owner, std::string_view request, ReplyMode mode) {
    evbuffer* out = conn.output();
    evbuffer_add(out, request.data(), request.size());
    if (mode == ReplyMode::quiet_drop || mode == ReplyMode::quiet_keep) {
      evbuffer_add(out, "mn\r\n", 4);
    }
    owner.slot->expect();
    owner.slot->add_fragment();
    conn.enqueue(BackendOp{owner.slot.get(), 0, mode, ctx_.now_usec()});
  }

  // A get's slot as ClientConn::multi_get builds it: `fragment_of_key[i]`
  // is the fragment of keys[i] (all 0: one server).
  static void prepare_retrieval(FakeOwner& owner, const std::vector<std::string_view>& keys,
                                const std::vector<uint32_t>& fragment_of_key = {}) {
    ReplySlot& s = *owner.slot;
    s.set_kind(SlotKind::retrieval);
    for (uint32_t pos = 0; pos < keys.size(); ++pos) {
      uint32_t f = fragment_of_key.empty() ? 0 : fragment_of_key[pos];
      while (s.fragment_count() <= f) s.add_fragment();
      s.add_key(keys[pos], f);
    }
  }

  // Sends fragment `f` of a prepared retrieval slot on `conn` (joinable).
  void send_retrieval(BackendConn& conn, FakeOwner& owner, uint32_t f = 0) {
    ReplySlot& s = *owner.slot;
    std::vector<std::string_view> keys;
    for (uint32_t pos : s.fragment(f).key_positions) keys.push_back(s.key(pos));
    s.expect();
    conn.enqueue_retrieval("get", keys, BackendOp{&s, f, ReplyMode::retrieval, ctx_.now_usec()});
  }

  void get(BackendConn& conn, FakeOwner& owner, const std::vector<std::string_view>& keys) {
    prepare_retrieval(owner, keys);
    send_retrieval(conn, owner);
  }

  // flush_all as ClientConn::broadcast sends it, to one server.
  void broadcast(BackendConn& conn, FakeOwner& owner) {
    ReplySlot& s = *owner.slot;
    s.set_kind(SlotKind::broadcast);
    if (s.fragment_count() == 0) s.add_fragment();
    evbuffer_add(conn.output(), "flush_all\r\n", 11);
    s.expect();
    conn.enqueue(BackendOp{&s, 0, ReplyMode::broadcast, ctx_.now_usec()});
  }

  FakeContext ctx_;
  std::shared_ptr<PoolStats> pool_stats_ = std::make_shared<PoolStats>();
  event* tick_ = nullptr;
  std::vector<std::unique_ptr<BackendServer>> servers_;
};

}  // namespace memshard::proxy::testing_backends
