// work.h: the one mechanism for route work that waits on servers. A work
// answered within its start ends there, unreported to the client (who
// writes what its own dispatch completed); one answered later tells the
// client once; every slot it took goes back, including one it stopped
// waiting for; while it lives it keeps its routes alive.
#include "proxy/routes/work.h"

#include <gtest/gtest.h>

#include "proxy/routes/key_route.h"
#include "tests/proxy/routes/route_test_util.h"

namespace memshard::proxy::testing_fakes {
namespace {

class WorkTest : public RouteTest {
 protected:
  ~WorkTest() override { EXPECT_EQ(slots_.outstanding, 0) << "a slot was not given back"; }

  ServerRoute r0_{servers_[0]};
  ServerRoute r1_{servers_[1]};
  RouteLife life_;
};

// One request, its reply passed on.
Work relay(RouteRequest& req, ReplySlot& client, Route& route) {
  HeldRequest held(req);
  Reply reply = co_await Call(held, route);
  reply.pass_to(client);
}

TEST_F(WorkTest, AWorkAnsweredWithinItsStartEndsThereUnreported) {
  servers_[0].down = true;  // answered at once: SERVER_ERROR backend unavailable
  request("mg k v");
  ReplySlot& slot = client_slot();
  RouteRequest req = route_request();
  relay(req, slot, r0_).start(slot, &life_);
  EXPECT_TRUE(slot.complete());
  EXPECT_EQ(owner_.told, 0) << "the client writes what its own dispatch completed";
  EXPECT_EQ(copy_all(slot.reply()), "SERVER_ERROR backend unavailable\r\n");
  EXPECT_EQ(slot.status(), proto::ReplyStatus::server_error);
  EXPECT_EQ(life_.held_requests, 0u) << "the frame is gone";
}

TEST_F(WorkTest, AWorkAnsweredLaterTellsTheClientOnce) {
  request("mg k v");
  ReplySlot& slot = client_slot();
  RouteRequest req = route_request();
  relay(req, slot, r0_).start(slot, &life_);
  EXPECT_FALSE(slot.complete());
  EXPECT_EQ(life_.held_requests, 1u) << "a waiting work keeps its routes alive";
  EXPECT_EQ(input(), "") << "the held request took the client's bytes";
  ASSERT_EQ(servers_[0].box.ops.size(), 1u);
  EXPECT_EQ(servers_[0].box.ops[0].bytes, "mg k v\r\n");
  answer(servers_[0].box.ops[0], "VA 1\r\nx\r\n");
  EXPECT_TRUE(slot.complete());
  EXPECT_EQ(owner_.told, 1);
  EXPECT_EQ(slot.status(), proto::ReplyStatus::hit);
  EXPECT_EQ(life_.held_requests, 0u);
}

// Two requests at once; the replies come in the order the calls were made,
// whatever order the servers answer in.
Work both(RouteRequest& req, ReplySlot& client, Route& a, Route& b, std::string& order) {
  HeldRequest held(req);
  Calls calls;
  calls.add(held, a);
  calls.add(held, b);
  co_await calls.all();
  for (size_t i = 0; i < calls.size(); ++i) order += calls.reply(i).text();
  calls.reply(calls.size() - 1).pass_to(client);
}

TEST_F(WorkTest, CallsResumeOnceEveryOneIsAnsweredInTheirOrder) {
  request("md k");
  ReplySlot& slot = client_slot();
  RouteRequest req = route_request();
  std::string order;
  both(req, slot, r0_, r1_, order).start(slot, &life_);
  ASSERT_EQ(servers_[0].box.ops.size(), 1u);
  ASSERT_EQ(servers_[1].box.ops.size(), 1u);
  answer(servers_[1].box.ops[0], "NF\r\n");
  EXPECT_FALSE(slot.complete()) << "one of two answered";
  answer(servers_[0].box.ops[0], "HD\r\n");
  EXPECT_TRUE(slot.complete());
  EXPECT_EQ(order, "HD\r\nNF\r\n");
  EXPECT_EQ(slot.status(), proto::ReplyStatus::not_found);
  EXPECT_EQ(owner_.told, 1);
}

TEST_F(WorkTest, CallsAllAnsweredAtOnceDoNotWait) {
  servers_[0].down = true;
  servers_[1].down = true;
  request("md k");
  ReplySlot& slot = client_slot();
  RouteRequest req = route_request();
  std::string order;
  both(req, slot, r0_, r1_, order).start(slot, &life_);
  EXPECT_TRUE(slot.complete());
  EXPECT_EQ(owner_.told, 0);
  EXPECT_EQ(order, "SERVER_ERROR backend unavailable\r\nSERVER_ERROR backend unavailable\r\n");
}

// More calls than live inside a Calls: the rest live in its deque, and the
// replies still come in order.
Work many(RouteRequest& req, ReplySlot& client, std::vector<Route*> routes, std::string& order) {
  HeldRequest held(req);
  Calls calls;
  for (Route* r : routes) calls.add(held, *r);
  co_await calls.all();
  for (size_t i = 0; i < calls.size(); ++i) order += calls.reply(i).text();
  calls.reply(0).pass_to(client);
}

TEST_F(WorkTest, CallsPastTheInlineOnesKeepTheirOrder) {
  request("md k");
  ReplySlot& slot = client_slot();
  RouteRequest req = route_request();
  ServerRoute r2{servers_[2]};
  std::vector<Route*> routes;
  for (int round = 0; round < 3; ++round) {
    for (Route* r :
         {static_cast<Route*>(&r0_), static_cast<Route*>(&r1_), static_cast<Route*>(&r2)})
      routes.push_back(r);
  }
  ASSERT_GT(routes.size(), Calls::kInline);
  std::string order;
  many(req, slot, routes, order).start(slot, &life_);
  // Answered last server first, newest first: the order of the replies
  // must still be the order of the calls.
  for (int s = 2; s >= 0; --s) {
    auto& ops = servers_[static_cast<size_t>(s)].box.ops;
    ASSERT_EQ(ops.size(), 3u);
    for (int i = 2; i >= 0; --i) {
      answer(ops[static_cast<size_t>(i)], "HD c" + std::to_string(s * 10 + i) + "\r\n");
    }
  }
  EXPECT_TRUE(slot.complete());
  std::string want;
  for (int i = 0; i < 3; ++i) {
    for (int s = 0; s < 3; ++s) want += "HD c" + std::to_string(s * 10 + i) + "\r\n";
  }
  EXPECT_EQ(order, want);
}

// A work that stops waiting for a request it sent: the slot is the
// server's until answered, then goes back to the pool, and no one is told.
Work sends_and_leaves(RouteRequest& req, Route& route) {
  HeldRequest held(req);
  { Call forgotten(held, route); }
  co_return;
}

TEST_F(WorkTest, ASlotAWorkStoppedWaitingForGoesBackOnceAnswered) {
  request("mg k v");
  RouteRequest req = route_request();
  sends_and_leaves(req, r0_).start_unanswered(&life_);
  EXPECT_EQ(life_.held_requests, 0u) << "the work ended";
  EXPECT_EQ(slots_.outstanding, 1) << "its request is still the server's";
  ASSERT_EQ(servers_[0].box.ops.size(), 1u);
  answer(servers_[0].box.ops[0], "EN\r\n");
  EXPECT_EQ(slots_.outstanding, 0);
}

TEST_F(WorkTest, AWorkNobodyWaitsForStillEndsAndFreesItsSlots) {
  request("mg k v");
  RouteRequest req = route_request();
  ReplySlot& unused = client_slot();
  relay(req, unused, r0_).start_unanswered(&life_);
  EXPECT_EQ(life_.held_requests, 1u);
  answer(servers_[0].box.ops[0], "EN\r\n");
  EXPECT_EQ(life_.held_requests, 0u);
  EXPECT_EQ(owner_.told, 0) << "no client was waiting";
}

TEST_F(WorkTest, AWorkNeverStartedFreesItsFrame) {
  request("mg k v");
  RouteRequest req = route_request();
  ReplySlot& slot = client_slot();
  { Work unstarted = relay(req, slot, r0_); }
  EXPECT_TRUE(servers_[0].box.ops.empty()) << "nothing ran";
  EXPECT_EQ(input(), "mg k v\r\n");
}

}  // namespace
}  // namespace memshard::proxy::testing_fakes
