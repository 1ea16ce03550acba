// KeyRoute and ServerRoute (routes/key_route.h) over fake servers: what
// reaches which server, how quiet requests are read back, and what the
// client is told when the server is unavailable.
#include "proxy/routes/key_route.h"

#include <gtest/gtest.h>

#include "tests/proxy/routes/route_test_util.h"

namespace memshard::proxy::testing_fakes {
namespace {

class KeyRouteTest : public RouteTest {
 protected:
  KeyRouteTest() { placement_.where = {{"a", 0}, {"k", 1}, {"z", 2}}; }
  KeyRoute route_{placement_};
};

TEST_F(KeyRouteTest, BytesReachTheKeysServerAsSentAndLeaveTheInput) {
  request("set k 0 0 5", "hello\r\n", "get a\r\n");
  ReplySlot& slot = client_slot();
  RouteRequest req = route_request();
  route_.send(req, slot);

  ASSERT_EQ(servers_[1].box.ops.size(), 1u);
  EXPECT_TRUE(servers_[0].box.ops.empty());
  EXPECT_TRUE(servers_[2].box.ops.empty());
  SentOp& op = servers_[1].box.ops[0];
  EXPECT_EQ(op.bytes, "set k 0 0 5\r\nhello\r\n");
  EXPECT_FALSE(op.via_retrieval);
  EXPECT_EQ(op.op.slot, &slot);
  EXPECT_EQ(op.op.fragment, 0u);
  EXPECT_EQ(op.op.mode, ReplyMode::single);
  EXPECT_EQ(op.op.sent_usec, kNowUsec);
  EXPECT_EQ(servers_[1].affinities, std::vector<uint64_t>{kAffinity});
  EXPECT_EQ(input(), "get a\r\n") << "the request's bytes, and only they, are consumed";
  EXPECT_FALSE(slot.complete());
  EXPECT_EQ(slot.outstanding(), 1u);
  EXPECT_EQ(worker_stats_.fragments.get(), 1u);
  EXPECT_EQ(pool_stats_.fragments.get(), 1u);

  answer(op, "STORED\r\n");
  EXPECT_TRUE(slot.complete());
  EXPECT_EQ(owner_.told, 1);
  EXPECT_EQ(copy_all(slot.reply()), "STORED\r\n");
  EXPECT_EQ(worker_stats_.forward_error.get(), 0u);
}

TEST_F(KeyRouteTest, MetaRequestIsReadAsMeta) {
  request("mg z v t", {}, "mn\r\n");
  ReplySlot& slot = client_slot();
  RouteRequest req = route_request();
  route_.send(req, slot);
  ASSERT_EQ(servers_[2].box.ops.size(), 1u);
  EXPECT_EQ(servers_[2].box.ops[0].bytes, "mg z v t\r\n");
  EXPECT_EQ(servers_[2].box.ops[0].op.mode, ReplyMode::meta);
  EXPECT_EQ(input(), "mn\r\n");
}

TEST_F(KeyRouteTest, NoreplyIsFollowedByMnAndItsAnswerDropped) {
  request("set k 0 0 1 noreply", "x\r\n");
  ReplySlot& slot = client_slot();
  RouteRequest req = route_request();
  route_.send(req, slot);
  ASSERT_EQ(servers_[1].box.ops.size(), 1u);
  SentOp& op = servers_[1].box.ops[0];
  EXPECT_EQ(op.bytes, "set k 0 0 1 noreply\r\nx\r\nmn\r\n");
  EXPECT_EQ(op.op.mode, ReplyMode::quiet_drop);
  EXPECT_EQ(input(), "");
  answer(op, "MN\r\n");
  EXPECT_TRUE(slot.complete());
  EXPECT_EQ(copy_all(slot.reply()), "");
}

TEST_F(KeyRouteTest, QuietMetaIsFollowedByMnAndItsAnswerKept) {
  request("md a q");
  ReplySlot& slot = client_slot();
  RouteRequest req = route_request();
  route_.send(req, slot);
  ASSERT_EQ(servers_[0].box.ops.size(), 1u);
  EXPECT_EQ(servers_[0].box.ops[0].bytes, "md a q\r\nmn\r\n");
  EXPECT_EQ(servers_[0].box.ops[0].op.mode, ReplyMode::quiet_keep);
}

TEST_F(KeyRouteTest, UnavailableServerAnswersServerErrorAtOnce) {
  servers_[1].down = true;
  request("delete k", {}, "get a\r\n");
  ReplySlot& slot = client_slot();
  RouteRequest req = route_request();
  route_.send(req, slot);
  EXPECT_TRUE(servers_[1].box.ops.empty());
  EXPECT_TRUE(slot.complete());
  EXPECT_EQ(slot.outstanding(), 0u);
  EXPECT_EQ(owner_.told, 0) << "completed inside send(): the client sees it on return";
  EXPECT_EQ(copy_all(slot.reply()), "SERVER_ERROR backend unavailable\r\n");
  EXPECT_EQ(input(), "get a\r\n");
  EXPECT_EQ(worker_stats_.forward_error.get(), 1u);
  EXPECT_EQ(pool_stats_.forward_error.get(), 1u);
  EXPECT_EQ(worker_stats_.fragments.get(), 0u);
}

TEST_F(KeyRouteTest, UnavailableServerIsSilentForNoreply) {
  servers_[1].down = true;
  request("set k 0 0 3 noreply", "abc\r\n", "get a\r\n");
  ReplySlot& slot = client_slot();
  RouteRequest req = route_request();
  route_.send(req, slot);
  EXPECT_TRUE(slot.complete());
  EXPECT_EQ(copy_all(slot.reply()), "");
  EXPECT_EQ(input(), "get a\r\n") << "the value is consumed with its line";
  EXPECT_EQ(worker_stats_.forward_error.get(), 1u);
}

TEST_F(KeyRouteTest, QuietMetaStillHearsOfAnUnavailableServer) {
  servers_[0].down = true;
  request("md a q");
  ReplySlot& slot = client_slot();
  RouteRequest req = route_request();
  route_.send(req, slot);
  EXPECT_TRUE(slot.complete());
  EXPECT_EQ(copy_all(slot.reply()), "SERVER_ERROR backend unavailable\r\n");
}

TEST_F(KeyRouteTest, NoLiveServerForTheKeyIsUnavailable) {
  request("delete nowhere");
  ReplySlot& slot = client_slot();
  RouteRequest req = route_request();
  route_.send(req, slot);
  EXPECT_TRUE(slot.complete());
  EXPECT_EQ(copy_all(slot.reply()), "SERVER_ERROR backend unavailable\r\n");
  EXPECT_EQ(input(), "");
  EXPECT_EQ(worker_stats_.forward_error.get(), 1u);
}

TEST_F(KeyRouteTest, InvalidateDeletesQuietlyAndLeavesTheInput) {
  // A set refused as too large: the client connection has put the refusal
  // in the slot and will swallow the value itself.
  request("set k 0 0 100", {}, {}, proto::Limits{10});
  ASSERT_EQ(request_.action, proto::Action::error);
  ASSERT_TRUE(request_.invalidate_key);
  evbuffer_add(in_, "0123456789", 10);  // part of the value, the connection's to swallow
  std::string before = input();
  ReplySlot& slot = client_slot();
  evbuffer_add(slot.reply(), request_.error_reply.data(), request_.error_reply.size());
  RouteRequest req = route_request();
  route_.invalidate(req, slot);

  EXPECT_EQ(input(), before);
  ASSERT_EQ(servers_[1].box.ops.size(), 1u);
  SentOp& op = servers_[1].box.ops[0];
  EXPECT_EQ(op.bytes, "md k q\r\nmn\r\n");
  EXPECT_EQ(op.op.mode, ReplyMode::quiet_drop);
  EXPECT_FALSE(slot.complete()) << "the refusal waits for the delete, to keep the order";
  answer(op, "MN\r\n");
  EXPECT_TRUE(slot.complete());
  EXPECT_EQ(owner_.told, 1);
  EXPECT_EQ(copy_all(slot.reply()), std::string(request_.error_reply));
}

TEST_F(KeyRouteTest, InvalidateWithTheServerDownJustRefuses) {
  servers_[1].down = true;
  request("set k 0 0 100", {}, {}, proto::Limits{10});
  ReplySlot& slot = client_slot();
  evbuffer_add(slot.reply(), request_.error_reply.data(), request_.error_reply.size());
  RouteRequest req = route_request();
  route_.invalidate(req, slot);
  EXPECT_FALSE(slot.complete()) << "the caller completes it, once every route added its deletes";
  EXPECT_EQ(slot.outstanding(), 0u) << "no delete went out";
  slot.complete_unsent();  // as ClientConn does
  EXPECT_TRUE(slot.complete());
  EXPECT_EQ(copy_all(slot.reply()), std::string(request_.error_reply));
}

TEST_F(KeyRouteTest, ServerRouteSendsToItsServerWhateverTheKey) {
  ServerRoute fixed(servers_[2]);
  request("incr k 5");
  ReplySlot& slot = client_slot();
  RouteRequest req = route_request();
  fixed.send(req, slot);
  EXPECT_TRUE(servers_[1].box.ops.empty());
  ASSERT_EQ(servers_[2].box.ops.size(), 1u);
  EXPECT_EQ(servers_[2].box.ops[0].bytes, "incr k 5\r\n");
  answer(servers_[2].box.ops[0], "6\r\n");
  EXPECT_EQ(copy_all(slot.reply()), "6\r\n");
}

}  // namespace
}  // namespace memshard::proxy::testing_fakes
