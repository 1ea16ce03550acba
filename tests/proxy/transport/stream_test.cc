// Stream and StreamLoop (proxy/stream.h) on real sockets and a real libevent
// loop, driven the way a worker drives them (proxy/worker.cc): one
// event_base_loop(EVLOOP_ONCE), then StreamLoop::flush(), per iteration.
//
// Every loop here is bounded: a repeating tick timer ends each iteration
// within kTickUsec, and every wait has an iteration budget and a deadline,
// so a broken stream fails a test instead of hanging it. Nothing asserts
// how long something took.
#include "proxy/transport/stream.h"

#include <event2/buffer.h>
#include <event2/event.h>
#include <fcntl.h>
#include <gtest/gtest.h>
#include <netinet/in.h>
#include <sys/ioctl.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <csignal>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <functional>
#include <initializer_list>
#include <memory>
#include <ostream>
#include <string>
#include <utility>
#include <vector>

#include "harness.h"
#include "tests/proxy/transport/test_sockets.h"

namespace memshard::proxy {

// gtest names the reports in failure messages (found by ADL, so it lives in
// the namespace of Stream itself).
inline void PrintTo(Stream::Happened what, std::ostream* os) {
  static const char* const kNames[] = {"input", "eof", "error", "connected", "written", "flushing"};
  *os << kNames[static_cast<int>(what)];
}

namespace {

using Happened = Stream::Happened;
using Reads = Stream::Reads;
using Clock = std::chrono::steady_clock;
using std::chrono::milliseconds;

constexpr long kTickUsec = 10'000;

// ---------------------------------------------------------------------------
// Sockets

using test_sockets::Fd;
using test_sockets::tcp_socket;

// Connected non-blocking Unix sockets: `ours` is handed to a Stream (which
// owns it from then on), `peer` is the test's end.
struct SocketPair {
  int ours = -1;
  Fd peer;
};

SocketPair socket_pair(int type = SOCK_STREAM) {
  int fds[2] = {-1, -1};
  EXPECT_EQ(socketpair(AF_UNIX, type | SOCK_NONBLOCK | SOCK_CLOEXEC, 0, fds), 0) << strerror(errno);
  return {fds[0], Fd(fds[1])};
}

// Sends what the socket takes now of data[offset...], advancing offset.
void send_some(int fd, const std::string& data, size_t& offset) {
  while (offset < data.size()) {
    ssize_t n = send(fd, data.data() + offset, data.size() - offset, MSG_DONTWAIT | MSG_NOSIGNAL);
    if (n > 0) {
      offset += static_cast<size_t>(n);
    } else if (errno != EINTR) {
      EXPECT_TRUE(errno == EAGAIN || errno == EWOULDBLOCK) << strerror(errno);
      return;
    }
  }
}

void send_all_now(int fd, const std::string& data) {
  size_t offset = 0;
  send_some(fd, data, offset);
  ASSERT_EQ(offset, data.size()) << "the socket buffer should take this at once";
}

// Appends everything the socket holds now to `out`. False at end of file.
bool recv_available(int fd, std::string& out) {
  char buf[64 * 1024];
  while (true) {
    ssize_t n = recv(fd, buf, sizeof(buf), MSG_DONTWAIT);
    if (n > 0) {
      out.append(buf, static_cast<size_t>(n));
    } else if (n == 0) {
      return false;
    } else if (errno != EINTR) {
      return true;  // EAGAIN: nothing more for now
    }
  }
}

// True when a read would find nothing (and no end of file) right now.
bool nothing_to_read(int fd) {
  char c;
  ssize_t n = recv(fd, &c, 1, MSG_DONTWAIT | MSG_PEEK);
  return n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK);
}

// Bytes received by the kernel for `fd` that nobody has read yet.
int unread_bytes(int fd) {
  int n = -1;
  EXPECT_EQ(ioctl(fd, FIONREAD, &n), 0) << strerror(errno);
  return n;
}

// ---------------------------------------------------------------------------
// Payloads

// Each byte a hash of its offset: a lost, repeated or reordered piece of any
// size shows (a short repeating pattern would hide a lost period).
std::string pattern(size_t n, uint32_t seed = 0) {
  std::string s(n, '\0');
  for (size_t i = 0; i < n; ++i) {
    uint32_t x = (static_cast<uint32_t>(i) + seed) * 2654435761u;
    s[i] = static_cast<char>((x ^ (x >> 15)) & 0xff);
  }
  return s;
}

// Compares megabytes without gtest printing them all.
::testing::AssertionResult same_bytes(const std::string& got, const std::string& want) {
  if (got == want) return ::testing::AssertionSuccess();
  size_t common = std::min(got.size(), want.size());
  size_t at = static_cast<size_t>(
      std::mismatch(got.begin(), got.begin() + static_cast<ptrdiff_t>(common), want.begin()).first -
      got.begin());
  return ::testing::AssertionFailure() << "got " << got.size() << " bytes, want " << want.size()
                                       << "; first difference at offset " << at;
}

// ---------------------------------------------------------------------------
// The owner of a Stream, as a ClientConn or BackendConn is: it records what
// the stream reports and, by default, takes all input at each report.

struct Owner {
  std::unique_ptr<Stream> stream;
  std::vector<Happened> events;
  std::string received;  // input taken from the stream, in order
  bool take_input_on_report = true;
  size_t max_input = 0;             // largest input_length() at an `input` report
  bool empty_input_report = false;  // an `input` report came with no input
  // Runs after each report is recorded; may destroy the stream.
  std::function<void(Owner&, Happened)> then;

  Owner(StreamLoop& loop, int fd, size_t read_chunk = 16 * 1024, Reads reads = Reads::reserved)
      : stream(std::make_unique<Stream>(loop, fd, &Owner::on_stream, this, read_chunk, reads)) {}

  static void on_stream(void* self, Happened what) {
    auto* o = static_cast<Owner*>(self);
    o->events.push_back(what);
    if (what == Happened::input) {
      size_t have = o->stream->input_length();
      o->max_input = std::max(o->max_input, have);
      if (have == 0) o->empty_input_report = true;
      if (o->take_input_on_report) o->take_input();
    }
    if (o->then) o->then(*o, what);
  }

  void take_input() {
    evbuffer* in = stream->input();
    size_t n = evbuffer_get_length(in);
    size_t old = received.size();
    received.resize(old + n);
    ASSERT_EQ(evbuffer_remove(in, received.data() + old, n), static_cast<int>(n));
  }

  // Destroys the stream from inside its own callback, on the first of
  // these reports.
  void destroy_on(std::initializer_list<Happened> reports) {
    then = [reports = std::vector<Happened>(reports)](Owner& o, Happened what) {
      if (std::find(reports.begin(), reports.end(), what) != reports.end()) o.stream.reset();
    };
  }

  // Appends output the way the proxy does: written at the next flush.
  void send(const std::string& data) {
    evbuffer_add(stream->output(), data.data(), data.size());
    stream->mark_dirty();
  }

  int count(Happened what) const {
    return static_cast<int>(std::count(events.begin(), events.end(), what));
  }
};

// ---------------------------------------------------------------------------

// Every test runs three times: with each iteration's reads and writes
// batched in io_uring submissions (the proxy's default), with the writes
// alone batched, and with one read and one writev per stream.
enum class Mode { batched_io, batched_writes, one_by_one };

class StreamTest : public ::testing::TestWithParam<Mode> {
 protected:
  // A write to a closed peer must fail with EPIPE, not kill the test.
  static void SetUpTestSuite() { signal(SIGPIPE, SIG_IGN); }

