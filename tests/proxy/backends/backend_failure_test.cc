// BackendServer and BackendConn (proxy/backends/backend.h) when the server
// breaks the protocol, hangs up, does not answer or cannot be reached, on
// the fakes of fake_backend.h: which replies the ops in flight get, which
// counters move, what the context is told, and that the next op still
// finds a working connection.
#include <gtest/gtest.h>

#include <chrono>
#include <ostream>
#include <string>
#include <string_view>
#include <vector>

#include "proxy/backends/backend.h"
#include "tests/proxy/backends/fake_backend.h"

namespace memshard::proxy::testing_backends {
namespace {

// ---------------------------------------------------------------------------
// 5. A server that breaks the protocol.

struct Garbage {
  const char* name;
  ReplyMode mode;
  std::string reply;  // sent in one piece, or two when `cut` is set
  size_t cut = 0;
};

// gtest prints the case by name, not as bytes.
void PrintTo(const Garbage& g, std::ostream* os) {
  *os << g.name;
}

class GarbageFromServer : public BackendTest, public testing::WithParamInterface<Garbage> {};

TEST_P(GarbageFromServer, FailsTheOpsInFlightAndTheNextOpGetsAFreshConnection) {
  const Garbage& g = GetParam();
  FakeServer memcached;
  ServerSettings settings;
  settings.max_value_bytes = 100;
  BackendServer& server = add_server(memcached.addresses(), settings);
  BackendConn* conn = server.connection_for(0);
  FakeOwner first, behind;
  if (g.mode == ReplyMode::retrieval) {
    get(*conn, first, {"a"});
  } else {
    forward(*conn, first, "incr n 1\r\n", g.mode);
  }
  forward(*conn, behind, "set s 0 0 1\r\ns\r\n", ReplyMode::single);
  ASSERT_TRUE(run_until([&] {
    memcached.poll();
    return memcached.received.ends_with("s\r\n");
  }));
  if (g.cut == 0) {
    memcached.send(g.reply);
  } else {
    memcached.send(std::string_view(g.reply).substr(0, g.cut));
    run_iterations(2);
    memcached.send(std::string_view(g.reply).substr(g.cut));
  }
  ASSERT_TRUE(run_until([&] { return behind.completions > 0; }));
  const std::string garbled = line(own::kBackendGarbled);
  EXPECT_EQ(first.completions, 1);
  EXPECT_EQ(first.reply(), garbled);
  if (g.mode == ReplyMode::retrieval) {
    EXPECT_TRUE(first.slot->fragment(0).failed);
  }
  EXPECT_EQ(behind.reply(), garbled);
  EXPECT_EQ(server.stats().server_err.get(), 1u);
  EXPECT_EQ(server.stats().out_queue.get(), 0u);
  EXPECT_EQ(ctx_.stats().forward_error.get(), 2u);
  EXPECT_EQ(pool_stats_->forward_error.get(), 2u);
  EXPECT_EQ(conn->in_flight(), 0u);
  EXPECT_EQ(server.stats().server_connections.get(), 0u);
  ASSERT_TRUE(run_until([&] {
    memcached.poll();
    return memcached.peer_closed();
  })) << "the broken connection should be closed";

  // A broken server is not backed off from: only refused connects are.
  memcached.hang_up();
  BackendConn* again = server.connection_for(0);
  ASSERT_NE(again, nullptr);
  FakeOwner next;
  forward(*again, next, "set t 0 0 1\r\nt\r\n", ReplyMode::single);
  expect_request(memcached, "set t 0 0 1\r\nt\r\n");
  EXPECT_EQ(memcached.accepted(), 2);
  memcached.send("STORED\r\n");
  ASSERT_TRUE(run_until_complete(next));
  EXPECT_EQ(next.reply(), "STORED\r\n");
}

INSTANTIATE_TEST_SUITE_P(
    Backends, GarbageFromServer,
    testing::Values(
        Garbage{"UnknownLine", ReplyMode::single, "HELLO\r\n"},
        Garbage{"ValueToASingleOp", ReplyMode::single, "VALUE n 0 1\r\n1\r\nEND\r\n"},
        Garbage{"BareNewline", ReplyMode::single,
                "STORED\n"
                "STORED\r\n"},
        Garbage{"LineTooLong", ReplyMode::single, std::string(9000, 'x')},
        Garbage{"DataNotEndedByCrLfWhole", ReplyMode::retrieval, "VALUE a 0 2\r\nabXYEND\r\n"},
        Garbage{"DataNotEndedByCrLfCut", ReplyMode::retrieval, "VALUE a 0 2\r\nabXYEND\r\n", 14},
        Garbage{"DataTailCutBetweenCrAndX", ReplyMode::retrieval, "VALUE a 0 2\r\nab\rXEND\r\n",
                16},
        Garbage{"ValueOverMaxValueBytes", ReplyMode::retrieval, "VALUE a 0 101\r\n"},
        Garbage{"MetaValueOverMaxValueBytes", ReplyMode::meta, "VA 101\r\n"},
        Garbage{"ValueForAKeyNotAsked", ReplyMode::retrieval, "VALUE zz 0 1\r\nz\r\nEND\r\n"},
        Garbage{"BroadcastAnswerToAGet", ReplyMode::retrieval, "OK\r\n"},
        // A reply in the other protocol's words (a STORED sent before
        // anything was asked, then taken for the first reply).
        Garbage{"ClassicWordToAMetaOp", ReplyMode::meta, "STORED\r\n"},
        Garbage{"ClassicWordInAQuietMetaReply", ReplyMode::quiet_keep, "STORED\r\nMN\r\n"},
        Garbage{"MetaCodeToAClassicOp", ReplyMode::single, "HD\r\n"}),
    [](const testing::TestParamInfo<Garbage>& p) { return std::string(p.param.name); });

TEST_F(BackendTest, AValueOfExactlyMaxValueBytesIsAccepted) {
  FakeServer memcached;
  ServerSettings settings;
  settings.max_value_bytes = 100;
  BackendServer& server = add_server(memcached.addresses(), settings);
  BackendConn* conn = server.connection_for(0);
  FakeOwner owner;
  get(*conn, owner, {"a"});
  expect_request(memcached, "get a\r\n");
  const std::string reply = "VALUE a 0 100\r\n" + std::string(100, 'v') + "\r\nEND\r\n";
  memcached.send(reply);
  ASSERT_TRUE(run_until_complete(owner));
  EXPECT_EQ(owner.reply(), reply);
  EXPECT_EQ(server.stats().server_err.get(), 0u);
}

// What answers either protocol is taken by either: an error line, and OK
// (a meta write's answer from a server run with meta_response_old, as
// memcached up to 1.6.17 could be). The connection is kept.
TEST_F(BackendTest, AnErrorOrOkAnswersAMetaOpAndAClassicOne) {
  FakeServer memcached;
  BackendServer& server = add_server(memcached.addresses());
  BackendConn* conn = server.connection_for(0);
  FakeOwner ms, md, set;
  forward(*conn, ms, "ms k 1\r\nv\r\n", ReplyMode::meta);
  forward(*conn, md, "md k\r\n", ReplyMode::meta);
  forward(*conn, set, "set k 0 0 1\r\nv\r\n", ReplyMode::single);
  expect_request(memcached, "ms k 1\r\nv\r\nmd k\r\nset k 0 0 1\r\nv\r\n");
  memcached.send("OK\r\nSERVER_ERROR out of memory\r\nCLIENT_ERROR bad data chunk\r\n");
  ASSERT_TRUE(run_until_complete(set));
  EXPECT_EQ(ms.reply(), "OK\r\n");
  EXPECT_EQ(md.reply(), "SERVER_ERROR out of memory\r\n");
  EXPECT_EQ(set.reply(), "CLIENT_ERROR bad data chunk\r\n");
  EXPECT_EQ(server.stats().server_err.get(), 0u);
  EXPECT_EQ(server.stats().server_connections.get(), 1u);
}

TEST_F(BackendTest, AReplyWithNothingAskedBreaksTheConnection) {
  FakeServer memcached;
  BackendServer& server = add_server(memcached.addresses());
  BackendConn* conn = server.connection_for(0);
  FakeOwner owner;
  forward(*conn, owner, "delete k\r\n", ReplyMode::single);
  expect_request(memcached, "delete k\r\n");
  memcached.send("DELETED\r\nDELETED\r\n");
  ASSERT_TRUE(run_until([&] {
    memcached.poll();
    return memcached.peer_closed();
  }));
  EXPECT_EQ(owner.completions, 1);
  EXPECT_EQ(owner.reply(), "DELETED\r\n");
  EXPECT_EQ(server.stats().server_err.get(), 1u);
}

// Gets joined on one line: a VALUE that none of them asked for is no
// evidence that the first is done. Every one fails; none reads as a miss.
TEST_F(BackendTest, AValueNoOpOnASharedLineAskedFailsThemAll) {
  FakeServer memcached;
  BackendServer& server = add_server(memcached.addresses());
  BackendConn* conn = server.connection_for(0);
  FakeOwner first, second;
  get(*conn, first, {"a"});
  get(*conn, second, {"b"});
  expect_request(memcached, "get a b\r\n");
  memcached.send("VALUE zz 0 1\r\nz\r\nEND\r\n");
  ASSERT_TRUE(run_until([&] { return second.completions > 0; }));
  const std::string garbled = line(own::kBackendGarbled);
  EXPECT_EQ(first.completions, 1);
  EXPECT_EQ(first.reply(), garbled);
  EXPECT_TRUE(first.slot->fragment(0).failed);
  EXPECT_EQ(second.reply(), garbled);
  EXPECT_EQ(server.stats().server_err.get(), 1u);
}

// The same line, the VALUE for the second: the first had no hit, and is
// done before the second's value is read.
TEST_F(BackendTest, AValueForALaterOpOnASharedLineEndsTheOnesBefore) {
  FakeServer memcached;
  BackendServer& server = add_server(memcached.addresses());
  BackendConn* conn = server.connection_for(0);
  FakeOwner first, second, third;
  get(*conn, first, {"a"});
  get(*conn, second, {"b"});
  get(*conn, third, {"c"});
  expect_request(memcached, "get a b c\r\n");
  memcached.send("VALUE c 0 1\r\nC\r\nEND\r\n");
  ASSERT_TRUE(run_until([&] { return third.completions > 0; }));
  EXPECT_EQ(first.reply(), "END\r\n");
  EXPECT_EQ(second.reply(), "END\r\n");
  EXPECT_EQ(third.reply(), "VALUE c 0 1\r\nC\r\nEND\r\n");
  EXPECT_EQ(server.stats().server_err.get(), 0u);
}

// ---------------------------------------------------------------------------
// 6. A server that hangs up.

TEST_F(BackendTest, ServerClosingMidValueFailsEveryOpInFlight) {
  FakeServer memcached;
  BackendServer& server = add_server(memcached.addresses());
  BackendConn* conn = server.connection_for(0);
  FakeOwner g, s;
  get(*conn, g, {"a", "b"});
  forward(*conn, s, "set s 0 0 1\r\ns\r\n", ReplyMode::single);
  expect_request(memcached, "get a b\r\nset s 0 0 1\r\ns\r\n");
  memcached.send("VALUE a 0 10\r\n01234");
  run_iterations(2);
  memcached.hang_up();
  ASSERT_TRUE(run_until([&] { return s.completions > 0; }));
  const std::string closed = line(own::kBackendClosed);
  EXPECT_EQ(g.completions, 1);
  EXPECT_TRUE(g.slot->fragment(0).failed);
  EXPECT_EQ(g.slot->error(), closed);
  EXPECT_EQ(g.reply(), closed) << "no partial value may reach the client";
  EXPECT_EQ(s.reply(), closed);
  EXPECT_EQ(server.stats().server_eof.get(), 1u);
  EXPECT_EQ(server.stats().server_connections.get(), 0u);
  EXPECT_TRUE(ctx_.unreachable.empty()) << "the server was reached; it only closed";
}

TEST_F(BackendTest, AMultiGetSpreadOverTwoServersKeepsTheHitsOfTheOneThatAnswered) {
  FakeServer m0, m1;
  BackendServer& s0 = add_server(m0.addresses());
  BackendServer& s1 = add_server(m1.addresses());
  FakeOwner owner;
  prepare_retrieval(owner, {"a", "b", "c"}, {0, 1, 0});
  send_retrieval(*s0.connection_for(0), owner, 0);
  send_retrieval(*s1.connection_for(0), owner, 1);
  expect_request(m0, "get a c\r\n");
  expect_request(m1, "get b\r\n");
  m0.send("VALUE a 0 1\r\nA\r\nVALUE c 0 1\r\nC\r\nEND\r\n");
  m1.send("VALUE b 0 3\r\nB");
  run_iterations(2);
  EXPECT_EQ(owner.completions, 0);
  m1.hang_up();
  ASSERT_TRUE(run_until_complete(owner));
  EXPECT_FALSE(owner.slot->fragment(0).failed);
  EXPECT_TRUE(owner.slot->fragment(1).failed);
  // The failed server's key reads as a miss.
  EXPECT_EQ(owner.reply(), "VALUE a 0 1\r\nA\r\nVALUE c 0 1\r\nC\r\nEND\r\n");
}

// ---------------------------------------------------------------------------
// 7. A server that never answers.

TEST_F(BackendTest, AnOpUnansweredPastTheTimeoutFails) {
  FakeServer memcached;
  ServerSettings settings;
  settings.timeout_ms = 50;
  BackendServer& server = add_server(memcached.addresses(), settings);
  BackendConn* conn = server.connection_for(0);
  FakeOwner owner;
  forward(*conn, owner, "get_slowly\r\n", ReplyMode::single);
  expect_request(memcached, "get_slowly\r\n");
  ASSERT_TRUE(run_until_complete(owner));
  EXPECT_EQ(owner.reply(), line(own::kBackendTimeout));
  EXPECT_EQ(server.stats().server_timedout.get(), 1u);
  EXPECT_EQ(ctx_.stats().server_timeouts.get(), 1u);
  EXPECT_EQ(ctx_.stats().forward_error.get(), 1u);
  ASSERT_TRUE(run_until([&] {
    memcached.poll();
    return memcached.peer_closed();
  })) << "a reply may still come: the connection must not be reused";
}

TEST_F(BackendTest, AnAnsweredOpDoesNotTimeOutLater) {
  FakeServer memcached;
  ServerSettings settings;
  settings.timeout_ms = 50;
  BackendServer& server = add_server(memcached.addresses(), settings);
  BackendConn* conn = server.connection_for(0);
  FakeOwner owner;
  forward(*conn, owner, "version\r\n", ReplyMode::single);
  expect_request(memcached, "version\r\n");
  memcached.send("VERSION 1.6.18\r\n");
  ASSERT_TRUE(run_until_complete(owner));
  // Past the op's deadline, bounded: the armed timer fires and must find
  // nothing owed.
  auto until = Clock::now() + std::chrono::milliseconds(150);
  while (Clock::now() < until) iterate();
  EXPECT_EQ(server.stats().server_timedout.get(), 0u);
  memcached.poll();
  EXPECT_FALSE(memcached.peer_closed());
}

// server_queue_limit: once a connection has that many requests waiting,
// its outbox refuses more, says why, and counts them; once answers come,
// it takes requests again.
TEST_F(BackendTest, AConnectionWithQueueLimitRequestsWaitingRefusesMoreUntilTheyAreAnswered) {
  FakeServer memcached;
  ServerSettings settings;
  settings.queue_limit = 2;
  BackendServer& server = add_server(memcached.addresses(), settings);
  FakeOwner first, second, third;
  ASSERT_NE(server.outbox(0), nullptr);
  forward(*server.connection_for(0), first, "mg a v\r\n", ReplyMode::meta);
  ASSERT_NE(server.outbox(0), nullptr);
  forward(*server.connection_for(0), second, "mg b v\r\n", ReplyMode::meta);
  EXPECT_EQ(server.outbox(0), nullptr) << "two waiting: the limit";
  EXPECT_EQ(server.refusal(), own::kBackendQueueFull);
  EXPECT_EQ(server.stats().requests_shed.get(), 1u);
  expect_request(memcached, "mg a v\r\nmg b v\r\n");
  memcached.send("EN\r\n");
  ASSERT_TRUE(run_until_complete(first));
  ASSERT_NE(server.outbox(0), nullptr) << "one answered: room for one more";
  forward(*server.connection_for(0), third, "mg c v\r\n", ReplyMode::meta);
  EXPECT_EQ(server.outbox(0), nullptr);
  EXPECT_EQ(server.stats().requests_shed.get(), 2u);
  expect_request(memcached, "mg c v\r\n");
  memcached.send("EN\r\nEN\r\n");
  ASSERT_TRUE(run_until_complete(second));
  ASSERT_TRUE(run_until_complete(third));
}

TEST_F(BackendTest, NoQueueLimitNeverRefuses) {
  FakeServer memcached;
  BackendServer& server = add_server(memcached.addresses(), ServerSettings{});
  std::vector<std::unique_ptr<FakeOwner>> owners;
  for (int i = 0; i < 100; ++i) {
    ASSERT_NE(server.outbox(0), nullptr) << i;
    owners.push_back(std::make_unique<FakeOwner>());
    forward(*server.connection_for(0), *owners.back(), "mn\r\n", ReplyMode::single);
  }
  EXPECT_EQ(server.stats().requests_shed.get(), 0u);
}

// ---------------------------------------------------------------------------
// 8. A server that refuses connections.

TEST_F(BackendTest, ARefusedConnectFailsTheOpAndBacksOff) {
  SocketAddress refusing;
  Fd bound = tcp_socket(refusing, false);
  ctx_.freeze();  // the back-off ends only when the test says so
  BackendServer& server = add_server({refusing});
  BackendConn* conn = server.connection_for(0);
  ASSERT_NE(conn, nullptr);
  FakeOwner owner;
  forward(*conn, owner, "get k\r\n", ReplyMode::single);
  ASSERT_TRUE(run_until_complete(owner));
  EXPECT_EQ(owner.reply(), line(own::kBackendUnavailable));
  ASSERT_EQ(ctx_.unreachable.size(), 1u);
  EXPECT_EQ(ctx_.unreachable[0].first, "pool");
  EXPECT_EQ(ctx_.unreachable[0].second, server.identity());
  EXPECT_TRUE(ctx_.failing.empty()) << "no failure_limit is set";
  EXPECT_EQ(server.stats().server_connections.get(), 0u);

  EXPECT_EQ(server.connection_for(0), nullptr) << "no back-off after a refused connect";
  ctx_.advance_usec(10'000'000);
  EXPECT_NE(server.connection_for(0), nullptr) << "the back-off did not end";
}

// ---------------------------------------------------------------------------
// 9. A server with several addresses.

TEST_F(BackendTest, ConnectsToTheFirstAddressThatAnswersAndStartsThereNextTime) {
  SocketAddress refusing;
  Fd bound = tcp_socket(refusing, false);
  FakeServer memcached;
  BackendServer& server = add_server({refusing, memcached.address()});
  EXPECT_EQ(server.preferred_address(), 0u);
  BackendConn* conn = server.connection_for(0);
  FakeOwner owner;
  forward(*conn, owner, "set k 0 0 1\r\nk\r\n", ReplyMode::single);
  expect_request(memcached, "set k 0 0 1\r\nk\r\n");
  memcached.send("STORED\r\n");
  ASSERT_TRUE(run_until_complete(owner));
  EXPECT_EQ(owner.reply(), "STORED\r\n");
  EXPECT_EQ(server.preferred_address(), 1u);
  ASSERT_NE(conn->peer(), nullptr);
  EXPECT_TRUE(*conn->peer() == memcached.address());
  EXPECT_TRUE(ctx_.unreachable.empty()) << "the server was reached at its second address";
}

TEST_F(BackendTest, NewAddressesRetireTheOldConnectionOnceItOwesNothing) {
  FakeServer old_home, new_home;
  BackendServer& server = add_server(old_home.addresses());
  BackendConn* old_conn = server.connection_for(0);
  FakeOwner before;
  forward(*old_conn, before, "incr n 1\r\n", ReplyMode::single);
  expect_request(old_home, "incr n 1\r\n");

  server.update_addresses(new_home.addresses());
  EXPECT_FALSE(server.idle()) << "the retired connection still owes a reply";
  BackendConn* new_conn = server.connection_for(0);
  ASSERT_NE(new_conn, nullptr);
  EXPECT_NE(new_conn, old_conn);
  FakeOwner after;
  forward(*new_conn, after, "incr n 2\r\n", ReplyMode::single);
  expect_request(new_home, "incr n 2\r\n");
  server.close_retired();
  old_home.poll();
  EXPECT_FALSE(old_home.peer_closed()) << "closed while it owed a reply";

  // The retired connection still delivers what it owes.
  old_home.send("1\r\n");
  new_home.send("3\r\n");
  ASSERT_TRUE(run_until([&] { return before.completions > 0 && after.completions > 0; }));
  EXPECT_EQ(before.reply(), "1\r\n");
  EXPECT_EQ(after.reply(), "3\r\n");
  server.close_retired();
  ASSERT_TRUE(run_until([&] {
    old_home.poll();
    return old_home.peer_closed();
  }));
  EXPECT_TRUE(server.idle());
  EXPECT_EQ(old_home.accepted(), 1);
  EXPECT_EQ(new_home.accepted(), 1);
  EXPECT_EQ(server.stats().server_connections.get(), 1u);
}

TEST_F(BackendTest, NewAddressesKeepAConnectionWhosePeerIsAmongThem) {
  FakeServer home, other;
  BackendServer& server = add_server(home.addresses());
  BackendConn* conn = server.connection_for(0);
  FakeOwner owner;
  forward(*conn, owner, "version\r\n", ReplyMode::single);
  expect_request(home, "version\r\n");
  server.update_addresses({other.address(), home.address()});
  EXPECT_EQ(server.connection_for(0), conn);
  EXPECT_EQ(server.preferred_address(), 1u) << "the address that answered moved to index 1";
  home.send("VERSION 1\r\n");
  ASSERT_TRUE(run_until_complete(owner));
}

// ---------------------------------------------------------------------------
// 10. auto_eject_hosts: failures in a row.

TEST_F(BackendTest, FailureLimitReportsTheServerOnceAfterThatManyFailuresInARow) {
  FakeServer memcached;
  ServerSettings settings;
  settings.failure_limit = 2;
  BackendServer& server = add_server(memcached.addresses(), settings);
  int round = 0;
  // One op, answered or failed by the server hanging up on it.
  auto exchange = [&](bool answer) {
    ++round;
    SCOPED_TRACE("round " + std::to_string(round));
    BackendConn* conn = server.connection_for(0);
    ASSERT_NE(conn, nullptr);
    FakeOwner owner;
    std::string request = "delete k" + std::to_string(round) + "\r\n";
    forward(*conn, owner, request, ReplyMode::single);
    expect_request(memcached, request);
    if (answer) {
      memcached.send("DELETED\r\n");
    } else {
      memcached.hang_up();
    }
    ASSERT_TRUE(run_until_complete(owner));
    EXPECT_EQ(owner.reply(), answer ? "DELETED\r\n" : line(own::kBackendClosed));
  };
  exchange(false);
  EXPECT_TRUE(ctx_.failing.empty());
  exchange(true);  // breaks the streak
  exchange(false);
  EXPECT_TRUE(ctx_.failing.empty()) << "two failures, but not in a row";
  exchange(false);
  ASSERT_EQ(ctx_.failing.size(), 1u);
  EXPECT_EQ(ctx_.failing[0].first, "pool");
  EXPECT_EQ(ctx_.failing[0].second, server.identity());
  exchange(false);
  EXPECT_EQ(ctx_.failing.size(), 1u) << "a new streak starts after a report";
  exchange(false);
  EXPECT_EQ(ctx_.failing.size(), 2u);
}

}  // namespace
}  // namespace memshard::proxy::testing_backends
