// BroadcastRoute (routes/broadcast_route.h): flush_all to every server, OK
// only when every server said OK.
#include "proxy/routes/broadcast_route.h"

#include <gtest/gtest.h>

#include "tests/proxy/routes/route_test_util.h"

namespace memshard::proxy::testing_fakes {
namespace {

class BroadcastRouteTest : public RouteTest {
 protected:
  void send(ReplySlot& slot) {
    RouteRequest req = route_request();
    route_.send(req, slot);
  }
  BroadcastRoute route_{placement_};
};

TEST_F(BroadcastRouteTest, EveryServerGetsTheLineAndAllOkIsOk) {
  request("flush_all 10", {}, "version\r\n");
  ReplySlot& slot = client_slot();
  send(slot);
  for (FakeServer& s : servers_) {
    ASSERT_EQ(s.box.ops.size(), 1u);
    EXPECT_EQ(s.box.ops[0].bytes, "flush_all 10\r\n");
    EXPECT_EQ(s.box.ops[0].op.mode, ReplyMode::broadcast);
    EXPECT_EQ(s.box.ops[0].op.slot, &slot);
  }
  EXPECT_EQ(input(), "version\r\n");
  EXPECT_EQ(slot.outstanding(), 3u);
  answer(servers_[2].box.ops[0], "OK\r\n");
  answer(servers_[0].box.ops[0], "OK\r\n");
  EXPECT_FALSE(slot.complete());
  answer(servers_[1].box.ops[0], "OK\r\n");
  EXPECT_TRUE(slot.complete());
  EXPECT_EQ(owner_.told, 1);
  EXPECT_EQ(copy_all(slot.reply()), "OK\r\n");
}

TEST_F(BroadcastRouteTest, OneErrorIsTheReply) {
  request("flush_all");
  ReplySlot& slot = client_slot();
  send(slot);
  answer(servers_[0].box.ops[0], "OK\r\n");
  answer(servers_[1].box.ops[0], "SERVER_ERROR out of memory\r\n");
  answer(servers_[2].box.ops[0], "OK\r\n");
  EXPECT_EQ(copy_all(slot.reply()), "SERVER_ERROR out of memory\r\n");
}

TEST_F(BroadcastRouteTest, DownServerIsTheError) {
  servers_[1].down = true;
  request("flush_all");
  ReplySlot& slot = client_slot();
  send(slot);
  EXPECT_TRUE(servers_[1].box.ops.empty());
  EXPECT_EQ(worker_stats_.forward_error.get(), 1u);
  answer(servers_[0].box.ops[0], "OK\r\n");
  answer(servers_[2].box.ops[0], "OK\r\n");
  EXPECT_EQ(copy_all(slot.reply()), "SERVER_ERROR backend unavailable\r\n");
}

TEST_F(BroadcastRouteTest, AllDownCompletesAtOnce) {
  for (FakeServer& s : servers_) s.down = true;
  request("flush_all");
  ReplySlot& slot = client_slot();
  send(slot);
  EXPECT_TRUE(slot.complete());
  EXPECT_EQ(owner_.told, 0);
  EXPECT_EQ(copy_all(slot.reply()), "SERVER_ERROR backend unavailable\r\n");
  EXPECT_EQ(input(), "");
}

TEST_F(BroadcastRouteTest, QuietFlushDropsTheReply) {
  request("flush_all noreply");
  ASSERT_TRUE(request_.quiet);
  ReplySlot& slot = client_slot();
  send(slot);
  EXPECT_TRUE(slot.drop_reply());
  for (FakeServer& s : servers_) {
    ASSERT_EQ(s.box.ops.size(), 1u);
    EXPECT_EQ(s.box.ops[0].bytes, "flush_all noreply\r\nmn\r\n");
    EXPECT_EQ(s.box.ops[0].op.mode, ReplyMode::quiet_drop);
  }
  for (FakeServer& s : servers_) answer(s.box.ops[0], "MN\r\n");
  EXPECT_TRUE(slot.complete());
  EXPECT_EQ(owner_.told, 1);
}

}  // namespace
}  // namespace memshard::proxy::testing_fakes
