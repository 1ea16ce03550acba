// ReplicatedGetRoute (routes/replicated_get_route.h): each key of a
// retrieval read from its first copy, the next copy tried on an error (and
// on a miss with on_miss), the hit found there written back with read
// repair, the replies merged in the client's order.
#include "proxy/routes/replicated_get_route.h"

#include <gtest/gtest.h>

#include "tests/proxy/routes/route_test_util.h"

namespace memshard::proxy::testing_fakes {
namespace {

class ReplicatedGetRouteTest : public RouteTest {
 protected:
  ReplicatedGetRouteTest() {
    // Every key's first copy is server 0, its second server 1.
    first_.where = {{"a", 0}, {"b", 0}, {"c", 0}};
    second_.where = {{"a", 1}, {"b", 1}, {"c", 1}};
  }
  ~ReplicatedGetRouteTest() override {
    EXPECT_EQ(slots_.outstanding, 0) << "a try's slot was not given back";
  }
  void send(ReplicatedGetRoute& route, ReplySlot& slot) {
    RouteRequest req = route_request();
    route.send(req, slot);
  }
  std::deque<SentOp>& ops(int server) { return servers_[server].box.ops; }

  FakePlacement first_{{&servers_[0], &servers_[1], &servers_[2]}};
  FakePlacement second_{{&servers_[0], &servers_[1], &servers_[2]}};
  SplitRoute read0_{first_}, read1_{second_};
  KeyRoute key0_{first_}, key1_{second_};
  ReplicatedGetRoute plain_{{&read0_, &read1_}, {&key0_, &key1_}, false, false};
  ReplicatedGetRoute repairing_{{&read0_, &read1_}, {&key0_, &key1_}, true, true};
};

TEST_F(ReplicatedGetRouteTest, EachKeyIsReadFromItsFirstCopyAndMergedInOrder) {
  request("get a b c", {}, "get x\r\n");
  ReplySlot& slot = client_slot();
  send(plain_, slot);
  EXPECT_EQ(input(), "get x\r\n");
  ASSERT_EQ(ops(0).size(), 3u) << "one get per key, which the outbox may join";
  EXPECT_TRUE(ops(1).empty());
  answer_retrieval(ops(0)[2], {{"c", "C"}});
  answer_retrieval(ops(0)[0], {{"a", "A"}});
  EXPECT_FALSE(slot.complete());
  answer_retrieval(ops(0)[1], {});
  ASSERT_TRUE(slot.complete());
  EXPECT_EQ(owner_.told, 1);
  EXPECT_EQ(copy_all(slot.reply()), "VALUE a 0 1\r\nA\r\nVALUE c 0 1\r\nC\r\nEND\r\n")
      << "without on_miss, a miss is the answer";
  EXPECT_TRUE(ops(1).empty());
}

TEST_F(ReplicatedGetRouteTest, ErrorTriesTheNextCopyAsMeta) {
  request("gets a");
  ReplySlot& slot = client_slot();
  send(plain_, slot);
  fail_retrieval(ops(0)[0], "SERVER_ERROR backend timeout");
  ASSERT_EQ(ops(1).size(), 1u);
  EXPECT_EQ(ops(1)[0].bytes, "mg a c f t v\r\n");
  answer(ops(1)[0], "VA 1 c9 f3 t-1\r\nZ\r\n");
  ASSERT_TRUE(slot.complete());
  EXPECT_EQ(copy_all(slot.reply()), "VALUE a 3 1 9\r\nZ\r\nEND\r\n");
  EXPECT_EQ(pool_stats_.read_failovers.get(), 1u);
}

TEST_F(ReplicatedGetRouteTest, MissOnTheFirstCopyIsFoundOnTheNextAndRepaired) {
  request("get a b");
  ReplySlot& slot = client_slot();
  send(repairing_, slot);
  answer_retrieval(ops(0)[0], {{"a", "A"}});
  answer_retrieval(ops(0)[1], {});  // b: the first copy restarted empty
  ASSERT_EQ(ops(1).size(), 1u);
  EXPECT_EQ(ops(1)[0].bytes, "mg b f t v\r\n");
  answer(ops(1)[0], "VA 2 f7 t300\r\nBB\r\n");
  ASSERT_TRUE(slot.complete());
  EXPECT_EQ(copy_all(slot.reply()), "VALUE a 0 1\r\nA\r\nVALUE b 7 2\r\nBB\r\nEND\r\n");
  ASSERT_EQ(ops(0).size(), 3u) << "the value goes back to the copy that missed";
  EXPECT_EQ(ops(0)[2].bytes, "ms b 2 c T300 F7 ME q\r\nBB\r\nmn\r\n")
      << "with its remaining TTL and flags, as an add: a newer write there wins";
  answer(ops(0)[2], "MN\r\n");
  EXPECT_EQ(pool_stats_.read_repairs.get(), 1u);
}

TEST_F(ReplicatedGetRouteTest, MissThenADownCopyIsStillAMiss) {
  servers_[1].down = true;
  request("get a");
  ReplySlot& slot = client_slot();
  send(repairing_, slot);
  answer_retrieval(ops(0)[0], {});
  ASSERT_TRUE(slot.complete());
  EXPECT_EQ(copy_all(slot.reply()), "END\r\n");
}

TEST_F(ReplicatedGetRouteTest, EveryCopyDownIsAServerError) {
  servers_[0].down = true;
  servers_[1].down = true;
  request("get a");
  ReplySlot& slot = client_slot();
  send(plain_, slot);
  ASSERT_TRUE(slot.complete());
  EXPECT_EQ(copy_all(slot.reply()), "SERVER_ERROR backend unavailable\r\n");
}

TEST_F(ReplicatedGetRouteTest, GatTouchesTheOtherCopies) {
  request("gat 60 a");
  ReplySlot& slot = client_slot();
  send(plain_, slot);
  ASSERT_EQ(ops(1).size(), 1u);
  // memcached's own touch in meta form (own_requests.h), silent on a hit.
  EXPECT_EQ(ops(1)[0].bytes, "mg a T60 q\r\nmn\r\n");
  ASSERT_EQ(ops(0).size(), 1u);
  EXPECT_EQ(ops(0)[0].bytes, "gat 60 a\r\n");
  answer(ops(1)[0], "");
  answer_retrieval(ops(0)[0], {{"a", "A"}});
  ASSERT_TRUE(slot.complete());
  EXPECT_EQ(copy_all(slot.reply()), "VALUE a 0 1\r\nA\r\nEND\r\n");
}

}  // namespace
}  // namespace memshard::proxy::testing_fakes
