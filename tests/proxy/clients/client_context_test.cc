// What a client connection asks of the loop it runs on, through the
// ClientContext interface (clients/context.h), with a fake context that
// records every call: counters go to the context's WorkerStats, reply
// slots come from and go back to its pool, the pool's routes are asked for
// again when routes_epoch() changes, `stats` is the context's to answer,
// and a closed client is handed to retire() once, after its last slot.
//
// Real socketpair and libevent loop; every loop is bounded by an
// iteration budget, and a repeating tick ends each iteration.
#include <event2/event.h>
#include <gtest/gtest.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cerrno>
#include <csignal>
#include <cstring>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "proxy/clients/client_conn.h"
#include "proxy/clients/context.h"
#include "proxy/protocol/version.h"
#include "proxy/routes/broadcast_route.h"
#include "proxy/routes/key_route.h"
#include "proxy/routes/split_route.h"
#include "tests/proxy/routes/route_fakes.h"

namespace memshard::proxy::testing_fakes {
namespace {

// A pool's routes over one fake server of its own.
struct FakePool {
  explicit FakePool(const std::string& name) {
    conf::PoolConfig pc;
    pc.name = name;
    ketama::ServerEntry entry;
    entry.host = "127.0.0.1";
    pool = std::make_unique<Pool>(
        Pool{pc, ketama::Ring::build({entry}, {}), {}, {}, {}, {}, {}, {}, {}});
    placement.where = {{"a", 0}, {"b", 0}};
    route.pool = pool.get();
    route.stats = std::make_shared<PoolStats>();
    route.key = std::make_unique<KeyRoute>(placement);
    route.multi_get = std::make_unique<SplitRoute>(placement);
    route.all = std::make_unique<BroadcastRoute>(placement);
  }
  std::unique_ptr<Pool> pool;
  FakeServer server;
  FakePlacement placement{{&server}};
  PoolRoute route;
};

class RecordingContext final : public ClientContext {
 public:
  StreamLoop& streams() override { return streams_; }
  RequestScratch& scratch() override { return scratch_; }
  uint64_t now_usec() override { return 1'000'000; }
  WorkerStats& stats() override { return stats_; }
  const PoolRoute* route(const std::string& pool_name) const override {
    ++routes_asked;
    return pool_name == "main" && current != nullptr ? &current->route : nullptr;
  }
  uint64_t routes_epoch() const override { return epoch; }
  void retire(ClientConn* client) override { retired.push_back(client); }
  void append_stats(const std::vector<std::string_view>& args, std::string& out) override {
    stats_calls.emplace_back(args.begin(), args.end());
    out.append("STAT from_the_context 1\r\nEND\r\n");
  }
  void closed_foreign(const std::string& pool, Foreign what) override {
    foreign.emplace_back(pool, what);
  }
  std::vector<std::pair<std::string, Foreign>> foreign;
  ReplySlot* acquire_slot(SlotOwner* owner) override {
    auto* s = new ReplySlot();
    s->set_owner(owner);
    ++slots_out;
    ++slots_acquired;
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

 public:
  FakePool* current = nullptr;
  uint64_t epoch = 1;
  mutable int routes_asked = 0;
  std::vector<ClientConn*> retired;
  std::vector<std::vector<std::string>> stats_calls;
  long slots_out = 0;
  long slots_acquired = 0;
};

class ClientContextTest : public ::testing::Test {
 protected:
  // A reply written to a client that left must fail with EPIPE, not end
  // the test.
  static void SetUpTestSuite() { signal(SIGPIPE, SIG_IGN); }

