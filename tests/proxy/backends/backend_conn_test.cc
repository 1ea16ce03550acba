// BackendServer and BackendConn (proxy/backends/backend.h) against a
// memcached server the test plays by hand, on a fake worker loop
// (fake_backend.h): what goes on the wire and how replies find their
// slots. How failures are reported: backend_failure_test.cc.
#include <gtest/gtest.h>

#include <ostream>
#include <string>
#include <string_view>
#include <vector>

#include "proxy/backends/backend.h"
#include "tests/proxy/backends/fake_backend.h"

namespace memshard::proxy::testing_backends {
namespace {

// ---------------------------------------------------------------------------
// 1. One request, one reply line.

TEST_F(BackendTest, SingleLineSetGoesOutExactlyAndItsReplyLandsInTheSlot) {
  FakeServer memcached;
  BackendServer& server = add_server(memcached.addresses());
  BackendConn* conn = server.connection_for(0);
  ASSERT_NE(conn, nullptr);
  FakeOwner owner;
  const std::string request = "set k 0 0 5\r\nhello\r\n";
  forward(*conn, owner, request, ReplyMode::single);
  EXPECT_EQ(server.stats().requests.get(), 1u);
  EXPECT_EQ(server.stats().request_bytes.get(), request.size());
  EXPECT_EQ(server.stats().out_queue.get(), 1u);

  expect_request(memcached, request);
  EXPECT_EQ(owner.completions, 0) << "completed before any reply";
  memcached.send("STORED\r\n");
  ASSERT_TRUE(run_until_complete(owner));
  run_iterations(3);  // nothing more may come of it

  EXPECT_EQ(owner.completions, 1);
  EXPECT_EQ(owner.reply(), "STORED\r\n");
  EXPECT_EQ(server.stats().responses.get(), 1u);
  EXPECT_EQ(server.stats().replies_stored.get(), 1u);
  EXPECT_EQ(server.stats().response_bytes.get(), 8u);
  EXPECT_EQ(server.stats().out_queue.get(), 0u);
  EXPECT_EQ(server.stats().out_queue_bytes.get(), 0u);
  EXPECT_EQ(server.stats().server_connections.get(), 1u);
  EXPECT_EQ(conn->in_flight(), 0u);
  EXPECT_TRUE(server.idle());
}

// ---------------------------------------------------------------------------
// 2. Pipelining.

TEST_F(BackendTest, OpsQueuedInOneIterationLeaveInOneFlushAndRepliesCompleteThemInOrder) {
  FakeServer memcached;
  BackendServer& server = add_server(memcached.addresses());
  BackendConn* conn = server.connection_for(0);
  ASSERT_NE(conn, nullptr);

  // Connect first, so that the next batch's write is the loop's own.
  FakeOwner warmup;
  forward(*conn, warmup, "delete w\r\n", ReplyMode::single);
  expect_request(memcached, "delete w\r\n");
  memcached.send("NOT_FOUND\r\n");
  ASSERT_TRUE(run_until_complete(warmup));

  FakeOwner a, b, c;
  forward(*conn, a, "set a 0 0 1\r\nA\r\n", ReplyMode::single);
  forward(*conn, b, "add b 0 0 1\r\nB\r\n", ReplyMode::single);
  forward(*conn, c, "incr c 1\r\n", ReplyMode::single);
  memcached.poll();
  EXPECT_TRUE(memcached.received.empty()) << "written before the loop's flush";
  ctx_.streams().flush();
  ASSERT_TRUE(memcached.wait_readable());
  memcached.poll();
  EXPECT_EQ(memcached.received, "set a 0 0 1\r\nA\r\nadd b 0 0 1\r\nB\r\nincr c 1\r\n");
  EXPECT_EQ(memcached.reads.size(), 1u) << "the three requests should leave in one write";
  EXPECT_EQ(conn->in_flight(), 3u);

  memcached.send("STORED\r\nNOT_STORED\r\n42\r\n");
  ASSERT_TRUE(run_until([&] { return c.completions > 0; }));
  EXPECT_EQ(a.reply(), "STORED\r\n");
  EXPECT_EQ(b.reply(), "NOT_STORED\r\n");
  EXPECT_EQ(c.reply(), "42\r\n");
  EXPECT_EQ(a.completions + b.completions + c.completions, 3);
  EXPECT_EQ(server.stats().responses.get(), 4u);
  EXPECT_EQ(server.stats().replies_not_stored.get(), 1u);
  EXPECT_EQ(server.stats().replies_other.get(), 1u);  // the number
}

TEST_F(BackendTest, OpsQueuedBeforeTheConnectIsDoneAreAllSentOnceConnected) {
  FakeServer memcached;
  BackendServer& server = add_server(memcached.addresses());
  BackendConn* conn = server.connection_for(0);
  FakeOwner a, b;
  forward(*conn, a, "get_me_not\r\n", ReplyMode::single);  // any bytes: the proxy does not look
  forward(*conn, b, "touch k 10\r\n", ReplyMode::single);
  expect_request(memcached, "get_me_not\r\ntouch k 10\r\n");
  memcached.send("ERROR\r\nTOUCHED\r\n");
  ASSERT_TRUE(run_until([&] { return b.completions > 0; }));
  EXPECT_EQ(a.reply(), "ERROR\r\n");
  EXPECT_EQ(b.reply(), "TOUCHED\r\n");
  EXPECT_EQ(server.stats().replies_error.get(), 1u);
}

// ---------------------------------------------------------------------------
// 3. Replies cut anywhere by the network.

// Sends `reply` as pieces cut at `cuts`, running the loop between them, and
// checks the op completes only with the last piece.
class PartialReplies : public BackendTest {
 protected:
  void deliver_in_pieces(FakeServer& memcached, FakeOwner& owner, const std::string& reply,
                         const std::vector<size_t>& cuts) {
    size_t from = 0;
    for (size_t cut : cuts) {
      memcached.send(std::string_view(reply).substr(from, cut - from));
      from = cut;
      run_iterations(2);
      ASSERT_EQ(owner.completions, 0)
          << "complete with only " << cut << " bytes of '" << reply << "'";
    }
    memcached.send(std::string_view(reply).substr(from));
    ASSERT_TRUE(run_until_complete(owner));
  }
};

TEST_F(PartialReplies, ALineCutMidWayIsAssembled) {
  FakeServer memcached;
  BackendServer& server = add_server(memcached.addresses());
  BackendConn* conn = server.connection_for(0);
  FakeOwner owner;
  forward(*conn, owner, "set k 0 0 1\r\nx\r\n", ReplyMode::single);
  expect_request(memcached, "set k 0 0 1\r\nx\r\n");
  deliver_in_pieces(memcached, owner, "STORED\r\n", {3, 7});  // "STO", "RED\r", "\n"
  EXPECT_EQ(owner.reply(), "STORED\r\n");
}

TEST_F(PartialReplies, ValueBlocksCutAtEveryOffsetAreAssembledExactly) {
  FakeServer memcached;
  BackendServer& server = add_server(memcached.addresses());
  BackendConn* conn = server.connection_for(0);
  const std::string reply =
      "VALUE a 5 10 77\r\n0123456789\r\nVALUE bb 0 3\r\n\r\n\n\r\nEND\r\n";  // the data of bb
                                                                             // looks like line ends
  for (size_t cut = 1; cut < reply.size(); ++cut) {
    SCOPED_TRACE("cut at " + std::to_string(cut));
    FakeOwner owner;
    get(*conn, owner, {"a", "bb"});
    expect_request(memcached, "get a bb\r\n");
    deliver_in_pieces(memcached, owner, reply, {cut});
    EXPECT_EQ(owner.reply(), reply);
    if (HasFailure()) return;  // one broken cut is enough; the rest would each wait out a budget
  }
  EXPECT_EQ(server.stats().server_err.get(), 0u);
  EXPECT_EQ(server.stats().replies_hit.get(), 2 * (reply.size() - 1));
}

TEST_F(PartialReplies, AMetaValueCutInThreeIsAssembled) {
  FakeServer memcached;
  BackendServer& server = add_server(memcached.addresses());
  BackendConn* conn = server.connection_for(0);
  FakeOwner owner;
  forward(*conn, owner, "mg k v f\r\n", ReplyMode::meta);
  expect_request(memcached, "mg k v f\r\n");
  deliver_in_pieces(memcached, owner, "VA 5 f3\r\nhello\r\n", {4, 11, 15});
  EXPECT_EQ(owner.reply(), "VA 5 f3\r\nhello\r\n");
}

// ---------------------------------------------------------------------------
// 4. Retrievals joined on one line.

TEST_F(BackendTest, RetrievalsQueuedTogetherShareOneGetLineAndTheReplyIsSplitByKey) {
  FakeServer memcached;
  BackendServer& server = add_server(memcached.addresses());
  BackendConn* conn = server.connection_for(0);
  FakeOwner a, bc, d;
  get(*conn, a, {"a"});
  get(*conn, bc, {"b", "c"});
  get(*conn, d, {"d"});
  EXPECT_EQ(server.stats().requests_joined.get(), 2u);
  expect_request(memcached, "get a b c d\r\n");

  // a and c missed; d is split from the one before it by key alone.
  memcached.send("VALUE b 1 2\r\nbb\r\nVALUE d 2 1\r\nd\r\nEND\r\n");
  ASSERT_TRUE(run_until([&] { return d.completions > 0; }));
  EXPECT_EQ(a.reply(), "END\r\n");
  EXPECT_EQ(bc.reply(), "VALUE b 1 2\r\nbb\r\nEND\r\n");
  EXPECT_EQ(d.reply(), "VALUE d 2 1\r\nd\r\nEND\r\n");
  EXPECT_EQ(a.completions + bc.completions + d.completions, 3);
  EXPECT_EQ(server.stats().replies_miss.get(), 2u);
  EXPECT_EQ(server.stats().replies_hit.get(), 2u);
  EXPECT_EQ(server.stats().responses.get(), 3u);
  EXPECT_EQ(server.stats().out_queue_bytes.get(), 0u) << "joined bytes not all accounted for";
}

TEST_F(BackendTest, AKeyAlreadyOnTheOpenLineStartsALineOfItsOwn) {
  FakeServer memcached;
  BackendServer& server = add_server(memcached.addresses());
  BackendConn* conn = server.connection_for(0);
  FakeOwner first, second, third;
  get(*conn, first, {"k"});
  get(*conn, second, {"other"});
  get(*conn, third, {"k"});
  EXPECT_EQ(server.stats().requests_joined.get(), 1u);
  expect_request(memcached, "get k other\r\nget k\r\n");
  memcached.send("VALUE k 0 1\r\n1\r\nEND\r\nVALUE k 0 1\r\n2\r\nEND\r\n");
  ASSERT_TRUE(run_until([&] { return third.completions > 0; }));
  EXPECT_EQ(first.reply(), "VALUE k 0 1\r\n1\r\nEND\r\n");
  EXPECT_EQ(second.reply(), "END\r\n");
  EXPECT_EQ(third.reply(), "VALUE k 0 1\r\n2\r\nEND\r\n");
}

TEST_F(BackendTest, ARetrievalAfterOtherOutputIsNotJoinedAcrossIt) {
  FakeServer memcached;
  BackendServer& server = add_server(memcached.addresses());
  BackendConn* conn = server.connection_for(0);
  FakeOwner g1, del, g2;
  get(*conn, g1, {"a"});
  forward(*conn, del, "delete x\r\n", ReplyMode::single);
  get(*conn, g2, {"b"});
  EXPECT_EQ(server.stats().requests_joined.get(), 0u);
  expect_request(memcached, "get a\r\ndelete x\r\nget b\r\n");
  memcached.send("END\r\nDELETED\r\nVALUE b 0 1\r\nb\r\nEND\r\n");
  ASSERT_TRUE(run_until([&] { return g2.completions > 0; }));
  EXPECT_EQ(g1.reply(), "END\r\n");
  EXPECT_EQ(del.reply(), "DELETED\r\n");
  EXPECT_EQ(g2.reply(), "VALUE b 0 1\r\nb\r\nEND\r\n");
}

TEST_F(BackendTest, AnErrorLineEndsASharedLineFailingOnlyTheOpsItCutOff) {
  FakeServer memcached;
  BackendServer& server = add_server(memcached.addresses());
  BackendConn* conn = server.connection_for(0);
  FakeOwner answered, cut_off;
  get(*conn, answered, {"a"});
  get(*conn, cut_off, {"b"});
  expect_request(memcached, "get a b\r\n");
  memcached.send("VALUE a 0 1\r\nA\r\nSERVER_ERROR out of memory writing get response\r\n");
  ASSERT_TRUE(run_until([&] { return cut_off.completions > 0; }));
  EXPECT_EQ(answered.reply(), "VALUE a 0 1\r\nA\r\nEND\r\n");
  EXPECT_FALSE(answered.slot->fragment(0).failed);
  EXPECT_TRUE(cut_off.slot->fragment(0).failed);
  EXPECT_EQ(cut_off.reply(), "SERVER_ERROR out of memory writing get response\r\n");
  // A server's own error is an answer: the connection goes on.
  EXPECT_EQ(server.stats().server_err.get(), 0u);
  FakeOwner next;
  forward(*conn, next, "delete a\r\n", ReplyMode::single);
  expect_request(memcached, "delete a\r\n");
  memcached.send("DELETED\r\n");
  ASSERT_TRUE(run_until_complete(next));
  EXPECT_EQ(memcached.accepted(), 1);
}

// ---------------------------------------------------------------------------
// 11. Quiet requests, ended by the "mn" the proxy adds.

TEST_F(BackendTest, QuietDropDiscardsEverythingUpToMn) {
  FakeServer memcached;
  BackendServer& server = add_server(memcached.addresses());
  BackendConn* conn = server.connection_for(0);
  FakeOwner quiet, quiet_failed, loud;
  forward(*conn, quiet, "set a 0 0 1 noreply\r\na\r\n", ReplyMode::quiet_drop);
  forward(*conn, quiet_failed, "set b 0 0 1 noreply\r\nb\r\n", ReplyMode::quiet_drop);
  forward(*conn, loud, "set c 0 0 1\r\nc\r\n", ReplyMode::single);
  expect_request(memcached,
                 "set a 0 0 1 noreply\r\na\r\nmn\r\n"
                 "set b 0 0 1 noreply\r\nb\r\nmn\r\n"
                 "set c 0 0 1\r\nc\r\n");
  memcached.send("MN\r\nSERVER_ERROR out of memory storing object\r\nMN\r\nSTORED\r\n");
  ASSERT_TRUE(run_until([&] { return loud.completions > 0; }));
  EXPECT_EQ(quiet.completions, 1);
  EXPECT_EQ(quiet.reply(), "");
  EXPECT_EQ(quiet_failed.completions, 1);
  EXPECT_EQ(quiet_failed.reply(), "");
  EXPECT_EQ(loud.reply(), "STORED\r\n");
  EXPECT_EQ(server.stats().server_err.get(), 0u);
}

TEST_F(BackendTest, QuietKeepKeepsEverythingUpToMn) {
  FakeServer memcached;
  BackendServer& server = add_server(memcached.addresses());
  BackendConn* conn = server.connection_for(0);
  FakeOwner hit, miss, stored;
  forward(*conn, hit, "mg a v q\r\n", ReplyMode::quiet_keep);
  forward(*conn, miss, "mg b v q\r\n", ReplyMode::quiet_keep);
  forward(*conn, stored, "ms c 1 q\r\nc\r\n", ReplyMode::quiet_keep);
  expect_request(memcached, "mg a v q\r\nmn\r\nmg b v q\r\nmn\r\nms c 1 q\r\nc\r\nmn\r\n");
  // The value's data contains "MN\r\n": only a line can end the reply.
  memcached.send("VA 4\r\nMN\r\n\r\nMN\r\nMN\r\nNS\r\nMN\r\n");
  ASSERT_TRUE(run_until([&] { return stored.completions > 0; }));
  EXPECT_EQ(hit.reply(), "VA 4\r\nMN\r\n\r\n");
  EXPECT_EQ(miss.reply(), "");
  EXPECT_EQ(stored.reply(), "NS\r\n");
  EXPECT_EQ(hit.completions + miss.completions + stored.completions, 3);
}

TEST_F(BackendTest, QuietOpsFailedByTheServerClosing) {
  FakeServer memcached;
  BackendServer& server = add_server(memcached.addresses());
  BackendConn* conn = server.connection_for(0);
  FakeOwner dropped, kept;
  forward(*conn, dropped, "delete a noreply\r\n", ReplyMode::quiet_drop);
  forward(*conn, kept, "md b q\r\n", ReplyMode::quiet_keep);
  expect_request(memcached, "delete a noreply\r\nmn\r\nmd b q\r\nmn\r\n");
  memcached.hang_up();
  ASSERT_TRUE(run_until([&] { return kept.completions > 0; }));
  EXPECT_EQ(dropped.reply(), "") << "noreply asked for silence even about failures";
  EXPECT_EQ(kept.reply(), line(own::kBackendClosed));
}

// ---------------------------------------------------------------------------
// 12. flush_all to every server.

TEST_F(BackendTest, BroadcastIsOkOnlyWhenEveryServerSaysOk) {
  FakeServer m0, m1;
  BackendServer& s0 = add_server(m0.addresses());
  BackendServer& s1 = add_server(m1.addresses());

  FakeOwner all_ok;
  broadcast(*s0.connection_for(0), all_ok);
  broadcast(*s1.connection_for(0), all_ok);
  expect_request(m0, "flush_all\r\n");
  expect_request(m1, "flush_all\r\n");
  m0.send("OK\r\n");
  run_iterations(2);
  EXPECT_EQ(all_ok.completions, 0) << "complete with one server still to answer";
  m1.send("OK\r\n");
  ASSERT_TRUE(run_until_complete(all_ok));
  EXPECT_TRUE(all_ok.slot->error().empty());
  EXPECT_EQ(all_ok.reply(), "OK\r\n");

  FakeOwner one_error;
  broadcast(*s0.connection_for(0), one_error);
  broadcast(*s1.connection_for(0), one_error);
  expect_request(m0, "flush_all\r\n");
  expect_request(m1, "flush_all\r\n");
  m0.send("OK\r\n");
  m1.send("SERVER_ERROR flush_all disabled\r\n");
  ASSERT_TRUE(run_until_complete(one_error));
  EXPECT_EQ(one_error.slot->error(), "SERVER_ERROR flush_all disabled\r\n");
  EXPECT_EQ(one_error.reply(), "SERVER_ERROR flush_all disabled\r\n");

  FakeOwner odd;
  broadcast(*s0.connection_for(0), odd);
  expect_request(m0, "flush_all\r\n");
  m0.send("STORED\r\n");  // a valid line, but not an answer to flush_all
  ASSERT_TRUE(run_until_complete(odd));
  EXPECT_EQ(odd.slot->error(), line(own::kBackendGarbled));
  EXPECT_EQ(s0.stats().server_err.get(), 0u) << "the reply stream itself is intact";
}

}  // namespace
}  // namespace memshard::proxy::testing_backends
