// ClientConn (clients/client_conn.h) on a socketpair and a real libevent
// loop, driven as a worker drives it (event_base_loop(EVLOOP_ONCE), then
// StreamLoop::flush()), its pool's routes built over fake servers: the test
// reads what the servers were sent and answers in the order it picks, and
// reads what the client got from the socket.
//
// Every loop is bounded by an iteration budget, and a repeating tick ends
// each iteration when nothing else is ready; nothing asserts how long
// something took.
#include "proxy/clients/client_conn.h"

#include <event2/event.h>
#include <gtest/gtest.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "proxy/protocol/binary.h"
#include "proxy/protocol/version.h"
#include "proxy/routes/broadcast_route.h"
#include "proxy/routes/key_route.h"
#include "proxy/routes/split_route.h"
#include "tests/proxy/routes/route_fakes.h"

namespace memshard::proxy::testing_fakes {
namespace {

// What a Worker is to its clients, minus everything else: one loop, its
// streams, a slot pool that counts, and one pool ("main") whose routes are
// over two fake servers.
class FakeContext final : public ClientContext {
 public:
  FakeContext() {
    conf::PoolConfig pc;
    pc.name = "main";
    ketama::ServerEntry entry;
    entry.host = "127.0.0.1";
    pool_ = std::make_unique<Pool>(
        Pool{pc, ketama::Ring::build({entry}, {}), {}, {}, {}, {}, {}, {}, {}});
    route_.pool = pool_.get();
    route_.stats = std::make_shared<PoolStats>();
    // The pool's routes as build_routes() makes them, over the fake
    // placement instead of the ring and backends.
    route_.key = std::make_unique<KeyRoute>(placement);
    route_.multi_get = std::make_unique<SplitRoute>(placement);
    route_.all = std::make_unique<BroadcastRoute>(placement);
  }
  ~FakeContext() { EXPECT_EQ(slots_out, 0) << "a client's slot was not given back"; }

  StreamLoop& streams() override { return streams_; }
  RequestScratch& scratch() override { return scratch_; }
  uint64_t now_usec() override { return now_; }
  WorkerStats& stats() override { return stats_; }
  const PoolRoute* route(const std::string& pool_name) const override {
    return pool_present && pool_name == "main" ? &route_ : nullptr;
  }
  uint64_t routes_epoch() const override { return epoch; }
  void retire(ClientConn* client) override { retired.push_back(client); }
  void append_stats(const std::vector<std::string_view>& args, std::string& out) override {
    stats_args.emplace_back();
    for (std::string_view a : args) stats_args.back().emplace_back(a);
    out.append("STAT pid 1\r\nEND\r\n");
  }
  void closed_foreign(const std::string& pool, Foreign what) override {
    foreign.emplace_back(pool, what);
  }
  std::vector<std::pair<std::string, Foreign>> foreign;
  ReplySlot* acquire_slot(SlotOwner* owner) override {
    auto* s = new ReplySlot();
    s->set_owner(owner);
    ++slots_out;
    return s;
  }
  void release_slot(ReplySlot* slot) override {
    --slots_out;
    delete slot;
  }

  event_base* base() const { return base_.get(); }

 private:
  struct BaseFree {
    void operator()(event_base* b) const { event_base_free(b); }
  };
  // Declared first: freed last, after the streams that use it.
  std::unique_ptr<event_base, BaseFree> base_{event_base_new()};
  StreamLoop streams_{base_.get(), StreamLoop::Writes::one_by_one};
  RequestScratch scratch_;
  WorkerStats stats_;
  std::unique_ptr<Pool> pool_;
  PoolRoute route_;
  uint64_t now_ = 1'000'000;