  ClientContextTest() {
    ctx_.current = &first_;
    tick_ = event_new(
        ctx_.base(), -1, EV_PERSIST, [](evutil_socket_t, short, void*) {}, nullptr);
    timeval tv{0, 10'000};
    event_add(tick_, &tv);
  }
  ~ClientContextTest() override {
    delete client_;
    for (ClientConn* c : ctx_.retired) {
      if (c != client_) delete c;
    }
    if (peer_ >= 0) close(peer_);
    event_free(tick_);
    EXPECT_EQ(ctx_.slots_out, 0) << "a slot was not given back";
  }

  void connect() {
    int fds[2];
    ASSERT_EQ(socketpair(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0, fds), 0)
        << strerror(errno);
    peer_ = fds[1];
    client_ = new ClientConn(ctx_, fds[0], origin_, 7, ClientConn::Arrival::accepted);
  }

  void send_client(std::string_view bytes) {
    ASSERT_EQ(::send(peer_, bytes.data(), bytes.size(), MSG_NOSIGNAL),
              static_cast<ssize_t>(bytes.size()));
  }

  // One worker iteration, then what reached the client's end. Retired
  // clients are left to the test (it checks when and how often).
  void pump() {
    event_base_loop(ctx_.base(), EVLOOP_ONCE);
    ctx_.streams().flush();
    char buf[4096];
    while (!eof_) {
      const ssize_t n = recv(peer_, buf, sizeof(buf), 0);
      if (n <= 0) {
        eof_ = n == 0;
        break;
      }
      received_.append(buf, static_cast<size_t>(n));
    }
  }
  bool pump_until(const std::function<bool()>& done, int budget = 300) {
    for (int i = 0; i < budget && !done(); ++i) pump();
    return done();
  }
  void pump_some(int n = 5) {
    for (int i = 0; i < n; ++i) pump();
  }

  RecordingContext ctx_;
  FakePool first_{"main"};
  FakePool second_{"main"};
  std::shared_ptr<const ClientOrigin> origin_ = std::make_shared<const ClientOrigin>(ClientOrigin{
      "main", std::make_shared<ClientCount>(std::make_shared<std::atomic<uint32_t>>(0)),
      std::make_shared<PoolStats>()});
  event* tick_ = nullptr;
  ClientConn* client_ = nullptr;
  int peer_ = -1;
  std::string received_;
  bool eof_ = false;
};

TEST_F(ClientContextTest, CountersGoToTheContextsWorkerStats) {
  const WorkerStats& st = ctx_.stats();
  connect();
  EXPECT_EQ(st.curr_connections.get(), 1u);
  EXPECT_EQ(st.total_connections.get(), 1u);
  send_client("get a b\r\nset a 0 0 1\r\nx\r\ndelete b\r\nbogus\r\n");
  ASSERT_TRUE(pump_until([&] { return first_.server.box.ops.size() >= 3; }));
  pump_some();  // the unknown command is answered too, behind the others
  EXPECT_EQ(st.cmd_get.get(), 2u) << "a get counts its keys";
  EXPECT_EQ(st.cmd_set.get(), 1u);
  EXPECT_EQ(st.cmd_other.get(), 1u);
  EXPECT_EQ(st.client_errors.get(), 1u) << "the unknown command, answered by the proxy";
  EXPECT_EQ(st.fragments.get(), 3u) << "counted by the routes, in the same counters";
  for (SentOp& op : first_.server.box.ops) {
    if (op.via_retrieval) {
      answer_retrieval(op, {});
    } else {
      answer(op, "NOT_FOUND\r\n");
    }
  }
  ASSERT_TRUE(pump_until([&] { return received_.ends_with("ERROR\r\n"); }));
  shutdown(peer_, SHUT_WR);
  ASSERT_TRUE(pump_until([&] { return !ctx_.retired.empty(); }));
  EXPECT_EQ(st.curr_connections.get(), 0u) << "uncounted once closed";
  EXPECT_EQ(st.total_connections.get(), 1u);
}

TEST_F(ClientContextTest, EachReplySlotComesFromTheContextAndGoesBackOnceWritten) {
  connect();
  send_client("get a\r\nversion\r\nget b\r\n");
  ASSERT_TRUE(pump_until([&] { return first_.server.box.ops.size() >= 2; }));
  EXPECT_EQ(ctx_.slots_acquired, 3) << "one per request, the proxy's own answers too";
  EXPECT_EQ(ctx_.slots_out, 3) << "none written yet: the first is owed";
  answer_retrieval(first_.server.box.ops[0], {{"a", "1"}});
  answer_retrieval(first_.server.box.ops[1], {});
  const std::string want =
      "VALUE a 0 1\r\n1\r\nEND\r\n" + std::string(proto::version_reply()) + "END\r\n";
  ASSERT_TRUE(pump_until([&] { return received_.size() >= want.size(); }));
  EXPECT_EQ(received_, want);
  pump_some();
  EXPECT_EQ(ctx_.slots_out, 0);
}

TEST_F(ClientContextTest, StatsAreTheContextsToAnswer) {
  connect();
  send_client("stats\r\nstats servers\r\n");
  const std::string one = "STAT from_the_context 1\r\nEND\r\n";
  ASSERT_TRUE(pump_until([&] { return received_.size() >= 2 * one.size(); }));
  EXPECT_EQ(received_, one + one);
  ASSERT_EQ(ctx_.stats_calls.size(), 2u);
  EXPECT_TRUE(ctx_.stats_calls[0].empty());
  EXPECT_EQ(ctx_.stats_calls[1], std::vector<std::string>{"servers"});
  EXPECT_TRUE(first_.server.box.ops.empty()) << "nothing forwarded";
}

TEST_F(ClientContextTest, ANewRoutesEpochMakesTheClientAskForItsPoolsRoutesAgain) {
  connect();
  send_client("get a\r\n");
  ASSERT_TRUE(pump_until([&] { return first_.server.box.ops.size() == 1; }));
  answer_retrieval(first_.server.box.ops[0], {});
  ASSERT_TRUE(pump_until([&] { return received_ == "END\r\n"; }));
  const int asked = ctx_.routes_asked;
  // A reload built new routes for the pool.
  ctx_.current = &second_;
  ++ctx_.epoch;
  send_client("get b\r\n");
  ASSERT_TRUE(pump_until([&] { return second_.server.box.ops.size() == 1; }));
  EXPECT_GT(ctx_.routes_asked, asked);
  EXPECT_EQ(first_.server.box.ops.size(), 1u) << "the old routes are not used any more";
  answer_retrieval(second_.server.box.ops[0], {{"b", "2"}});
  ASSERT_TRUE(pump_until([&] { return received_ == "END\r\nVALUE b 0 1\r\n2\r\nEND\r\n"; }));
}

TEST_F(ClientContextTest, AClosedClientIsRetiredOnceAfterItsLastSlot) {
  connect();
  send_client("get a\r\n");
  ASSERT_TRUE(pump_until([&] { return first_.server.box.ops.size() == 1; }));
  close(peer_);  // the client leaves with a reply owed
  peer_ = -1;
  eof_ = true;
  pump_some();
  EXPECT_TRUE(ctx_.retired.empty()) << "a slot is still owed by a server";
  answer_retrieval(first_.server.box.ops[0], {{"a", "1"}});
  ASSERT_TRUE(pump_until([&] { return !ctx_.retired.empty(); }));
  EXPECT_EQ(ctx_.stats().curr_connections.get(), 0u);
  EXPECT_EQ(ctx_.retired[0], client_);
  EXPECT_EQ(ctx_.slots_out, 0);
  pump_some();
  EXPECT_EQ(ctx_.retired.size(), 1u) << "retired once";
}

}  // namespace
}  // namespace memshard::proxy::testing_fakes
