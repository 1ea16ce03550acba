// FanoutRoute (routes/fanout_route.h) over three ServerRoutes: every copy
// gets the bytes, the reply is chosen by policy once every copy answered,
// and every slot taken for the copies goes back.
#include "proxy/routes/fanout_route.h"

#include <gtest/gtest.h>

#include <array>

#include "proxy/routes/key_route.h"
#include "tests/proxy/routes/route_test_util.h"

namespace memshard::proxy::testing_fakes {
namespace {

class FanoutRouteTest : public RouteTest {
 protected:
  ~FanoutRouteTest() override {
    EXPECT_EQ(slots_.outstanding, 0) << "a copy's slot was not given back";
  }

  // Sends a set through a fan-out with `policy`; servers answer `replies`
  // (in reverse order, so that the policy, not arrival, picks the reply).
  std::string run(ReplyPolicy policy, std::array<std::string_view, 3> replies) {
    FanoutRoute route({&r0_, &r1_, &r2_}, policy);
    request("set k 0 0 2", "hi\r\n");
    ReplySlot& slot = client_slot();
    RouteRequest req = route_request();
    route.send(req, slot);
    int told = owner_.told;
    for (size_t i = 3; i-- > 0;) {
      EXPECT_FALSE(slot.complete()) << "complete before copy " << i << " answered";
      answer(servers_[i].box.ops.back(), replies[i]);
    }
    EXPECT_TRUE(slot.complete());
    EXPECT_EQ(owner_.told, told + 1);
    return copy_all(slot.reply());
  }

  ServerRoute r0_{servers_[0]};
  ServerRoute r1_{servers_[1]};
  ServerRoute r2_{servers_[2]};
};

constexpr std::string_view kStored = "STORED\r\n";
constexpr std::string_view kNotStored = "NOT_STORED\r\n";
constexpr std::string_view kErrA = "SERVER_ERROR a\r\n";
constexpr std::string_view kErrB = "SERVER_ERROR b\r\n";
constexpr std::string_view kErrC = "SERVER_ERROR c\r\n";

TEST_F(FanoutRouteTest, EveryServerGetsTheBytesAndTheReplyWaitsForAll) {
  FanoutRoute route({&r0_, &r1_, &r2_}, ReplyPolicy::first);
  request("set k 0 0 2", "hi\r\n", "get x\r\n");
  ReplySlot& slot = client_slot();
  RouteRequest req = route_request();
  route.send(req, slot);
  EXPECT_EQ(input(), "get x\r\n");
  for (FakeServer& s : servers_) {
    ASSERT_EQ(s.box.ops.size(), 1u);
    EXPECT_EQ(s.box.ops[0].bytes, "set k 0 0 2\r\nhi\r\n");
    EXPECT_NE(s.box.ops[0].op.slot, &slot);
  }
  EXPECT_EQ(slots_.outstanding, 3);
  answer(servers_[1].box.ops[0], kStored);
  answer(servers_[0].box.ops[0], kStored);
  EXPECT_FALSE(slot.complete()) << "the first policy still waits for every copy";
  EXPECT_EQ(owner_.told, 0);
  answer(servers_[2].box.ops[0], kStored);
  EXPECT_TRUE(slot.complete());
  EXPECT_EQ(owner_.told, 1);
  EXPECT_EQ(copy_all(slot.reply()), kStored);
}

TEST_F(FanoutRouteTest, FirstIsTheFirstRoutesReplyThatIsNotAnError) {
  EXPECT_EQ(run(ReplyPolicy::first, {kStored, kNotStored, kErrC}), kStored);
  EXPECT_EQ(run(ReplyPolicy::first, {kErrA, kNotStored, kStored}), kNotStored);
  EXPECT_EQ(run(ReplyPolicy::first, {kErrA, kErrB, kStored}), kStored);
  EXPECT_EQ(run(ReplyPolicy::first, {kErrA, kErrB, kErrC}), kErrA);
}

TEST_F(FanoutRouteTest, MajorityNeedsMoreThanHalf) {
  EXPECT_EQ(run(ReplyPolicy::majority, {kStored, kStored, kStored}), kStored);
  EXPECT_EQ(run(ReplyPolicy::majority, {kErrA, kStored, kStored}), kStored);
  EXPECT_EQ(run(ReplyPolicy::majority, {kStored, kErrB, kErrC}), kErrB);
  EXPECT_EQ(run(ReplyPolicy::majority, {kErrA, kStored, kErrC}), kErrA);
}

TEST_F(FanoutRouteTest, AllFailsOnAnyError) {
  EXPECT_EQ(run(ReplyPolicy::all, {kStored, kStored, kStored}), kStored);
  EXPECT_EQ(run(ReplyPolicy::all, {kStored, kErrB, kStored}), kErrB);
  EXPECT_EQ(run(ReplyPolicy::all, {kStored, kErrB, kErrC}), kErrB);
  EXPECT_EQ(run(ReplyPolicy::all, {kNotStored, kStored, kStored}), kNotStored);
}

TEST_F(FanoutRouteTest, DownServerCountsAsAnErrorAndOthersAreAwaited) {
  servers_[1].down = true;
  FanoutRoute route({&r0_, &r1_, &r2_}, ReplyPolicy::all);
  request("delete k");
  ReplySlot& slot = client_slot();
  RouteRequest req = route_request();
  route.send(req, slot);
  EXPECT_TRUE(servers_[1].box.ops.empty());
  EXPECT_FALSE(slot.complete());
  answer(servers_[0].box.ops[0], "DELETED\r\n");
  EXPECT_FALSE(slot.complete());
  answer(servers_[2].box.ops[0], "DELETED\r\n");
  EXPECT_TRUE(slot.complete());
  EXPECT_EQ(owner_.told, 1);
  EXPECT_EQ(copy_all(slot.reply()), "SERVER_ERROR backend unavailable\r\n");
}

TEST_F(FanoutRouteTest, AllDownCompletesInsideSendWithoutTellingTheOwner) {
  for (FakeServer& s : servers_) s.down = true;
  FanoutRoute route({&r0_, &r1_, &r2_}, ReplyPolicy::majority);
  request("delete k", {}, "get x\r\n");
  ReplySlot& slot = client_slot();
  RouteRequest req = route_request();
  route.send(req, slot);
  EXPECT_TRUE(slot.complete());
  EXPECT_EQ(slot.outstanding(), 0u);
  EXPECT_EQ(owner_.told, 0);
  EXPECT_EQ(copy_all(slot.reply()), "SERVER_ERROR backend unavailable\r\n");
  EXPECT_EQ(input(), "get x\r\n");
}

TEST_F(FanoutRouteTest, ManyRequestsLeakNoSlot) {
  for (int i = 0; i < 30; ++i) {
    std::array<std::string_view, 3> replies{kStored, i % 2 ? kErrB : kStored, kStored};
    run(static_cast<ReplyPolicy>(i % 3), replies);
  }
  EXPECT_EQ(slots_.acquired, 90);
}

}  // namespace
}  // namespace memshard::proxy::testing_fakes
