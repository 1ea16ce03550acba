// FailoverRoute (routes/failover_route.h) over ServerRoutes: the next
// server is tried, with the same bytes, on a SERVER_ERROR (and on a miss
// with on_miss); the client's slot completes exactly once, and every slot
// the route takes for its tries goes back.
#include "proxy/routes/failover_route.h"

#include <gtest/gtest.h>

#include "proxy/routes/key_route.h"
#include "tests/proxy/routes/route_test_util.h"

namespace memshard::proxy::testing_fakes {
namespace {

class FailoverRouteTest : public RouteTest {
 protected:
  ~FailoverRouteTest() override {
    EXPECT_EQ(slots_.outstanding, 0) << "a try's slot was not given back";
  }
  void send(FailoverRoute& route, ReplySlot& slot) {
    RouteRequest req = route_request();
    route.send(req, slot);
  }
  ServerRoute r0_{servers_[0]};
  ServerRoute r1_{servers_[1]};
  ServerRoute r2_{servers_[2]};
  FailoverRoute route_{{&r0_, &r1_, &r2_}, false};
  FailoverRoute on_miss_{{&r0_, &r1_, &r2_}, true};
};

TEST_F(FailoverRouteTest, FirstAnswerIsTheReply) {
  request("set k 0 0 3", "abc\r\n", "get x\r\n");
  ReplySlot& slot = client_slot();
  send(route_, slot);
  ASSERT_EQ(servers_[0].box.ops.size(), 1u);
  EXPECT_EQ(servers_[0].box.ops[0].bytes, "set k 0 0 3\r\nabc\r\n");
  EXPECT_NE(servers_[0].box.ops[0].op.slot, &slot) << "a try fills a slot of its own";
  EXPECT_TRUE(servers_[1].box.ops.empty());
  EXPECT_EQ(input(), "get x\r\n");
  EXPECT_FALSE(slot.complete());
  EXPECT_EQ(slots_.outstanding, 1);

  answer(servers_[0].box.ops[0], "STORED\r\n");
  EXPECT_TRUE(slot.complete());
  EXPECT_EQ(owner_.told, 1);
  EXPECT_EQ(copy_all(slot.reply()), "STORED\r\n");
  EXPECT_TRUE(servers_[1].box.ops.empty());
}

TEST_F(FailoverRouteTest, ServerErrorTriesTheNextWithTheSameBytes) {
  request("set k 0 0 3", "abc\r\n");
  ReplySlot& slot = client_slot();
  send(route_, slot);
  slots_.now = kNowUsec + 300'000;  // the first try timed out
  answer(servers_[0].box.ops[0], "SERVER_ERROR backend timed out\r\n");
  EXPECT_FALSE(slot.complete());
  EXPECT_EQ(owner_.told, 0);
  EXPECT_EQ(slots_.outstanding, 1) << "the failed try's slot is given back";
  ASSERT_EQ(servers_[1].box.ops.size(), 1u);
  EXPECT_EQ(servers_[1].box.ops[0].bytes, "set k 0 0 3\r\nabc\r\n");
  EXPECT_EQ(servers_[1].box.ops[0].op.sent_usec, kNowUsec + 300'000)
      << "a try sent later counts from then: a deadline already past would fail the next "
         "server's whole connection";
  answer(servers_[1].box.ops[0], "STORED\r\n");
  EXPECT_TRUE(slot.complete());
  EXPECT_EQ(owner_.told, 1);
  EXPECT_EQ(copy_all(slot.reply()), "STORED\r\n");
  EXPECT_TRUE(servers_[2].box.ops.empty());
}

TEST_F(FailoverRouteTest, DownServerIsSkippedWithinSend) {
  servers_[0].down = true;
  request("mg k v");
  ReplySlot& slot = client_slot();
  send(route_, slot);
  ASSERT_EQ(servers_[1].box.ops.size(), 1u);
  EXPECT_EQ(servers_[1].box.ops[0].bytes, "mg k v\r\n");
  EXPECT_FALSE(slot.complete());
  answer(servers_[1].box.ops[0], "VA 1\r\nx\r\n");
  EXPECT_TRUE(slot.complete());
  EXPECT_EQ(owner_.told, 1);
  EXPECT_EQ(copy_all(slot.reply()), "VA 1\r\nx\r\n");
}

TEST_F(FailoverRouteTest, MissIsTheReplyWithoutOnMiss) {
  request("mg k v");
  ReplySlot& slot = client_slot();
  send(route_, slot);
  answer(servers_[0].box.ops[0], "EN\r\n");
  EXPECT_TRUE(slot.complete());
  EXPECT_EQ(copy_all(slot.reply()), "EN\r\n");
  EXPECT_TRUE(servers_[1].box.ops.empty());

  request("get k");
  ReplySlot& get = client_slot();
  send(route_, get);
  answer(servers_[0].box.ops[1], "END\r\n");
  EXPECT_EQ(copy_all(get.reply()), "END\r\n");
  EXPECT_TRUE(servers_[1].box.ops.empty());
}

TEST_F(FailoverRouteTest, MissTriesTheNextWithOnMiss) {
  request("mg k v");
  ReplySlot& slot = client_slot();
  send(on_miss_, slot);
  answer(servers_[0].box.ops[0], "EN\r\n");
  EXPECT_FALSE(slot.complete());
  ASSERT_EQ(servers_[1].box.ops.size(), 1u);
  answer(servers_[1].box.ops[0], "VA 2\r\nhi\r\n");
  EXPECT_EQ(copy_all(slot.reply()), "VA 2\r\nhi\r\n");
  EXPECT_EQ(owner_.told, 1);

  request("get k");
  ReplySlot& get = client_slot();
  send(on_miss_, get);
  answer(servers_[0].box.ops[1], "END\r\n");
  ASSERT_EQ(servers_[1].box.ops.size(), 2u);
  answer(servers_[1].box.ops[1], "END\r\n");
  ASSERT_EQ(servers_[2].box.ops.size(), 1u);
  answer(servers_[2].box.ops[0], "END\r\n");
  EXPECT_TRUE(get.complete());
  EXPECT_EQ(copy_all(get.reply()), "END\r\n") << "the last try's miss";
}

TEST_F(FailoverRouteTest, OnMissIsNotFooledByAHit) {
  // A hit's reply ends with END too: only a bare END is a miss.
  request("get k");
  ReplySlot& slot = client_slot();
  send(on_miss_, slot);
  answer(servers_[0].box.ops[0], "VALUE k 0 1\r\nx\r\nEND\r\n");
  EXPECT_TRUE(slot.complete());
  EXPECT_TRUE(servers_[1].box.ops.empty());
}

TEST_F(FailoverRouteTest, AllFailingGivesTheLastError) {
  request("delete k");
  ReplySlot& slot = client_slot();
  send(route_, slot);
  answer(servers_[0].box.ops[0], "SERVER_ERROR first\r\n");
  answer(servers_[1].box.ops[0], "SERVER_ERROR second\r\n");
  EXPECT_FALSE(slot.complete());
  answer(servers_[2].box.ops[0], "SERVER_ERROR third\r\n");
  EXPECT_TRUE(slot.complete());
  EXPECT_EQ(owner_.told, 1);
  EXPECT_EQ(copy_all(slot.reply()), "SERVER_ERROR third\r\n");
}

TEST_F(FailoverRouteTest, AsynchronousFailureThenDownServersCompletesOnce) {
  servers_[1].down = true;
  servers_[2].down = true;
  request("delete k");
  ReplySlot& slot = client_slot();
  send(route_, slot);
  answer(servers_[0].box.ops[0], "SERVER_ERROR backend closed\r\n");
  EXPECT_TRUE(slot.complete());
  EXPECT_EQ(owner_.told, 1);
  EXPECT_EQ(slot.outstanding(), 0u);
  EXPECT_EQ(copy_all(slot.reply()), "SERVER_ERROR backend unavailable\r\n");
}

TEST_F(FailoverRouteTest, AllDownCompletesInsideSendWithoutTellingTheOwner) {
  for (FakeServer& s : servers_) s.down = true;
  request("delete k", {}, "get x\r\n");
  ReplySlot& slot = client_slot();
  send(route_, slot);
  EXPECT_TRUE(slot.complete());
  EXPECT_EQ(slot.outstanding(), 0u);
  EXPECT_EQ(owner_.told, 0) << "the client writes complete slots when its dispatch returns";
  EXPECT_EQ(copy_all(slot.reply()), "SERVER_ERROR backend unavailable\r\n");
  EXPECT_EQ(input(), "get x\r\n");
  EXPECT_EQ(slots_.acquired, 3);
}

TEST_F(FailoverRouteTest, ConnectionFailureTriesTheNext) {
  request("set k 0 0 1", "x\r\n");
  ReplySlot& slot = client_slot();
  send(route_, slot);
  fail_op(servers_[0].box.ops[0], "SERVER_ERROR backend closed");
  ASSERT_EQ(servers_[1].box.ops.size(), 1u);
  answer(servers_[1].box.ops[0], "STORED\r\n");
  EXPECT_EQ(copy_all(slot.reply()), "STORED\r\n");
}

// noreply asks for silence, not for the write to be dropped: a first
// server that is down must not keep the value from the second.
TEST_F(FailoverRouteTest, NoreplyWriteFailsOverPastADownServer) {
  servers_[0].down = true;
  request("set k 0 0 1 noreply", "x\r\n");
  ReplySlot& slot = client_slot();
  send(route_, slot);
  ASSERT_EQ(servers_[1].box.ops.size(), 1u) << "the write stopped at the down server";
  EXPECT_EQ(servers_[1].box.ops[0].bytes, "set k 0 0 1 noreply\r\nx\r\nmn\r\n");
  answer(servers_[1].box.ops[0], "MN\r\n");
  EXPECT_TRUE(slot.complete());
  EXPECT_EQ(copy_all(slot.reply()), "") << "still silent to the client";
}

TEST_F(FailoverRouteTest, NoreplyWriteFailsOverPastAFailedConnection) {
  request("set k 0 0 1 noreply", "x\r\n");
  ReplySlot& slot = client_slot();
  send(route_, slot);
  fail_op(servers_[0].box.ops[0], "SERVER_ERROR backend closed");
  ASSERT_EQ(servers_[1].box.ops.size(), 1u) << "the write stopped at the failed server";
  answer(servers_[1].box.ops[0], "MN\r\n");
  EXPECT_TRUE(slot.complete());
  EXPECT_EQ(owner_.told, 1);
  EXPECT_EQ(copy_all(slot.reply()), "");
}

TEST_F(FailoverRouteTest, NoreplyWriteEverywhereDownStaysSilent) {
  for (FakeServer& s : servers_) s.down = true;
  request("delete k noreply");
  ReplySlot& slot = client_slot();
  send(route_, slot);
  EXPECT_TRUE(slot.complete());
  EXPECT_EQ(copy_all(slot.reply()), "");
  EXPECT_EQ(slots_.acquired, 3) << "every server was tried";
}

TEST_F(FailoverRouteTest, ManyRequestsLeakNoSlot) {
  for (int i = 0; i < 50; ++i) {
    servers_[1].down = i % 3 == 0;
    request("mg k v");
    ReplySlot& slot = client_slot();
    send(on_miss_, slot);
    SentOp& first = servers_[0].box.ops.back();
    answer(first, i % 2 == 0 ? "EN\r\n" : "SERVER_ERROR busy\r\n");
    if (!slot.complete()) {
      FakeServer& next = servers_[1].down ? servers_[2] : servers_[1];
      answer(next.box.ops.back(), "HD\r\n");
    }
    EXPECT_TRUE(slot.complete());
  }
  EXPECT_EQ(slots_.outstanding, 0);
  EXPECT_EQ(owner_.told, 50);
}

TEST_F(FailoverRouteTest, MissThenOnlyFailuresLeavesTheMissAsTheAnswer) {
  servers_[1].down = true;
  servers_[2].down = true;
  request("mg k v");
  ReplySlot& slot = client_slot();
  send(on_miss_, slot);
  answer(servers_[0].box.ops[0], "EN\r\n");
  ASSERT_TRUE(slot.complete());
  EXPECT_EQ(copy_all(slot.reply()), "EN\r\n")
      << "a copy that is down does not turn a miss into an error";
}

}  // namespace
}  // namespace memshard::proxy::testing_fakes