  StreamTest() {
    // The tick keeps each EVLOOP_ONCE short even when no socket is ready.
    tick_ = event_new(base_, -1, EV_PERSIST, &StreamTest::on_tick, nullptr);
    timeval tv{0, kTickUsec};
    event_add(tick_, &tv);
    events_without_streams_ = event_base_get_num_events(base_, EVENT_BASE_COUNT_ADDED);
    loop_.batch_reads(GetParam() == Mode::batched_io);
  }
  ~StreamTest() override {
    event_free(tick_);
    event_base_free(base_);
  }
  void SetUp() override {
    if (batched() && !loop_.batching())
      GTEST_SKIP() << "io_uring is not available here: " << strerror(loop_.batching_error());
  }
  static bool batched() { return GetParam() != Mode::one_by_one; }
  static StreamLoop::Writes writes() {
    return batched() ? StreamLoop::Writes::batched : StreamLoop::Writes::one_by_one;
  }

  static void on_tick(evutil_socket_t, short, void*) {}

  // One worker iteration: wait for events (a tick at most), run their
  // callbacks, read what became readable, then write what they produced.
  // Without `flush`, only the loop's own events can write (a blocked
  // stream's write readiness).
  void iterate(bool flush = true) {
    event_base_loop(base_, EVLOOP_ONCE);
    loop_.read_ready();
    if (flush) loop_.flush();
  }

  // Runs the callbacks of what is ready now, once, without waiting, and
  // the reads they queued. (Not EVLOOP_NONBLOCK alone: that goes on while
  // anything is ready, forever for a stream that spins.)
  void poll_once() {
    event_base_loop(base_, EVLOOP_ONCE | EVLOOP_NONBLOCK);
    loop_.read_ready();
  }

  // Iterates until `done` (which may also play the peer's part) returns
  // true; false when the budget ran out first.
  bool run_until(const std::function<bool()>& done, bool flush = true) {
    auto deadline = Clock::now() + std::chrono::seconds(20);
    for (int i = 0; i < 20000 && Clock::now() < deadline; ++i) {
      if (done()) return true;
      iterate(flush);
    }
    return done();
  }

  void run_iterations(int n) {
    for (int i = 0; i < n; ++i) iterate();
  }

  // Plays a server: accepts one connection on `listener` and iterates
  // until `want` bytes came on it (or the budget ran out).
  std::string accept_and_read(int listener, size_t want) {
    Fd server;
    std::string got;
    run_until([&] {
      if (server.get() < 0) server.reset(accept4(listener, nullptr, nullptr, SOCK_NONBLOCK));
      if (server.get() >= 0) recv_available(server.get(), got);
      return got.size() >= want;
    });
    return got;
  }

  // Iterates for `duration`: a bounded wait for something that must not
  // happen.
  void run_for(milliseconds duration) {
    auto end = Clock::now() + duration;
    while (Clock::now() < end) iterate();
  }

  // Events the base waits on besides the tick: none means no stream can
  // wake the loop (so none can spin it).
  int stream_events() const {
    return event_base_get_num_events(base_, EVENT_BASE_COUNT_ADDED) - events_without_streams_;
  }