 public:
  FakeServer servers[2];
  FakePlacement placement{{&servers[0], &servers[1]}};
  bool pool_present = true;
  uint64_t epoch = 1;
  std::vector<ClientConn*> retired;
  std::vector<std::vector<std::string>> stats_args;
  long slots_out = 0;
};

class ClientConnTest : public testing::Test {
 protected:
  ClientConnTest() {
    ctx_.placement.where = {{"a", 0}, {"b", 1}, {"c", 0}};
    tick_ = event_new(
        ctx_.base(), -1, EV_PERSIST, [](evutil_socket_t, short, void*) {}, nullptr);
    timeval tv{0, 10'000};
    event_add(tick_, &tv);
  }
  ~ClientConnTest() override {
    delete client_;
    if (peer_ >= 0) close(peer_);
    event_free(tick_);
  }

  void connect() {
    int fds[2];
    ASSERT_EQ(socketpair(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0, fds), 0)
        << strerror(errno);
    peer_ = fds[1];
    client_ = new ClientConn(ctx_, fds[0], origin_, 7, ClientConn::Arrival::accepted);
  }

  void send_client(std::string_view bytes) {
    while (!bytes.empty()) {
      ssize_t n = ::send(peer_, bytes.data(), bytes.size(), MSG_NOSIGNAL);
      ASSERT_GT(n, 0) << strerror(errno);
      bytes.remove_prefix(static_cast<size_t>(n));
    }
  }

  // One worker iteration, then what a worker's reaper does with retired
  // clients, then what reached the client's end.
  void pump() {
    event_base_loop(ctx_.base(), EVLOOP_ONCE);
    ctx_.streams().flush();
    for (ClientConn* c : ctx_.retired) {
      if (c == client_) client_ = nullptr;
      delete c;
    }
    ctx_.retired.clear();
    char buf[65536];
    while (!eof_) {
      ssize_t n = recv(peer_, buf, sizeof(buf), 0);
      if (n > 0) {
        received_.append(buf, static_cast<size_t>(n));
      } else {
        if (n == 0) eof_ = true;
        break;
      }
    }
  }
  bool pump_until(const std::function<bool()>& done, int budget = 300) {
    for (int i = 0; i < budget && !done(); ++i) pump();
    return done();
  }
  void pump_some(int n = 5) {
    for (int i = 0; i < n; ++i) pump();
  }
  std::deque<SentOp>& ops(int server) { return ctx_.servers[server].box.ops; }
  bool has_ops(int server, size_t n) { return ops(server).size() >= n; }

  std::shared_ptr<const ClientOrigin> origin_ = std::make_shared<const ClientOrigin>(ClientOrigin{
      "main", std::make_shared<ClientCount>(std::make_shared<std::atomic<uint32_t>>(0)),
      std::make_shared<PoolStats>()});
  FakeContext ctx_;
  event* tick_ = nullptr;
  ClientConn* client_ = nullptr;
  int peer_ = -1;
  std::string received_;
  bool eof_ = false;
};

TEST_F(ClientConnTest, RepliesComeInRequestOrderWhenServersAnswerOutOfOrder) {
  connect();
  send_client("set a 0 0 1\r\nx\r\nget b\r\n");
  ASSERT_TRUE(pump_until([&] { return has_ops(0, 1) && has_ops(1, 1); }));
  EXPECT_EQ(ops(0)[0].bytes, "set a 0 0 1\r\nx\r\n");
  EXPECT_EQ(ops(1)[0].keys, std::vector<std::string>{"b"});

  answer_retrieval(ops(1)[0], {{"b", "y"}});
  pump_some();
  EXPECT_EQ(received_, "") << "the get's reply must wait for the set's";
  answer(ops(0)[0], "STORED\r\n");
  std::string want = "STORED\r\nVALUE b 0 1\r\ny\r\nEND\r\n";
  ASSERT_TRUE(pump_until([&] { return received_.size() >= want.size(); }));
  EXPECT_EQ(received_, want);
}

TEST_F(ClientConnTest, GetSplitAcrossServersIsMerged) {
  connect();
  send_client("get a b c\r\n");
  ASSERT_TRUE(pump_until([&] { return has_ops(0, 1) && has_ops(1, 1); }));
  EXPECT_EQ(ops(0)[0].keys, (std::vector<std::string>{"a", "c"}));
  answer_retrieval(ops(1)[0], {{"b", "2"}});
  answer_retrieval(ops(0)[0], {{"a", "1"}, {"c", "3"}});
  std::string want = "VALUE a 0 1\r\n1\r\nVALUE b 0 1\r\n2\r\nVALUE c 0 1\r\n3\r\nEND\r\n";
  ASSERT_TRUE(pump_until([&] { return received_.size() >= want.size(); }));
  EXPECT_EQ(received_, want);
}

TEST_F(ClientConnTest, NoreplySetSaysNothingAndTheNextGetAnswers) {
  connect();
  send_client("set a 0 0 1 noreply\r\nx\r\nget a\r\n");
  ASSERT_TRUE(pump_until([&] { return has_ops(0, 2); }));
  EXPECT_EQ(ops(0)[0].bytes, "set a 0 0 1 noreply\r\nx\r\nmn\r\n");
  answer(ops(0)[0], "MN\r\n");
  answer_retrieval(ops(0)[1], {{"a", "x"}});
  std::string want = "VALUE a 0 1\r\nx\r\nEND\r\n";
  ASSERT_TRUE(pump_until([&] { return received_.size() >= want.size(); }));
  pump_some();
  EXPECT_EQ(received_, want);
}

TEST_F(ClientConnTest, QuitClosesAfterTheRepliesOwed) {
  connect();
  send_client("get a\r\nquit\r\nget b\r\n");
  ASSERT_TRUE(pump_until([&] { return has_ops(0, 1); }));
  pump_some();
  EXPECT_FALSE(eof_) << "closed with a reply still owed";
  answer_retrieval(ops(0)[0], {});
  ASSERT_TRUE(pump_until([&] { return eof_; }));
  EXPECT_EQ(received_, "END\r\n");
  EXPECT_TRUE(ops(1).empty()) << "a request after quit was sent on";
  EXPECT_EQ(client_, nullptr) << "the closed client was not retired";
}

// An HTTP request line closes the connection without a word, as memcached
// closes it: what follows it (a request forged into an HTTP body) is never
// executed, while the replies owed for what came before are written.
TEST_F(ClientConnTest, AnHttpRequestClosesWithoutAWordAndItsBodyIsNeverRun) {
  connect();
  send_client("get a\r\nPOST /x HTTP/1.1\r\nHost: p\r\n\r\nset pwn 0 0 3\r\nabc\r\n");
  ASSERT_TRUE(pump_until([&] { return has_ops(0, 1); }));
  answer_retrieval(ops(0)[0], {});
  ASSERT_TRUE(pump_until([&] { return eof_; }));
  EXPECT_EQ(received_, "END\r\n") << "the get's reply, then nothing";
  pump_some();
  EXPECT_EQ(ops(0).size(), 1u) << "the get only";
  EXPECT_TRUE(ops(1).empty());
  ASSERT_EQ(ctx_.foreign.size(), 1u);
  EXPECT_EQ(ctx_.foreign[0].second, ClientContext::Foreign::http);
}

// A TLS ClientHello to a listener without TLS: closed, and said to the log
// (through the context), since the client only sees the connection close.
TEST_F(ClientConnTest, ATlsHandshakeOnAPlainListenerCloses) {
  connect();
  // A record header (handshake, TLS 1.0 record version) and a ClientHello's start.
  send_client(std::string("\x16\x03\x01\x02\x00\x01\x00\x01\xfc\x03\x03", 11));
  ASSERT_TRUE(pump_until([&] { return eof_; }));
  EXPECT_EQ(received_, "");
  ASSERT_EQ(ctx_.foreign.size(), 1u);
  EXPECT_EQ(ctx_.foreign[0].second, ClientContext::Foreign::tls);
  EXPECT_TRUE(ops(0).empty());
  EXPECT_TRUE(ops(1).empty());
}

TEST_F(ClientConnTest, TooManyOwedRepliesPauseReadingUntilTheyDrain) {
  connect();
  const size_t total = kMaxPendingReplies + 100;
  std::string burst;
  for (size_t i = 0; i < total; ++i) burst.append("mg a v\r\n");
  send_client(burst);
  pump_some(20);
  size_t forwarded = ops(0).size();
  // Every slot weighs at least one key, so kMaxKeysInFlight (128) trips
  // before kMaxPendingReplies ever can; recorded to show which bound held.
  RecordProperty("forwarded_while_paused", static_cast<int>(forwarded));
  EXPECT_GT(forwarded, 0u);
  EXPECT_LE(forwarded, kMaxPendingReplies) << "no reply came, yet reading went on";
  pump_some(10);
  EXPECT_EQ(ops(0).size(), forwarded) << "still reading while paused";
  EXPECT_EQ(received_, "");

  // Answering drains the owed replies, and reading resumes.
  size_t answered = 0;
  for (int i = 0; i < 500 && answered < total; ++i) {
    // By index: an answer may resume the client, whose next requests
    // land in the same deque (push_back invalidates its iterators).
    for (size_t k = 0; k < ops(0).size(); ++k) {
      if (!ops(0)[k].answered) {
        answer(ops(0)[k], "EN\r\n");
        ++answered;
      }
    }
    pump();
  }
  EXPECT_EQ(answered, total);
  EXPECT_EQ(ops(0).size(), total);
  ASSERT_TRUE(pump_until([&] { return received_.size() >= 4 * total; }));
  EXPECT_EQ(received_.size(), 4 * total);
  EXPECT_EQ(received_.find_first_not_of("EN\r\n"), std::string::npos);
}

TEST_F(ClientConnTest, VersionAndStatsAreAnsweredLocally) {
  connect();
  send_client("version\r\nstats slabs\r\n");
  std::string want = std::string(proto::version_reply()) + "STAT pid 1\r\nEND\r\n";
  ASSERT_TRUE(pump_until([&] { return received_.size() >= want.size(); }));
  EXPECT_EQ(received_, want);
  ASSERT_EQ(ctx_.stats_args.size(), 1u);
  EXPECT_EQ(ctx_.stats_args[0], std::vector<std::string>{"slabs"});
  EXPECT_TRUE(ops(0).empty());
  EXPECT_TRUE(ops(1).empty());
}

TEST_F(ClientConnTest, PoolNotConfiguredFromTheStart) {
  ctx_.pool_present = false;
  connect();
  send_client("get a\r\nset a 0 0 1\r\nx\r\n");
  std::string want = "SERVER_ERROR pool not configured\r\nSERVER_ERROR pool not configured\r\n";
  ASSERT_TRUE(pump_until([&] { return received_.size() >= want.size(); }));
  pump_some();
  EXPECT_EQ(received_, want) << "the set's value is consumed with it";
}

TEST_F(ClientConnTest, PoolGoneBetweenRequests) {
  connect();
  send_client("get a\r\n");
  ASSERT_TRUE(pump_until([&] { return has_ops(0, 1); }));
  answer_retrieval(ops(0)[0], {});
  ASSERT_TRUE(pump_until([&] { return received_ == "END\r\n"; }));
  // A reload removed the pool; this client has not been told yet.
  ctx_.pool_present = false;
  ++ctx_.epoch;
  send_client("get a\r\n");
  ASSERT_TRUE(pump_until([&] { return received_.size() > 5; }));
  EXPECT_EQ(received_, "END\r\nSERVER_ERROR pool not configured\r\n");
  EXPECT_EQ(ops(0).size(), 1u);
}

// --- Binary-protocol clients ----------------------------------------------

std::string frame(uint8_t opcode, std::string_view key, std::string_view extras = {},
                  std::string_view value = {}, uint32_t opaque = 0) {
  std::string f;
  const auto body = static_cast<uint32_t>(extras.size() + key.size() + value.size());
  f.push_back(static_cast<char>(proto::binary::kRequestMagic));
  f.push_back(static_cast<char>(opcode));
  f.push_back(static_cast<char>(key.size() >> 8));
  f.push_back(static_cast<char>(key.size()));
  f.push_back(static_cast<char>(extras.size()));
  f.append(3, '\0');  // data type, vbucket
  for (int shift = 24; shift >= 0; shift -= 8) f.push_back(static_cast<char>(body >> shift));
  for (int shift = 24; shift >= 0; shift -= 8) f.push_back(static_cast<char>(opaque >> shift));
  f.append(8, '\0');  // cas
  f.append(extras).append(key).append(value);
  return f;
}

struct Response {
  uint8_t opcode;
  uint16_t status;
  uint32_t opaque;
  uint64_t cas;
  std::string extras, key, value;
};

// The response frames in `bytes`; stops at a partial one.
std::vector<Response> responses(std::string_view bytes) {
  std::vector<Response> out;
  const auto* b = reinterpret_cast<const unsigned char*>(bytes.data());
  size_t at = 0;
  while (bytes.size() - at >= proto::binary::kHeaderSize) {
    const proto::binary::Header h = proto::binary::decode_header(b + at);
    if (bytes.size() - at < proto::binary::kHeaderSize + h.body_length) break;
    EXPECT_EQ(h.magic, proto::binary::kResponseMagic);
    std::string_view body = bytes.substr(at + proto::binary::kHeaderSize, h.body_length);
    out.push_back(Response{h.opcode, h.vbucket_or_status, h.opaque, h.cas,
                           std::string(body.substr(0, h.extras_length)),
                           std::string(body.substr(h.extras_length, h.key_length)),
                           std::string(body.substr(h.extras_length + h.key_length))});
    at += proto::binary::kHeaderSize + h.body_length;
  }
  return out;
}

TEST_F(ClientConnTest, BinarySetIsSentAsMetaAndItsReplyComesBackAsAFrame) {
  connect();
  const std::string extras("\0\0\0\x03\0\0\0\x0a", 8);  // flags 3, exptime 10
  send_client(frame(proto::binary::op::set, "a", extras, "xyz", 0xdeadbeef));
  ASSERT_TRUE(pump_until([&] { return has_ops(0, 1); }));
  EXPECT_EQ(ops(0)[0].bytes, "ms a 3 F3 T10 c\r\nxyz\r\n");
  answer(ops(0)[0], "HD c77\r\n");
  ASSERT_TRUE(pump_until([&] { return responses(received_).size() == 1; }));
  const Response r = responses(received_)[0];
  EXPECT_EQ(r.opcode, proto::binary::op::set);
  EXPECT_EQ(r.status, 0);
  EXPECT_EQ(r.opaque, 0xdeadbeef) << "the opaque must come back untouched";
  EXPECT_EQ(r.cas, 77u) << "the cas is the server's";
  EXPECT_EQ(ctx_.stats().binary_connections.get(), 1u);
  EXPECT_EQ(ctx_.stats().binary_requests.get(), 1u);
  EXPECT_FALSE(client_->parkable(~uint64_t{0})) << "a parked socket would resume as text";
}

TEST_F(ClientConnTest, BinaryQuietGetsAcrossServersAnswerInOrderWithMissesSilent) {
  connect();
  send_client(frame(proto::binary::op::getkq, "a", {}, {}, 1) +
              frame(proto::binary::op::getkq, "b", {}, {}, 2) +
              frame(proto::binary::op::getkq, "c", {}, {}, 3) +
              frame(proto::binary::op::noop, {}, {}, {}, 4));
  ASSERT_TRUE(pump_until([&] { return has_ops(0, 2) && has_ops(1, 1); }));
  EXPECT_EQ(ops(0)[0].bytes, "gets a\r\n");
  EXPECT_EQ(ops(1)[0].bytes, "gets b\r\n");
  EXPECT_EQ(ops(0)[1].bytes, "gets c\r\n");
  // The second server answers first; its hit must wait for the first key.
  answer_retrieval(ops(1)[0], {{"b", "B"}});
  pump_some();
  EXPECT_EQ(received_, "");
  answer_retrieval(ops(0)[0], {});  // a: a miss, which getkq keeps quiet
  answer_retrieval(ops(0)[1], {{"c", "C"}});
  ASSERT_TRUE(pump_until([&] { return responses(received_).size() == 3; }));
  const std::vector<Response> r = responses(received_);
  EXPECT_EQ(r[0].opaque, 2u);
  EXPECT_EQ(r[0].key, "b");
  EXPECT_EQ(r[0].value, "B");
  EXPECT_EQ(r[0].extras, std::string(4, '\0'));
  EXPECT_EQ(r[1].opaque, 3u);
  EXPECT_EQ(r[1].value, "C");
  EXPECT_EQ(r[2].opcode, proto::binary::op::noop);
  EXPECT_EQ(r[2].opaque, 4u);
}

TEST_F(ClientConnTest, BinaryFrameCutInTwoIsHandledOnceWhole) {
  connect();
  const std::string f = frame(proto::binary::op::append, "a", {}, "0123456789", 9);
  send_client(f.substr(0, 20));
  pump_some();
  send_client(f.substr(20, 8));
  pump_some();
  EXPECT_TRUE(ops(0).empty()) << "sent before the value had arrived";
  send_client(f.substr(28));
  ASSERT_TRUE(pump_until([&] { return has_ops(0, 1); }));
  EXPECT_EQ(ops(0)[0].bytes, "ms a 10 MA c\r\n0123456789\r\n");
  answer(ops(0)[0], "NS\r\n");
  ASSERT_TRUE(pump_until([&] { return responses(received_).size() == 1; }));
  EXPECT_EQ(responses(received_)[0].status, 5) << "append to a missing key: not stored";
  EXPECT_EQ(ctx_.stats().binary_requests.get(), 1u) << "a frame that came in pieces counts once";
}

TEST_F(ClientConnTest, BadMagicAfterTheFirstFrameClosesAfterTheRepliesOwed) {
  connect();
  std::string bad = frame(proto::binary::op::get, "b");
  bad[0] = 'g';
  send_client(frame(proto::binary::op::get, "a", {}, {}, 5) + bad);
  ASSERT_TRUE(pump_until([&] { return has_ops(0, 1); }));
  pump_some();
  EXPECT_FALSE(eof_) << "closed with a reply owed";
  answer_retrieval(ops(0)[0], {});
  ASSERT_TRUE(pump_until([&] { return eof_; }));
  const std::vector<Response> r = responses(received_);
  ASSERT_EQ(r.size(), 1u);
  EXPECT_EQ(r[0].status, 1);
  EXPECT_EQ(r[0].value, "Not found");
  EXPECT_TRUE(ops(1).empty()) << "the frame with a bad magic was sent on";
  EXPECT_EQ(ctx_.stats().binary_connections.get(), 0u) << "a closed binary client still counted";
}

TEST_F(ClientConnTest, TextConnectionKeepsSpeakingTextWhenA0x80ByteComesLater) {
  connect();
  // A get frame holds no "\n" byte: with the "\r\n" after it, it is one
  // line, which memcached answers ERROR.
  send_client("version\r\n" + frame(proto::binary::op::get, "k") + "\r\n");
  ASSERT_TRUE(pump_until([&] { return received_.find("ERROR\r\n") != std::string::npos; }));
  EXPECT_EQ(received_, std::string(proto::version_reply()) + "ERROR\r\n");
  EXPECT_EQ(ctx_.stats().binary_connections.get(), 0u);
}

TEST_F(ClientConnTest, OversizedBinarySetIsRefusedUnreadAndDeletesTheOldValue) {
  connect();
  const std::string extras(8, '\0');
  const std::string value(1024 * 1024 + 1, 'v');
  std::string_view pending;
  const std::string bytes = frame(proto::binary::op::set, "a", extras, value, 1) +
                            frame(proto::binary::op::noop, {}, {}, {}, 2);
  pending = bytes;
  // More than the socket holds: written as the client reads it.
  for (int i = 0; i < 2000 && !pending.empty(); ++i) {
    const ssize_t n = ::send(peer_, pending.data(), pending.size(), MSG_NOSIGNAL);
    if (n > 0) pending.remove_prefix(static_cast<size_t>(n));
    pump();
  }
  ASSERT_TRUE(pending.empty());
  ASSERT_TRUE(pump_until([&] { return has_ops(0, 1); }));
  EXPECT_EQ(ops(0)[0].bytes, "md a\r\n") << "the old value must not outlive the failed set";
  answer(ops(0)[0], "NF\r\n");
  ASSERT_TRUE(pump_until([&] { return responses(received_).size() == 2; }));
  const std::vector<Response> r = responses(received_);
  EXPECT_EQ(r[0].status, 3);
  EXPECT_EQ(r[1].opcode, proto::binary::op::noop) << "the value was not skipped";
}

}  // namespace
}  // namespace memshard::proxy::testing_fakes
