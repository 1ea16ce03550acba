// PrimaryFirstRoute (routes/primary_first_route.h) over ServerRoutes, one
// per copy: the first copy alone decides an add or a cas, and only a value
// it stored is copied to the others, as a plain set.
#include "proxy/routes/primary_first_route.h"

#include <gtest/gtest.h>

#include "proxy/routes/key_route.h"
#include "tests/proxy/routes/route_test_util.h"

namespace memshard::proxy::testing_fakes {
namespace {

class PrimaryFirstRouteTest : public RouteTest {
 protected:
  ~PrimaryFirstRouteTest() override {
    EXPECT_EQ(slots_.outstanding, 0) << "a copy's slot was not given back";
  }
  void send(PrimaryFirstRoute& route, ReplySlot& slot) {
    RouteRequest req = route_request();
    route.send(req, slot);
  }
  ServerRoute r0_{servers_[0]};
  ServerRoute r1_{servers_[1]};
  ServerRoute r2_{servers_[2]};
  FanoutRoute fallback_{{&r0_, &r1_}, ReplyPolicy::first};
  PrimaryFirstRoute two_{{&r0_, &r1_}, ReplyPolicy::first, fallback_};
  PrimaryFirstRoute three_majority_{{&r0_, &r1_, &r2_}, ReplyPolicy::majority, fallback_};
  PrimaryFirstRoute three_all_{{&r0_, &r1_, &r2_}, ReplyPolicy::all, fallback_};
};

TEST_F(PrimaryFirstRouteTest, AddRefusedByTheFirstCopyWritesNoOther) {
  request("add k 5 0 3", "abc\r\n", "get x\r\n");
  ReplySlot& slot = client_slot();
  send(two_, slot);
  EXPECT_EQ(input(), "get x\r\n") << "the request's bytes are consumed, no more";
  ASSERT_EQ(servers_[0].box.ops.size(), 1u);
  EXPECT_EQ(servers_[0].box.ops[0].bytes, "ms k 3 F5 ME\r\nabc\r\n")
      << "sent loud, as meta, so the proxy reads the decision";
  EXPECT_TRUE(servers_[1].box.ops.empty()) << "the second copy waits for the first's decision";
  answer(servers_[0].box.ops[0], "NS\r\n");
  EXPECT_TRUE(slot.complete());
  EXPECT_EQ(copy_all(slot.reply()), "NOT_STORED\r\n");
  EXPECT_TRUE(servers_[1].box.ops.empty()) << "a refused value reached another copy";
}

TEST_F(PrimaryFirstRouteTest, AddStoredByTheFirstCopyIsSetOnTheOthers) {
  request("add k 5 100 3", "abc\r\n");
  ReplySlot& slot = client_slot();
  send(two_, slot);
  answer(servers_[0].box.ops[0], "HD\r\n");
  EXPECT_FALSE(slot.complete()) << "answered before the other copy was written";
  ASSERT_EQ(servers_[1].box.ops.size(), 1u);
  EXPECT_EQ(servers_[1].box.ops[0].bytes, "ms k 3 F5 T100\r\nabc\r\n");
  answer(servers_[1].box.ops[0], "HD\r\n");
  EXPECT_TRUE(slot.complete());
  EXPECT_EQ(owner_.told, 1);
  EXPECT_EQ(copy_all(slot.reply()), "STORED\r\n");
  EXPECT_EQ(pool_stats_.replica_writes.get(), 1u);
}

TEST_F(PrimaryFirstRouteTest, CasGoesToTheFirstCopyAndItsValueToTheOthersWithoutTheCas) {
  request("cas k 0 0 3 77", "new\r\n");
  ReplySlot& slot = client_slot();
  send(two_, slot);
  ASSERT_EQ(servers_[0].box.ops.size(), 1u);
  EXPECT_EQ(servers_[0].box.ops[0].bytes, "ms k 3 C77\r\nnew\r\n");
  answer(servers_[0].box.ops[0], "HD\r\n");
  ASSERT_EQ(servers_[1].box.ops.size(), 1u);
  EXPECT_EQ(servers_[1].box.ops[0].bytes, "ms k 3\r\nnew\r\n")
      << "the other copy's cas differs: it gets the value as a set";
  answer(servers_[1].box.ops[0], "HD\r\n");
  EXPECT_EQ(copy_all(slot.reply()), "STORED\r\n");
}

TEST_F(PrimaryFirstRouteTest, StaleCasChangesNoCopy) {
  request("cas k 0 0 3 76", "new\r\n");
  ReplySlot& slot = client_slot();
  send(two_, slot);
  answer(servers_[0].box.ops[0], "EX\r\n");
  EXPECT_EQ(copy_all(slot.reply()), "EXISTS\r\n");
  EXPECT_TRUE(servers_[1].box.ops.empty());
}

TEST_F(PrimaryFirstRouteTest, DownFirstCopyLeavesTheDecisionToTheNext) {
  servers_[0].down = true;
  request("add k 0 0 1", "x\r\n");
  ReplySlot& slot = client_slot();
  send(two_, slot);
  ASSERT_EQ(servers_[1].box.ops.size(), 1u);
  EXPECT_EQ(servers_[1].box.ops[0].bytes, "ms k 1 ME\r\nx\r\n");
  answer(servers_[1].box.ops[0], "HD\r\n");
  // The down copy is offered the set too, and fails at once: under
  // `first`, a write succeeds while one copy takes it.
  EXPECT_TRUE(slot.complete());
  EXPECT_EQ(copy_all(slot.reply()), "STORED\r\n");
  EXPECT_EQ(pool_stats_.replica_write_failures.get(), 1u);
}

TEST_F(PrimaryFirstRouteTest, NoreplyAddIsDecidedAloudAndAnsweredWithNothing) {
  request("add k 0 0 1 noreply", "x\r\n");
  ReplySlot& slot = client_slot();
  send(two_, slot);
  EXPECT_EQ(servers_[0].box.ops[0].bytes, "ms k 1 ME\r\nx\r\n");
  answer(servers_[0].box.ops[0], "HD\r\n");
  ASSERT_EQ(servers_[1].box.ops.size(), 1u) << "a stored noreply add is copied too";
  answer(servers_[1].box.ops[0], "HD\r\n");
  EXPECT_TRUE(slot.complete());
  EXPECT_EQ(copy_all(slot.reply()), "");
}

TEST_F(PrimaryFirstRouteTest, MetaAddKeepsTheClientsFlagsAndQuietness) {
  request("ms k 1 ME T9 q O12", "x\r\n");
  ReplySlot& slot = client_slot();
  send(two_, slot);
  ASSERT_EQ(servers_[0].box.ops.size(), 1u);
  EXPECT_EQ(servers_[0].box.ops[0].bytes, "ms k 1 O12 T9 ME\r\nx\r\n");
  answer(servers_[0].box.ops[0], "HD O12\r\n");
  answer(servers_[1].box.ops[0], "HD\r\n");
  EXPECT_EQ(copy_all(slot.reply()), "") << "q hides HD";
}

TEST_F(PrimaryFirstRouteTest, PoliciesCountTheCopiesThatTookTheValue) {
  for (PrimaryFirstRoute* route : {&three_majority_, &three_all_}) {
    for (FakeServer& s : servers_) s.box.ops.clear();
    request("add k 0 0 1", "x\r\n");
    ReplySlot& slot = client_slot();
    send(*route, slot);
    answer(servers_[0].box.ops[0], "HD\r\n");
    answer(servers_[1].box.ops[0], "SERVER_ERROR backend timeout\r\n");
    answer(servers_[2].box.ops[0], "HD\r\n");
    ASSERT_TRUE(slot.complete());
    // Two of three copies hold the value: a majority, not all.
    EXPECT_EQ(copy_all(slot.reply()),
              route == &three_majority_ ? "STORED\r\n" : "SERVER_ERROR backend timeout\r\n");
  }
}

}  // namespace
}  // namespace memshard::proxy::testing_fakes