  event_base* base_ = event_base_new();
  StreamLoop loop_{base_, writes()};
  event* tick_ = nullptr;
  int events_without_streams_ = 0;
};

// ---------------------------------------------------------------------------
// 1. Output: written by flush(), once, intact.

TEST_P(StreamTest, OutputIsWrittenByFlushOnlyAndArrivesIntact) {
  SocketPair s = socket_pair();
  Owner owner(loop_, s.ours);
  owner.stream->watch_writes(true);  // counts the writes
  // Three replies made in one loop iteration, each followed by mark_dirty.
  const std::string parts[] = {"VALUE a 0 1\r\nx\r\nEND\r\n", pattern(50'000), "STORED\r\n"};
  std::string want;
  for (const std::string& p : parts) {
    owner.send(p);
    want += p;
  }
  EXPECT_EQ(owner.stream->output_length(), want.size());

  // Nothing leaves before flush(), not even while the loop runs.
  EXPECT_TRUE(nothing_to_read(s.peer.get()));
  poll_once();
  EXPECT_TRUE(nothing_to_read(s.peer.get()));
  EXPECT_TRUE(owner.events.empty());

  loop_.flush();
  EXPECT_EQ(owner.stream->output_length(), 0u);
  EXPECT_EQ(owner.count(Happened::written), 1);
  std::string got;
  EXPECT_TRUE(recv_available(s.peer.get(), got));
  EXPECT_TRUE(same_bytes(got, want));

  // The stream is clean again: another flush writes nothing.
  loop_.flush();
  EXPECT_EQ(owner.count(Happened::written), 1);
  EXPECT_TRUE(nothing_to_read(s.peer.get()));
}

// A SOCK_SEQPACKET pair keeps the boundary of every write: so the peer
// sees how many writes a flush made. All the output of one iteration must
// leave in one.
TEST_P(StreamTest, OneFlushIsOneWrite) {
  SocketPair s = socket_pair(SOCK_SEQPACKET);
  Owner owner(loop_, s.ours);
  std::string middle = pattern(8000);
  owner.send("first\r\n");
  // By reference: a separate buffer chain, so the write is a writev.
  evbuffer_add_reference(owner.stream->output(), middle.data(), middle.size(), nullptr, nullptr);
  owner.stream->mark_dirty();
  owner.send("last\r\n");
  loop_.flush();

  std::string record(64 * 1024, '\0');
  ssize_t n = recv(s.peer.get(), record.data(), record.size(), MSG_DONTWAIT);
  ASSERT_GT(n, 0) << strerror(errno);
  record.resize(static_cast<size_t>(n));
  EXPECT_TRUE(same_bytes(record, "first\r\n" + middle + "last\r\n"));
  EXPECT_TRUE(nothing_to_read(s.peer.get())) << "more than one write";
}

// An owner that holds back the tail of its output (BackendConn's open
// multi-get line) is told just before the write, once per flush, and what
// it appends then leaves in that same write.
TEST_P(StreamTest, FlushingComesBeforeTheWriteAndItsBytesJoinIt) {
  SocketPair s = socket_pair(SOCK_SEQPACKET);
  Owner owner(loop_, s.ours);
  owner.stream->watch_flush(true);
  int flushing_seen = 0;
  owner.then = [&](Owner& o, Happened what) {
    if (what != Happened::flushing) return;
    ++flushing_seen;
    // Nothing was written yet when the owner hears of the flush.
    EXPECT_TRUE(nothing_to_read(s.peer.get()));
    o.send("get a b\r\n");
  };
  owner.send("set k 0 0 1\r\nx\r\n");
  poll_once();
  EXPECT_EQ(flushing_seen, 0) << "reported before the loop's flush";
  loop_.flush();
  EXPECT_EQ(flushing_seen, 1);
  std::string record(4096, '\0');
  ssize_t n = recv(s.peer.get(), record.data(), record.size(), MSG_DONTWAIT);
  ASSERT_GT(n, 0) << strerror(errno);
  record.resize(static_cast<size_t>(n));
  EXPECT_EQ(record, "set k 0 0 1\r\nx\r\nget a b\r\n");
  EXPECT_TRUE(nothing_to_read(s.peer.get())) << "more than one write";

  // A clean stream is not flushed, so not told either.
  loop_.flush();
  EXPECT_EQ(flushing_seen, 1);
}

TEST_P(StreamTest, FlushingIsReportedOnlyWhenWatched) {
  SocketPair s = socket_pair();
  Owner owner(loop_, s.ours);
  owner.send("x\r\n");
  loop_.flush();
  EXPECT_EQ(owner.count(Happened::flushing), 0);
  owner.stream->watch_flush(true);
  owner.send("y\r\n");
  loop_.flush();
  EXPECT_EQ(owner.count(Happened::flushing), 1);
  std::string got;
  EXPECT_TRUE(recv_available(s.peer.get(), got));
  EXPECT_EQ(got, "x\r\ny\r\n");
}

// Destroyed or closed by its owner on `flushing`: nothing is written and
// the other dirty streams are still flushed.
TEST_P(StreamTest, DestroyedOrClosedOnFlushing) {
  SocketPair a = socket_pair(), b = socket_pair(), c = socket_pair();
  Owner first(loop_, a.ours), second(loop_, b.ours), third(loop_, c.ours);
  first.stream->watch_flush(true);
  second.stream->watch_flush(true);
  first.destroy_on({Happened::flushing});
  second.then = [](Owner& o, Happened what) {
    if (what == Happened::flushing) o.stream->close();
  };
  first.send("lost\r\n");
  second.send("lost too\r\n");
  third.send("kept\r\n");
  loop_.flush();
  EXPECT_EQ(first.stream, nullptr);
  std::string got;
  EXPECT_FALSE(recv_available(a.peer.get(), got));
  EXPECT_EQ(got, "");
  EXPECT_FALSE(recv_available(b.peer.get(), got));
  EXPECT_EQ(got, "");
  EXPECT_TRUE(recv_available(c.peer.get(), got));
  EXPECT_EQ(got, "kept\r\n");
}

// ---------------------------------------------------------------------------
// 2. Input: large payloads arrive byte-exact in both read modes, with and
// without an input limit (the owner takes the input at each report, as
// ClientConn and BackendConn do).

TEST_P(StreamTest, LargeInputArrivesByteExact) {
  const std::string payload = pattern(1 << 20, 7);
  for (Reads reads : {Reads::reserved, Reads::compact}) {
    for (size_t limit : {SIZE_MAX, size_t{5000}}) {
      SCOPED_TRACE(::testing::Message()
                   << (reads == Reads::compact ? "compact" : "reserved") << " limit " << limit);
      SocketPair s = socket_pair();
      Owner owner(loop_, s.ours, 16 * 1024, reads);
      owner.stream->set_input_limit(limit);
      size_t sent = 0;
      ASSERT_TRUE(run_until([&] {
        send_some(s.peer.get(), payload, sent);
        return owner.received.size() == payload.size();
      })) << owner.received.size()
          << " of " << payload.size() << " bytes arrived";
      EXPECT_TRUE(same_bytes(owner.received, payload));
      // Many reports, each with new bytes, and nothing but input.
      EXPECT_GT(owner.count(Happened::input), 4);
      EXPECT_EQ(owner.count(Happened::input), static_cast<int>(owner.events.size()));
      EXPECT_FALSE(owner.empty_input_report);
      EXPECT_LE(owner.max_input, limit);
    }
  }
}

// ---------------------------------------------------------------------------
// 3. The input limit: reading stops once the input holds the limit, and
// resumes when the owner has taken input and calls update().

TEST_P(StreamTest, InputLimitStopsReadingUntilUpdate) {
  // A read chunk much smaller than the limit: several reads per fill.
  constexpr size_t kLimit = 1000;
  constexpr size_t kChunk = 256;
  const std::string payload = pattern(12 * 1024, 3);  // a dozen fills
  for (Reads reads : {Reads::reserved, Reads::compact}) {
    SCOPED_TRACE(reads == Reads::compact ? "compact" : "reserved");
    SocketPair s = socket_pair();
    Owner owner(loop_, s.ours, kChunk, reads);
    owner.take_input_on_report = false;  // the owner is slow
    owner.stream->set_input_limit(kLimit);
    send_all_now(s.peer.get(), payload);

    size_t max_input = 0;
    for (int round = 0; round < 1000 && owner.received.size() < payload.size(); ++round) {
      size_t left = payload.size() - owner.received.size();
      ASSERT_TRUE(run_until([&] { return owner.stream->input_length() >= std::min(kLimit, left); }))
          << "round " << round << ": reading did not resume";
      // Once at the limit, further iterations read nothing more.
      size_t held = owner.stream->input_length();
      run_iterations(3);
      EXPECT_EQ(owner.stream->input_length(), held);
      if (held < left) {
        EXPECT_EQ(unread_bytes(s.ours), static_cast<int>(left - held));
      }
      max_input = std::max(max_input, held);
      owner.take_input();
      owner.stream->update();
    }
    EXPECT_TRUE(same_bytes(owner.received, payload));
    // Each read asks for at most limit - held bytes, so the input fills up
    // to the limit exactly, never past it (let alone past limit + chunk).
    EXPECT_EQ(max_input, kLimit);
  }
}

// ---------------------------------------------------------------------------
// 4. set_reading.

TEST_P(StreamTest, SetReadingFalsePausesInput) {
  SocketPair s = socket_pair();
  Owner owner(loop_, s.ours);
  owner.stream->set_reading(false);
  send_all_now(s.peer.get(), "get a\r\n");
  run_iterations(10);
  EXPECT_TRUE(owner.events.empty());
  EXPECT_EQ(unread_bytes(s.ours), 7) << "the bytes wait in the socket";

  owner.stream->set_reading(true);
  ASSERT_TRUE(run_until([&] { return owner.received == "get a\r\n"; }));
  EXPECT_EQ(owner.events, std::vector<Happened>{Happened::input});

  // Off again in the middle of a conversation.
  owner.stream->set_reading(false);
  send_all_now(s.peer.get(), "get b\r\n");
  run_iterations(10);
  EXPECT_EQ(owner.received, "get a\r\n");
  owner.stream->set_reading(true);
  ASSERT_TRUE(run_until([&] { return owner.received == "get a\r\nget b\r\n"; }));
}

// ---------------------------------------------------------------------------
// 5. End of file.

TEST_P(StreamTest, EofComesAfterTheLastInputAndOnlyOnce) {
  SocketPair s = socket_pair();
  Owner owner(loop_, s.ours);
  send_all_now(s.peer.get(), "last words");
  ASSERT_EQ(shutdown(s.peer.get(), SHUT_WR), 0);
  ASSERT_TRUE(run_until([&] { return owner.count(Happened::eof) > 0; }));
  EXPECT_EQ(owner.events, (std::vector<Happened>{Happened::input, Happened::eof}));
  EXPECT_EQ(owner.received, "last words");

  // No busy loop: the stream waits on nothing now (level-triggered read
  // interest on a closed socket would wake every iteration), and more
  // iterations report nothing.
  EXPECT_EQ(stream_events(), 0);
  for (int i = 0; i < 20; ++i) poll_once();
  run_iterations(10);
  EXPECT_EQ(owner.events.size(), 2u);

  // Half-closed: the peer still reads what is sent to it (a client that
  // sent its last request and shut down its side waits for the reply).
  owner.send("reply\r\n");
  loop_.flush();
  std::string got;
  recv_available(s.peer.get(), got);
  EXPECT_EQ(got, "reply\r\n");
}

TEST_P(StreamTest, EofAfterLargeInput) {
  const std::string payload = pattern(300 * 1024, 11);
  SocketPair s = socket_pair();
  Owner owner(loop_, s.ours, 4096, Reads::compact);
  size_t sent = 0;
  bool shut = false;
  ASSERT_TRUE(run_until([&] {
    send_some(s.peer.get(), payload, sent);
    if (sent == payload.size() && !shut) shut = shutdown(s.peer.get(), SHUT_WR) == 0;
    return owner.count(Happened::eof) > 0;
  }));
  EXPECT_TRUE(same_bytes(owner.received, payload));
  EXPECT_EQ(owner.count(Happened::eof), 1);
  EXPECT_EQ(owner.events.back(), Happened::eof);
  run_iterations(10);
  EXPECT_EQ(owner.count(Happened::eof), 1);
  EXPECT_EQ(stream_events(), 0);
}

TEST_P(StreamTest, EofWithoutInput) {
  SocketPair s = socket_pair();
  Owner owner(loop_, s.ours);
  s.peer.reset();
  ASSERT_TRUE(run_until([&] { return !owner.events.empty(); }));
  run_iterations(10);
  EXPECT_EQ(owner.events, std::vector<Happened>{Happened::eof});
}

// ---------------------------------------------------------------------------
// 6. A peer that does not read.

TEST_P(StreamTest, OutputTheKernelRefusedIsWrittenWhenThePeerReads) {
  SocketPair s = socket_pair();
  Owner owner(loop_, s.ours);
  owner.stream->watch_writes(true);
  const std::string payload = pattern(4 << 20, 5);  // far more than the socket buffers hold
  owner.send(payload);
  loop_.flush();
  size_t left = owner.stream->output_length();
  EXPECT_GT(left, 0u) << "the socket took 4 MiB at once";
  EXPECT_LT(left, payload.size());
  EXPECT_EQ(owner.count(Happened::written), 1);

  // The peer still reads nothing: nothing more can go.
  run_iterations(5);
  EXPECT_EQ(owner.stream->output_length(), left);

  // Now it reads. No flush() from here on: only the stream's own write
  // interest can deliver the rest.
  std::string got;
  ASSERT_TRUE(run_until(
      [&] {
        recv_available(s.peer.get(), got);
        return got.size() == payload.size();
      },
      /*flush=*/false))
      << got.size() << " of " << payload.size() << " bytes arrived";
  EXPECT_TRUE(same_bytes(got, payload));
  EXPECT_EQ(owner.stream->output_length(), 0u);
  EXPECT_GT(owner.count(Happened::written), 1) << "written not reported for the later writes";
  EXPECT_EQ(owner.count(Happened::written), static_cast<int>(owner.events.size()));

  // Output empty: write interest is off again, the stream waits for input
  // only, and a new reply goes out at the next flush.
  run_iterations(3);
  int written = owner.count(Happened::written);
  owner.send("more");
  loop_.flush();
  got.clear();
  recv_available(s.peer.get(), got);
  EXPECT_EQ(got, "more");
  EXPECT_EQ(owner.count(Happened::written), written + 1);
}

// A connected loopback TCP pair: `ours` non-blocking for a Stream, `peer`
// blocking for the test (reset_on_close() means nothing to a Unix socket).
SocketPair tcp_pair() {
  SocketAddress address;
  Fd listener = tcp_socket(address, true);
  // Not an Fd: the Stream owns it from now on.
  const int ours = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  EXPECT_EQ(connect(ours, reinterpret_cast<const sockaddr*>(&address.storage), address.length), 0)
      << strerror(errno);
  Fd peer;
  while (peer.get() < 0 && !::testing::Test::HasFailure()) {
    peer.reset(accept4(listener.get(), nullptr, nullptr, SOCK_CLOEXEC));
    if (peer.get() < 0 && errno != EAGAIN && errno != EINTR) ADD_FAILURE() << strerror(errno);
  }
  EXPECT_EQ(fcntl(ours, F_SETFL, fcntl(ours, F_GETFL) | O_NONBLOCK), 0);
  return {ours, std::move(peer)};
}

// A plain close leaves what the kernel still holds to be delivered when the
// peer reads at last; a reset drops it (what the peer's kernel already
// holds still arrives), and the peer's read ends in ECONNRESET.
TEST_P(StreamTest, ResetOnCloseDropsWhatTheKernelStillHeld) {
  const std::string payload = pattern(4 << 20, 9);  // far more than the socket buffers hold
  for (const bool reset : {false, true}) {
    SCOPED_TRACE(reset ? "reset" : "plain close");
    SocketPair s = tcp_pair();
    Owner owner(loop_, s.ours);
    owner.send(payload);
    loop_.flush();
    // Every write the kernel takes before the peer reads anything.
    run_iterations(5);
    const size_t unwritten = owner.stream->output_length();
    ASSERT_GT(unwritten, 0u) << "the socket took 4 MiB at once";
    if (reset) owner.stream->reset_on_close();
    owner.stream->close();
    int end = -1;
    const size_t got = memshard::testing::read_until_closed(s.peer.get(), end);
    if (reset) {
      EXPECT_EQ(end, ECONNRESET) << strerror(end);
      EXPECT_LT(got, (payload.size() - unwritten) / 2);
    } else {
      EXPECT_EQ(end, 0) << strerror(end);
      EXPECT_EQ(got, payload.size() - unwritten) << "everything the kernel took arrives";
    }
  }
}

// ---------------------------------------------------------------------------
// 7. connect().

TEST_P(StreamTest, ConnectWritesTheOutputAppendedMeanwhile) {
  SocketAddress address;
  Fd listener = tcp_socket(address, /*listening=*/true);
  Owner owner(loop_, -1);
  ASSERT_TRUE(owner.stream->connect(address)) << strerror(errno);
  // As BackendConn does: requests queued before the connection is up.
  owner.send("get a\r\n");
  owner.send("get b\r\n");
  loop_.flush();  // must neither write nor fail while connecting

  Fd server;
  std::string got;
  ASSERT_TRUE(run_until([&] {
    if (server.get() < 0) server.reset(accept4(listener.get(), nullptr, nullptr, SOCK_NONBLOCK));
    if (server.get() >= 0) recv_available(server.get(), got);
    return got.size() >= 14;
  })) << "connected "
      << owner.count(Happened::connected) << ", got '" << got << "'";
  EXPECT_EQ(got, "get a\r\nget b\r\n");
  EXPECT_EQ(owner.events, std::vector<Happened>{Happened::connected});
  EXPECT_EQ(owner.stream->output_length(), 0u);

  // And the other way.
  send_all_now(server.get(), "END\r\n");
  ASSERT_TRUE(run_until([&] { return owner.received == "END\r\n"; }));
}

TEST_P(StreamTest, ConnectToAClosedPortFails) {
  SocketAddress address;
  Fd bound = tcp_socket(address, /*listening=*/false);  // refuses connections
  Owner owner(loop_, -1);
  errno = 0;
  if (owner.stream->connect(address)) {
    owner.send("get a\r\n");  // queued, never to be written
    ASSERT_TRUE(run_until([&] { return !owner.events.empty(); }));
    EXPECT_EQ(owner.events, std::vector<Happened>{Happened::error});
  } else {
    EXPECT_EQ(errno, ECONNREFUSED);
  }
  // Failed for good: no more reports, nothing to wait for.
  run_iterations(10);
  EXPECT_EQ(owner.count(Happened::connected), 0);
  EXPECT_LE(owner.count(Happened::error), 1);
  EXPECT_EQ(stream_events(), 0);
}

// An IPv6 link-local address without a scope: connect() refuses it at once
// (EINVAL), as it refuses ::1 on a host without IPv6.
SocketAddress unroutable_v6(uint16_t port) {
  SocketAddress a;
  sockaddr_in6 six{};
  six.sin6_family = AF_INET6;
  six.sin6_port = htons(port);
  six.sin6_addr.s6_addr[0] = 0xfe;
  six.sin6_addr.s6_addr[1] = 0x80;
  six.sin6_addr.s6_addr[15] = 1;
  std::memcpy(&a.storage, &six, sizeof(six));
  a.length = sizeof(six);
  return a;
}

// A name such as localhost resolves to ::1 first on a standard Debian host,
// where memcached listens on 127.0.0.1 only: the stream must go on to the
// next address, with the output queued meanwhile, and say which answered.
TEST_P(StreamTest, ConnectMovesOnFromARefusingAddress) {
  SocketAddress refusing, answering;
  Fd bound = tcp_socket(refusing, /*listening=*/false);
  Fd listener = tcp_socket(answering, /*listening=*/true);
  std::vector<SocketAddress> addresses = {refusing, answering};
  Owner owner(loop_, -1);
  ASSERT_TRUE(owner.stream->connect(addresses)) << strerror(errno);
  owner.send("get a\r\n");
  loop_.flush();
  std::string got = accept_and_read(listener.get(), 7);
  EXPECT_EQ(got, "get a\r\n");
  EXPECT_EQ(owner.events, std::vector<Happened>{Happened::connected});
  EXPECT_EQ(owner.stream->target(), 1u);
  ASSERT_NE(owner.stream->peer(), nullptr);
  EXPECT_TRUE(*owner.stream->peer() == answering);
}

TEST_P(StreamTest, ConnectMovesOnFromAnAddressRefusedAtOnce) {
  SocketAddress answering;
  Fd listener = tcp_socket(answering, /*listening=*/true);
  std::vector<SocketAddress> addresses = {unroutable_v6(11211), answering};
  Owner owner(loop_, -1);
  ASSERT_TRUE(owner.stream->connect(addresses)) << strerror(errno);
  EXPECT_EQ(owner.stream->target(), 1u);
  owner.send("version\r\n");
  std::string got = accept_and_read(listener.get(), 9);
  EXPECT_EQ(got, "version\r\n");
  EXPECT_EQ(owner.events, std::vector<Happened>{Happened::connected});
}

// The address that answered last is tried first (BackendServer passes it),
// and the ones before it are still tried when it stops answering.
TEST_P(StreamTest, ConnectStartsAtTheGivenAddressAndGoesRound) {
  SocketAddress answering, refusing;
  Fd listener = tcp_socket(answering, /*listening=*/true);
  Fd bound = tcp_socket(refusing, /*listening=*/false);
  std::vector<SocketAddress> addresses = {answering, refusing};
  Owner owner(loop_, -1);
  ASSERT_TRUE(owner.stream->connect(addresses, /*first=*/1)) << strerror(errno);
  owner.send("get b\r\n");
  std::string got = accept_and_read(listener.get(), 7);
  EXPECT_EQ(got, "get b\r\n");
  EXPECT_EQ(owner.stream->target(), 0u);
}

TEST_P(StreamTest, ConnectFailsOnlyWhenEveryAddressFailed) {
  SocketAddress a, b;
  Fd bound_a = tcp_socket(a, /*listening=*/false);
  Fd bound_b = tcp_socket(b, /*listening=*/false);
  std::vector<SocketAddress> addresses = {a, unroutable_v6(11211), b};
  Owner owner(loop_, -1);
  if (owner.stream->connect(addresses)) {
    owner.send("get a\r\n");
    ASSERT_TRUE(run_until([&] { return !owner.events.empty(); }));
    EXPECT_EQ(owner.events, std::vector<Happened>{Happened::error});
  } else {
    EXPECT_EQ(errno, ECONNREFUSED);
  }
  run_iterations(10);
  EXPECT_EQ(owner.count(Happened::connected), 0);
  EXPECT_LE(owner.count(Happened::error), 1);
  EXPECT_EQ(stream_events(), 0);
}

// ---------------------------------------------------------------------------
// 8. An owner may destroy its stream inside any report; a destroyed stream
// is never touched again. (Most telling under AddressSanitizer.)

TEST_P(StreamTest, DestroyedOnInput) {
  SocketPair s = socket_pair();
  Owner owner(loop_, s.ours);
  owner.destroy_on({Happened::input});
  send_all_now(s.peer.get(), "quit\r\n");
  ASSERT_TRUE(run_until([&] { return owner.stream == nullptr; }));
  run_iterations(5);
  EXPECT_EQ(owner.events, std::vector<Happened>{Happened::input});
  std::string got;
  EXPECT_FALSE(recv_available(s.peer.get(), got)) << "the socket was not closed";
}

// Input with the end of file right behind it: destroyed on the input, the
// stream must not go on to read or report the end of file.
TEST_P(StreamTest, DestroyedOnInputBeforeEof) {
  SocketPair s = socket_pair();
  Owner owner(loop_, s.ours);
  owner.destroy_on({Happened::input});
  send_all_now(s.peer.get(), "quit\r\n");
  shutdown(s.peer.get(), SHUT_WR);
  ASSERT_TRUE(run_until([&] { return owner.stream == nullptr; }));
  run_iterations(5);
  EXPECT_EQ(owner.events, std::vector<Happened>{Happened::input});
}

TEST_P(StreamTest, DestroyedOnEof) {
  SocketPair s = socket_pair();
  Owner owner(loop_, s.ours);
  owner.destroy_on({Happened::eof});
  s.peer.reset();
  ASSERT_TRUE(run_until([&] { return owner.stream == nullptr; }));
  run_iterations(5);
  EXPECT_EQ(owner.events, std::vector<Happened>{Happened::eof});
}

// The write of a flush fails (EPIPE: the peer has closed) and the owner
// destroys the stream on the error; the flush goes on with the next stream.
TEST_P(StreamTest, DestroyedOnErrorDuringFlush) {
  SocketPair gone = socket_pair();
  SocketPair alive = socket_pair();
  Owner failing(loop_, gone.ours);
  Owner healthy(loop_, alive.ours);
  failing.destroy_on({Happened::error});
  gone.peer.reset();
  failing.send("get a\r\n");
  healthy.send("get b\r\n");
  loop_.flush();  // before any loop iteration could see the end of file
  EXPECT_EQ(failing.stream, nullptr);
  EXPECT_EQ(failing.events, std::vector<Happened>{Happened::error});
  std::string got;
  recv_available(alive.peer.get(), got);
  EXPECT_EQ(got, "get b\r\n");
  run_iterations(5);
  EXPECT_TRUE(healthy.events.empty());
}

// The same from the loop: output waits for write readiness when the peer
// closes, so the retried write fails inside the stream's event handler.
TEST_P(StreamTest, DestroyedOnErrorWhileWaitingToWrite) {
  SocketPair s = socket_pair();
  Owner owner(loop_, s.ours);
  owner.destroy_on({Happened::error, Happened::eof});
  owner.send(pattern(4 << 20));
  loop_.flush();
  ASSERT_GT(owner.stream->output_length(), 0u);
  s.peer.reset();
  ASSERT_TRUE(run_until([&] { return owner.stream == nullptr; }));
  run_iterations(5);
  EXPECT_EQ(owner.events.size(), 1u);
}

TEST_P(StreamTest, DestroyedOnWrittenDuringFlush) {
  SocketPair s = socket_pair();
  Owner owner(loop_, s.ours);
  owner.stream->watch_writes(true);
  owner.destroy_on({Happened::written});
  owner.send("bye\r\n");
  loop_.flush();
  EXPECT_EQ(owner.stream, nullptr);
  std::string got;
  EXPECT_FALSE(recv_available(s.peer.get(), got));
  EXPECT_EQ(got, "bye\r\n");
}

TEST_P(StreamTest, DestroyedOnConnected) {
  SocketAddress address;
  Fd listener = tcp_socket(address, /*listening=*/true);
  Owner owner(loop_, -1);
  owner.destroy_on({Happened::connected});
  ASSERT_TRUE(owner.stream->connect(address)) << strerror(errno);
  owner.send("never sent\r\n");
  ASSERT_TRUE(run_until([&] { return owner.stream == nullptr; }));
  run_iterations(5);
  EXPECT_EQ(owner.events, std::vector<Happened>{Happened::connected});
}

// A stream destroyed (or closed) while dirty is dropped from the flush.
TEST_P(StreamTest, DestroyedOrClosedWhileDirtyIsNotFlushed) {
  SocketPair a = socket_pair();
  SocketPair b = socket_pair();
  SocketPair c = socket_pair();
  Owner destroyed(loop_, a.ours);
  Owner closed(loop_, b.ours);
  Owner kept(loop_, c.ours);
  destroyed.send("a");
  closed.send("b");
  kept.send("c");
  destroyed.stream.reset();
  closed.stream->close();
  loop_.flush();

  std::string got;
  EXPECT_FALSE(recv_available(a.peer.get(), got));
  EXPECT_FALSE(recv_available(b.peer.get(), got));
  EXPECT_EQ(got, "") << "a closed stream drops its output";
  EXPECT_TRUE(recv_available(c.peer.get(), got));
  EXPECT_EQ(got, "c");
  EXPECT_TRUE(closed.events.empty());
  // A closed stream can no longer be made dirty.
  closed.send("b again");
  loop_.flush();
  EXPECT_EQ(closed.stream->output_length(), 7u);  // kept, never written: no socket
}

// Reports during a flush may destroy streams still waiting in that flush,
// and make others dirty; those are written by the same flush.
TEST_P(StreamTest, FlushCopesWithStreamsChangedByReports) {
  SocketPair a = socket_pair();
  SocketPair b = socket_pair();
  SocketPair c = socket_pair();
  Owner first(loop_, a.ours);
  Owner victim(loop_, b.ours);
  Owner late(loop_, c.ours);
  first.stream->watch_writes(true);
  first.then = [&](Owner&, Happened what) {
    if (what != Happened::written) return;
    victim.stream.reset();
    late.send("late");
  };
  first.send("first");
  victim.send("victim");  // dirty after `first`
  loop_.flush();

  std::string got;
  recv_available(a.peer.get(), got);
  EXPECT_EQ(got, "first");
  got.clear();
  EXPECT_FALSE(recv_available(b.peer.get(), got));
  // Batched, the victim's bytes left with first's, in one submission,
  // before any report; one by one, the victim was gone before its turn.
  EXPECT_EQ(got, batched() ? "victim" : "");
  got.clear();
  recv_available(c.peer.get(), got);
  EXPECT_EQ(got, "late") << "a stream made dirty during the flush is written by it too";
}

// After an error the stream is unusable: it reports nothing more, even to
// an owner that keeps it. Here the peer closes with our output blocked, so
// the socket is readable (end of file) and writable (EPIPE) at once.
TEST_P(StreamTest, ErrorIsTheLastReport) {
  SocketPair s = socket_pair();
  Owner owner(loop_, s.ours);
  owner.send(pattern(4 << 20));
  loop_.flush();
  ASSERT_GT(owner.stream->output_length(), 0u);
  s.peer.reset();
  ASSERT_TRUE(run_until([&] { return !owner.events.empty(); }));
  run_iterations(10);
  ASSERT_FALSE(owner.events.empty());
  EXPECT_EQ(owner.events, std::vector<Happened>{Happened::error});
  EXPECT_EQ(stream_events(), 0);
}

// ---------------------------------------------------------------------------
// 9. Compact streams free their buffers when empty, and make them again.

TEST_P(StreamTest, CompactStreamWorksAfterItsBuffersWereFreed) {
  SocketPair s = socket_pair();
  Owner owner(loop_, s.ours, 16 * 1024, Reads::compact);
  // A line-based server: answers each complete line with its length;
  // leaves an incomplete line in the input.
  owner.take_input_on_report = false;
  owner.then = [](Owner& o, Happened what) {
    if (what != Happened::input) return;
    evbuffer* in = o.stream->input();
    while (true) {
      evbuffer_ptr eol = evbuffer_search(in, "\n", 1, nullptr);
      if (eol.pos < 0) break;
      size_t n = static_cast<size_t>(eol.pos) + 1;
      std::string line(n, '\0');
      evbuffer_remove(in, line.data(), n);
      o.received += line;
      o.send(std::to_string(n) + ":" + line.substr(0, 8) + "\n");
    }
  };

  std::string replies;
  // Sends `request`, which completes the line `consumed` (the request by
  // default), and waits for `reply`.
  auto exchange = [&](const std::string& request, const std::string& reply,
                      std::string consumed = "") {
    if (consumed.empty()) consumed = request;
    size_t sent = 0;
    std::string want_received = owner.received + consumed;
    std::string want_replies = replies + reply;
    ASSERT_TRUE(run_until([&] {
      send_some(s.peer.get(), request, sent);
      recv_available(s.peer.get(), replies);
      return replies.size() >= want_replies.size();
    }));
    EXPECT_TRUE(same_bytes(owner.received, want_received));
    EXPECT_EQ(replies, want_replies);
    // Request consumed, reply written: both buffers empty (and freed).
    EXPECT_EQ(owner.stream->input_length(), 0u);
    EXPECT_EQ(owner.stream->output_length(), 0u);
  };

  exchange("get a\n", "6:get a\n\n");
  exchange("get b\n", "6:get b\n\n");
  // Larger than a read chunk: lands partly in scratch, then straight in.
  std::string big = "set " + pattern(100'000, 9);
  std::replace(big.begin(), big.end(), '\n', ' ');
  big += "\n";
  exchange(big, std::to_string(big.size()) + ":" + big.substr(0, 8) + "\n");
  exchange("get c\n", "6:get c\n\n");

  // Half a line, then the rest: the input is kept in between.
  send_all_now(s.peer.get(), "get ");
  ASSERT_TRUE(run_until([&] { return owner.stream->input_length() == 4; }));
  exchange("long\n", "9:get long\n", "get long\n");

  // Output made outside any report (a backend reply arriving for a client).
  owner.send("unsolicited\n");
  loop_.flush();
  std::string got;
  recv_available(s.peer.get(), got);
  EXPECT_EQ(got, "unsolicited\n");
  exchange("get d\n", "6:get d\n\n");
  EXPECT_EQ(owner.count(Happened::input), static_cast<int>(owner.events.size()));
}

// A compact stream's buffers go back to the loop when empty and come from
// it again: requests cycle the same buffers instead of making new ones, and
// the loop keeps a bounded number, so closed or idle clients cost nothing.
TEST_P(StreamTest, EmptiedBuffersAreKeptByTheLoopUpToABound) {
  ASSERT_EQ(loop_.spare_buffers(), 0u);
  SocketPair s = socket_pair();
  Owner echo(loop_, s.ours, 16 * 1024, Reads::compact);
  echo.then = [](Owner& o, Happened what) {
    if (what == Happened::input) o.send(o.received.substr(o.received.size() - 2));
  };
  std::string replies;
  for (int i = 0; i < 3; ++i) {
    size_t sent = 0;
    std::string request = "r" + std::to_string(i);
    ASSERT_TRUE(run_until([&] {
      send_some(s.peer.get(), request, sent);
      recv_available(s.peer.get(), replies);
      return replies.size() == 2u * static_cast<size_t>(i + 1);
    }));
    // Input and output were both made and emptied: both are spares now,
    // the same two every time.
    EXPECT_EQ(echo.stream->input_length() + echo.stream->output_length(), 0u);
    EXPECT_EQ(loop_.spare_buffers(), 2u) << "request " << i;
  }
  EXPECT_EQ(replies, "r0r1r2");

  // Many streams closing with buffers, one with unsent output: the loop
  // keeps kMaxSpareBuffers of them and frees the rest.
  std::vector<SocketPair> pairs;
  std::vector<std::unique_ptr<Owner>> owners;
  for (size_t i = 0; i < StreamLoop::kMaxSpareBuffers; ++i) {
    pairs.push_back(socket_pair());
    owners.push_back(std::make_unique<Owner>(loop_, pairs.back().ours, 16 * 1024, Reads::compact));
    owners.back()->stream->input();
    evbuffer_add(owners.back()->stream->output(), "unsent", 6);
  }
  EXPECT_EQ(loop_.spare_buffers(), 0u);
  owners.clear();
  EXPECT_EQ(loop_.spare_buffers(), StreamLoop::kMaxSpareBuffers);

  // A stream that takes a spare finds it empty.
  SocketPair t = socket_pair();
  Owner next(loop_, t.ours, 16 * 1024, Reads::compact);
  EXPECT_EQ(evbuffer_get_length(next.stream->output()), 0u);
  EXPECT_EQ(evbuffer_get_length(next.stream->input()), 0u);
  EXPECT_EQ(loop_.spare_buffers(), StreamLoop::kMaxSpareBuffers - 2);
  next.send("fresh");
  loop_.flush();
  std::string got;
  recv_available(t.peer.get(), got);
  EXPECT_EQ(got, "fresh");
}

// ---------------------------------------------------------------------------
// Parking (proxy/parked_clients.h): a stream is quiet only when nothing is
// pending either way, and one that releases its socket stops watching it
// and leaves it open, with unread bytes still in it.

TEST_P(StreamTest, QuietOnlyWhenNothingIsPendingEitherWay) {
  SocketPair s = socket_pair();
  Owner owner(loop_, s.ours, 16 * 1024, Reads::compact);
  owner.take_input_on_report = false;
  EXPECT_TRUE(owner.stream->quiet());

  send_all_now(s.peer.get(), "get a\r\n");
  ASSERT_TRUE(run_until([&] { return owner.count(Happened::input) > 0; }));
  EXPECT_FALSE(owner.stream->quiet()) << "input not taken yet";
  owner.take_input();
  EXPECT_TRUE(owner.stream->quiet());

  owner.send("END\r\n");
  EXPECT_FALSE(owner.stream->quiet()) << "output not written yet";
  loop_.flush();
  EXPECT_TRUE(owner.stream->quiet());

  owner.stream->set_reading(false);
  EXPECT_FALSE(owner.stream->quiet()) << "not reading: held off by its owner";
  owner.stream->set_reading(true);
  EXPECT_TRUE(owner.stream->quiet());

  std::string reply;
  EXPECT_TRUE(recv_available(s.peer.get(), reply));
  EXPECT_EQ(reply, "END\r\n");
  s.peer.reset();  // the peer closes (having read all: else it is a reset)
  ASSERT_TRUE(run_until([&] { return owner.count(Happened::eof) > 0; }));
  EXPECT_FALSE(owner.stream->quiet());
}

TEST_P(StreamTest, ReleasedSocketIsLeftOpenAndUnwatched) {
  SocketPair s = socket_pair();
  int fd = s.ours;
  Owner owner(loop_, fd, 16 * 1024, Reads::compact);
  ASSERT_EQ(stream_events(), 1);
  EXPECT_EQ(owner.stream->release_fd(), fd);
  EXPECT_EQ(owner.stream->fd(), -1);
  EXPECT_EQ(stream_events(), 0) << "the released socket is still watched";

  // Bytes sent now wait in the socket: the stream reports nothing, and
  // destroying it does not close the socket.
  send_all_now(s.peer.get(), "get b\r\n");
  run_for(milliseconds(50));
  EXPECT_TRUE(owner.events.empty());
  owner.stream.reset();
  std::string got;
  EXPECT_TRUE(recv_available(fd, got));
  EXPECT_EQ(got, "get b\r\n");
  send_all_now(fd, "END\r\n");
  std::string back;
  EXPECT_TRUE(recv_available(s.peer.get(), back));
  EXPECT_EQ(back, "END\r\n");

  // A new stream on it carries on.
  Owner again(loop_, fd, 16 * 1024, Reads::compact);
  send_all_now(s.peer.get(), "get c\r\n");
  ASSERT_TRUE(run_until([&] { return again.received == "get c\r\n"; }));
}

// ---------------------------------------------------------------------------
// 11. Batches: many streams in one flush, each with what it must get.

// More streams than one submission carries: each peer gets exactly its own
// bytes, in order, and every stream reports one write.
TEST_P(StreamTest, ManyStreamsInOneFlushEachGetTheirOwnBytes) {
  constexpr size_t kStreams = IoBatch::kMaxOps + 44;
  std::vector<SocketPair> pairs;
  std::vector<std::unique_ptr<Owner>> owners;
  std::vector<std::string> want(kStreams);
  for (size_t i = 0; i < kStreams; ++i) {
    pairs.push_back(socket_pair());
    owners.push_back(std::make_unique<Owner>(loop_, pairs.back().ours));
    owners.back()->stream->watch_writes(true);
    // Three pieces, the middle by reference: more than one chain each.
    std::string middle = pattern(100 + i, static_cast<uint32_t>(i));
    owners.back()->send("VALUE k" + std::to_string(i) + "\r\n");
    evbuffer_add(owners.back()->stream->output(), middle.data(), middle.size());
    owners.back()->send("END\r\n");
    want[i] = "VALUE k" + std::to_string(i) + "\r\n" + middle + "END\r\n";
  }
  uint64_t batches = loop_.batches(), sends = loop_.batched_sends();
  loop_.flush();
  for (size_t i = 0; i < kStreams; ++i) {
    std::string got;
    EXPECT_TRUE(recv_available(pairs[i].peer.get(), got));
    EXPECT_TRUE(same_bytes(got, want[i])) << "stream " << i;
    EXPECT_EQ(owners[i]->stream->output_length(), 0u);
    EXPECT_EQ(owners[i]->count(Happened::written), 1) << "stream " << i;
  }
  if (batched()) {
    EXPECT_EQ(loop_.batches() - batches, 2u) << "one submission per kMaxOps streams";
    EXPECT_EQ(loop_.batched_sends() - sends, kStreams);
  } else {
    EXPECT_EQ(loop_.batches(), 0u);
  }
}

// In one flush: a stream whose peer is gone fails alone, a stream whose
// socket is full waits for write readiness and delivers everything once
// its peer reads, and the others are written.
TEST_P(StreamTest, OneFlushWithAFullSocketAndAClosedPeer) {
  SocketPair ok = socket_pair(), gone = socket_pair(), full = socket_pair();
  Owner fine(loop_, ok.ours), broken(loop_, gone.ours), blocked(loop_, full.ours);
  // Fill `full`'s socket before the stream writes: the kernel takes no more.
  const std::string filler = pattern(4 << 20, 3);
  size_t filled = 0;
  send_some(full.ours, filler, filled);
  ASSERT_GT(filled, 0u);
  ASSERT_LT(filled, filler.size());
  gone.peer.reset();

  fine.send("STORED\r\n");
  broken.send("END\r\n");
  blocked.send("VALUE a 0 1\r\nx\r\nEND\r\n");
  uint64_t sends = loop_.batched_sends();
  loop_.flush();
  if (batched()) {
    EXPECT_EQ(loop_.batched_sends() - sends, 3u);
  }

  std::string got;
  EXPECT_TRUE(recv_available(ok.peer.get(), got));
  EXPECT_EQ(got, "STORED\r\n");
  EXPECT_EQ(broken.count(Happened::error), 1);
  EXPECT_EQ(fine.count(Happened::error), 0);
  EXPECT_EQ(blocked.stream->output_length(), 21u) << "the full socket took bytes";
  EXPECT_EQ(blocked.count(Happened::error), 0);

  // The peer reads; only the stream's write interest can deliver the rest.
  const std::string want = filler.substr(0, filled) + "VALUE a 0 1\r\nx\r\nEND\r\n";
  std::string read;
  ASSERT_TRUE(run_until(
      [&] {
        recv_available(full.peer.get(), read);
        return read.size() >= want.size();
      },
      /*flush=*/false));
  EXPECT_TRUE(same_bytes(read, want));
  EXPECT_EQ(blocked.stream->output_length(), 0u);
}

// Output in more chains than one send takes (kIovPerSend): what the send
// left is written after it, in order.
TEST_P(StreamTest, OutputInManyChainsArrivesWhole) {
  SocketPair a = socket_pair(), b = socket_pair();
  Owner many(loop_, a.ours), other(loop_, b.ours);
  std::vector<std::string> pieces;
  for (int i = 0; i < 300; ++i) pieces.push_back(pattern(64 + i, static_cast<uint32_t>(i)));
  std::string want;
  for (const std::string& p : pieces) {
    // By reference: each piece its own chain.
    evbuffer_add_reference(many.stream->output(), p.data(), p.size(), nullptr, nullptr);
    want += p;
  }
  many.stream->mark_dirty();
  other.send("END\r\n");
  loop_.flush();
  std::string got;
  EXPECT_TRUE(recv_available(a.peer.get(), got));
  EXPECT_TRUE(same_bytes(got, want));
  got.clear();
  EXPECT_TRUE(recv_available(b.peer.get(), got));
  EXPECT_EQ(got, "END\r\n");
}

// ---------------------------------------------------------------------------
// 12. Reads: many streams readable in one iteration (one read_ready(),
// batched or not).

// More streams than one submission reads, compact and reserved, some with
// more than a read chunk waiting: each gets exactly its peer's bytes, in
// order, and with batched reads they come in two submissions.
TEST_P(StreamTest, ManyStreamsReadableAtOnceEachGetTheirOwnBytes) {
  constexpr size_t kStreams = StreamLoop::kReadsPerSubmission + 10;
  constexpr size_t kChunk = 4096;
  std::vector<SocketPair> pairs;
  std::vector<std::unique_ptr<Owner>> owners;
  std::vector<std::string> want(kStreams);
  for (size_t i = 0; i < kStreams; ++i) {
    pairs.push_back(socket_pair());
    owners.push_back(std::make_unique<Owner>(loop_, pairs.back().ours, kChunk,
                                             i % 2 == 0 ? Reads::compact : Reads::reserved));
    // Every seventh peer sends more than the stream's read chunk.
    want[i] = pattern(i % 7 == 0 ? 3 * kChunk + i : 20 + i, static_cast<uint32_t>(i));
  }
  for (size_t i = 0; i < kStreams; ++i) send_all_now(pairs[i].peer.get(), want[i]);
  const uint64_t reads = loop_.batched_reads(), batches = loop_.batches();
  ASSERT_TRUE(run_until([&] {
    for (size_t i = 0; i < kStreams; ++i)
      if (owners[i]->received.size() < want[i].size()) return false;
    return true;
  }));
  if (GetParam() == Mode::batched_io) {
    // libevent hands out at most 32 ready sockets from its first epoll_wait
    // (more later), so the first reads of all of them take two iterations
    // or more, each reading in submissions of kReadsPerSubmission at most.
    const uint64_t batched = loop_.batched_reads() - reads;
    EXPECT_GE(batched, kStreams);
    EXPECT_GE(loop_.batches() - batches, 2u);
    EXPECT_GE((loop_.batches() - batches) * StreamLoop::kReadsPerSubmission, batched);
  } else {
    EXPECT_EQ(loop_.batched_reads(), 0u);
  }
  for (size_t i = 0; i < kStreams; ++i) {
    EXPECT_TRUE(same_bytes(owners[i]->received, want[i])) << "stream " << i;
    EXPECT_FALSE(owners[i]->empty_input_report) << "stream " << i;
    EXPECT_EQ(owners[i]->count(Happened::eof), 0) << "stream " << i;
  }
}

// Input and end of file from many peers at once: each stream reports its
// input, then one eof.
TEST_P(StreamTest, InputThenEofFromManyPeersAtOnce) {
  constexpr size_t kStreams = 6;
  std::vector<SocketPair> pairs;
  std::vector<std::unique_ptr<Owner>> owners;
  for (size_t i = 0; i < kStreams; ++i) {
    pairs.push_back(socket_pair());
    owners.push_back(std::make_unique<Owner>(loop_, pairs.back().ours, 16 * 1024,
                                             i % 2 == 0 ? Reads::compact : Reads::reserved));
    send_all_now(pairs[i].peer.get(), "quit " + std::to_string(i) + "\r\n");
    pairs[i].peer.reset();
  }
  ASSERT_TRUE(run_until([&] {
    for (const auto& o : owners)
      if (o->count(Happened::eof) == 0) return false;
    return true;
  }));
  for (size_t i = 0; i < kStreams; ++i) {
    EXPECT_EQ(owners[i]->received, "quit " + std::to_string(i) + "\r\n") << "stream " << i;
    ASSERT_EQ(owners[i]->events.size(), 2u) << "stream " << i;
    EXPECT_EQ(owners[i]->events[0], Happened::input);
    EXPECT_EQ(owners[i]->events[1], Happened::eof);
  }
}

// A report that destroys or closes streams whose reads were made in the
// same iteration: they report nothing more, and the others are unharmed.
TEST_P(StreamTest, StreamsDestroyedOrClosedByAnotherStreamsReport) {
  SocketPair a = socket_pair(), b = socket_pair(), c = socket_pair(), d = socket_pair();
  Owner first(loop_, a.ours, 16 * 1024, Reads::compact);
  Owner destroyed(loop_, b.ours, 16 * 1024, Reads::compact);
  Owner closed(loop_, c.ours, 16 * 1024, Reads::reserved);
  Owner last(loop_, d.ours, 16 * 1024, Reads::reserved);
  // Whichever of them reports first ends the two in the middle.
  auto end_middle = [&](Owner&, Happened what) {
    if (what != Happened::input) return;
    destroyed.stream.reset();
    if (closed.stream != nullptr) closed.stream->close();
  };
  first.then = end_middle;
  last.then = end_middle;
  for (SocketPair* p : {&a, &b, &c, &d}) send_all_now(p->peer.get(), "get k\r\n");
  ASSERT_TRUE(run_until([&] { return first.received.size() == 7 && last.received.size() == 7; }));
  run_iterations(3);
  EXPECT_EQ(first.received, "get k\r\n");
  EXPECT_EQ(last.received, "get k\r\n");
  EXPECT_TRUE(destroyed.events.empty());
  EXPECT_TRUE(closed.events.empty());
  EXPECT_EQ(closed.stream->fd(), -1);
}

// Reading turned off by another stream's report, after this stream became
// readable in the same iteration: no byte is lost or read twice. Bytes
// already read (batched reads take every readable socket's before any
// report) are reported; the rest wait in the kernel, and nothing more is
// read until reading is on again.
TEST_P(StreamTest, ReadingTurnedOffByAnotherReportLosesNothing) {
  SocketPair a = socket_pair(), b = socket_pair();
  Owner first(loop_, a.ours, 16 * 1024, Reads::compact);
  Owner held(loop_, b.ours, 16 * 1024, Reads::compact);
  first.then = [&](Owner&, Happened what) {
    if (what == Happened::input) held.stream->set_reading(false);
  };
  send_all_now(a.peer.get(), "get a\r\n");
  send_all_now(b.peer.get(), "get b\r\n");
  ASSERT_TRUE(run_until([&] { return first.received == "get a\r\n"; }));
  run_iterations(3);
  EXPECT_EQ(held.received.size() + static_cast<size_t>(unread_bytes(b.ours)), 7u);
  EXPECT_TRUE(held.received.empty() || held.received == "get b\r\n") << held.received;
  // While reading is off, nothing more is read.
  const size_t before = held.received.size();
  send_all_now(b.peer.get(), "get c\r\n");
  run_iterations(3);
  EXPECT_EQ(held.received.size(), before);
  first.then = nullptr;
  held.stream->set_reading(true);
  ASSERT_TRUE(run_until([&] { return held.received.size() == 14; }));
  EXPECT_EQ(held.received, "get b\r\nget c\r\n");
}

INSTANTIATE_TEST_SUITE_P(Io, StreamTest,
                         ::testing::Values(Mode::batched_io, Mode::batched_writes,
                                           Mode::one_by_one),
                         [](const ::testing::TestParamInfo<Mode>& param) {
                           switch (param.param) {
                             case Mode::batched_io:
                               return "Batched";
                             case Mode::batched_writes:
                               return "BatchedWrites";
                             case Mode::one_by_one:
                               break;
                           }
                           return "OneByOne";
                         });

}  // namespace
}  // namespace memshard::proxy
