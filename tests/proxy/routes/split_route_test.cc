// SplitRoute (routes/split_route.h) over fake servers: a multi-get cut into
// one fragment per server, answered in any order, merged in the client's
// key order with one END; failed servers' keys read as misses.
#include "proxy/routes/split_route.h"

#include <gtest/gtest.h>

#include "tests/proxy/routes/route_test_util.h"

namespace memshard::proxy::testing_fakes {
namespace {

using Keys = std::vector<std::string>;

class SplitRouteTest : public RouteTest {
 protected:
  // a and c on server 0, b on 1, d on 2.
  SplitRouteTest() { placement_.where = {{"a", 0}, {"b", 1}, {"c", 0}, {"d", 2}}; }
  void send(ReplySlot& slot) {
    RouteRequest req = route_request();
    route_.send(req, slot);
  }
  SplitRoute route_{placement_};
};

TEST_F(SplitRouteTest, GetIsCutPerServerAndMergedInClientOrder) {
  request("get a b c d", {}, "version\r\n");
  ReplySlot& slot = client_slot();
  send(slot);

  ASSERT_EQ(servers_[0].box.ops.size(), 1u);
  ASSERT_EQ(servers_[1].box.ops.size(), 1u);
  ASSERT_EQ(servers_[2].box.ops.size(), 1u);
  SentOp& s0 = servers_[0].box.ops[0];
  SentOp& s1 = servers_[1].box.ops[0];
  SentOp& s2 = servers_[2].box.ops[0];
  for (SentOp* s : {&s0, &s1, &s2}) {
    EXPECT_TRUE(s->via_retrieval) << "get lines are the outbox's to build (and join)";
    EXPECT_EQ(s->verb, "get");
    EXPECT_EQ(s->op.slot, &slot);
  }
  EXPECT_EQ(s0.keys, (Keys{"a", "c"}));
  EXPECT_EQ(s1.keys, (Keys{"b"}));
  EXPECT_EQ(s2.keys, (Keys{"d"}));
  // Three distinct fragments of one slot.
  EXPECT_NE(s0.op.fragment, s1.op.fragment);
  EXPECT_NE(s1.op.fragment, s2.op.fragment);
  EXPECT_NE(s0.op.fragment, s2.op.fragment);
  EXPECT_EQ(slot.fragment_count(), 3u);
  EXPECT_EQ(slot.outstanding(), 3u);
  EXPECT_EQ(input(), "version\r\n");
  EXPECT_EQ(worker_stats_.fragments.get(), 3u);

  // Out of order: the last server first; c is a miss.
  answer_retrieval(s2, {{"d", "dd"}});
  answer_retrieval(s0, {{"a", "A"}});
  EXPECT_FALSE(slot.complete());
  EXPECT_EQ(owner_.told, 0);
  answer_retrieval(s1, {{"b", "bbb"}});
  EXPECT_TRUE(slot.complete());
  EXPECT_EQ(owner_.told, 1);
  EXPECT_EQ(copy_all(slot.reply()),
            "VALUE a 0 1\r\nA\r\n"
            "VALUE b 0 3\r\nbbb\r\n"
            "VALUE d 0 2\r\ndd\r\n"
            "END\r\n");
}

TEST_F(SplitRouteTest, InterleavedKeysOfOneServerComeBackInClientOrder) {
  request("get a b c d");
  ReplySlot& slot = client_slot();
  send(slot);
  answer_retrieval(servers_[1].box.ops[0], {{"b", "2"}});
  answer_retrieval(servers_[2].box.ops[0], {{"d", "4"}});
  answer_retrieval(servers_[0].box.ops[0], {{"a", "1"}, {"c", "3"}});
  EXPECT_EQ(
      copy_all(slot.reply()),
      "VALUE a 0 1\r\n1\r\nVALUE b 0 1\r\n2\r\nVALUE c 0 1\r\n3\r\nVALUE d 0 1\r\n4\r\nEND\r\n");
}

TEST_F(SplitRouteTest, GetsKeepsItsVerb) {
  request("gets a b");
  ReplySlot& slot = client_slot();
  send(slot);
  ASSERT_EQ(servers_[0].box.ops.size(), 1u);
  ASSERT_EQ(servers_[1].box.ops.size(), 1u);
  EXPECT_EQ(servers_[0].box.ops[0].verb, "gets");
  EXPECT_EQ(servers_[0].box.ops[0].keys, (Keys{"a"}));
  EXPECT_EQ(servers_[1].box.ops[0].verb, "gets");
  EXPECT_EQ(servers_[1].box.ops[0].keys, (Keys{"b"}));
}

TEST_F(SplitRouteTest, GatGoesAsBuiltLinesWithItsExptime) {
  request("gat 100 a b c d", {}, "mn\r\n");
  ReplySlot& slot = client_slot();
  send(slot);
  ASSERT_EQ(servers_[0].box.ops.size(), 1u);
  ASSERT_EQ(servers_[1].box.ops.size(), 1u);
  ASSERT_EQ(servers_[2].box.ops.size(), 1u);
  EXPECT_FALSE(servers_[0].box.ops[0].via_retrieval);
  EXPECT_EQ(servers_[0].box.ops[0].bytes, "gat 100 a c\r\n");
  EXPECT_EQ(servers_[1].box.ops[0].bytes, "gat 100 b\r\n");
  EXPECT_EQ(servers_[2].box.ops[0].bytes, "gat 100 d\r\n");
  EXPECT_EQ(servers_[0].box.ops[0].op.mode, ReplyMode::retrieval);
  EXPECT_EQ(input(), "mn\r\n");
  answer_retrieval(servers_[0].box.ops[0], {{"c", "C"}});
  answer_retrieval(servers_[2].box.ops[0], {});
  answer_retrieval(servers_[1].box.ops[0], {{"b", "B"}});
  EXPECT_EQ(copy_all(slot.reply()), "VALUE b 0 1\r\nB\r\nVALUE c 0 1\r\nC\r\nEND\r\n");
}

TEST_F(SplitRouteTest, SingleServerGatKeepsTheClientsLine) {
  // Spaced as no built line would be: the client's own bytes go.
  request("gat  100 c a", {}, "mn\r\n");
  ASSERT_EQ(request_.action, proto::Action::multi_get);
  ReplySlot& slot = client_slot();
  send(slot);
  ASSERT_EQ(servers_[0].box.ops.size(), 1u);
  EXPECT_EQ(servers_[0].box.ops[0].bytes, "gat  100 c a\r\n");
  EXPECT_TRUE(servers_[1].box.ops.empty());
  EXPECT_EQ(input(), "mn\r\n");
  answer_retrieval(servers_[0].box.ops[0], {{"a", "1"}, {"c", "3"}});
  EXPECT_EQ(copy_all(slot.reply()), "VALUE c 0 1\r\n3\r\nVALUE a 0 1\r\n1\r\nEND\r\n");
}

TEST_F(SplitRouteTest, SingleServerGetPassesTheClientsKeys) {
  request("get c a");
  ReplySlot& slot = client_slot();
  send(slot);
  ASSERT_EQ(servers_[0].box.ops.size(), 1u);
  EXPECT_EQ(servers_[0].box.ops[0].keys, (Keys{"c", "a"}));
  EXPECT_EQ(slot.fragment_count(), 1u);
  answer_retrieval(servers_[0].box.ops[0], {});
  EXPECT_EQ(copy_all(slot.reply()), "END\r\n");
}

TEST_F(SplitRouteTest, DownServersKeysAreMissesWhenOthersAnswer) {
  servers_[1].down = true;
  request("get a b c d");
  ReplySlot& slot = client_slot();
  send(slot);
  EXPECT_TRUE(servers_[1].box.ops.empty());
  EXPECT_EQ(slot.outstanding(), 2u);
  EXPECT_EQ(worker_stats_.forward_error.get(), 1u);
  answer_retrieval(servers_[0].box.ops[0], {{"a", "1"}, {"c", "3"}});
  answer_retrieval(servers_[2].box.ops[0], {{"d", "4"}});
  EXPECT_TRUE(slot.complete());
  EXPECT_EQ(owner_.told, 1);
  EXPECT_EQ(copy_all(slot.reply()),
            "VALUE a 0 1\r\n1\r\nVALUE c 0 1\r\n3\r\nVALUE d 0 1\r\n4\r\nEND\r\n");
}

TEST_F(SplitRouteTest, ServerFailingLaterMakesItsKeysMisses) {
  request("get a b c d");
  ReplySlot& slot = client_slot();
  send(slot);
  answer_retrieval(servers_[1].box.ops[0], {{"b", "2"}});
  fail_retrieval(servers_[0].box.ops[0], "SERVER_ERROR backend timed out");
  answer_retrieval(servers_[2].box.ops[0], {{"d", "4"}});
  EXPECT_EQ(copy_all(slot.reply()), "VALUE b 0 1\r\n2\r\nVALUE d 0 1\r\n4\r\nEND\r\n");
}

TEST_F(SplitRouteTest, EveryServerFailingLaterGivesTheError) {
  request("get a b");
  ReplySlot& slot = client_slot();
  send(slot);
  fail_retrieval(servers_[1].box.ops[0], "SERVER_ERROR backend timed out");
  fail_retrieval(servers_[0].box.ops[0], "SERVER_ERROR backend closed");
  EXPECT_TRUE(slot.complete());
  EXPECT_EQ(copy_all(slot.reply()), "SERVER_ERROR backend timed out\r\n");
}

TEST_F(SplitRouteTest, AllServersDownGivesTheErrorAtOnce) {
  for (FakeServer& s : servers_) s.down = true;
  request("get a b c d", {}, "version\r\n");
  ReplySlot& slot = client_slot();
  send(slot);
  EXPECT_TRUE(slot.complete());
  EXPECT_EQ(owner_.told, 0) << "completed inside send()";
  EXPECT_EQ(copy_all(slot.reply()), "SERVER_ERROR backend unavailable\r\n");
  EXPECT_EQ(input(), "version\r\n");
  EXPECT_EQ(worker_stats_.forward_error.get(), 3u);
}

TEST_F(SplitRouteTest, SingleServerGatWithItsServerDownConsumesTheLine) {
  servers_[0].down = true;
  request("gat 100 a c", {}, "mn\r\n");
  ReplySlot& slot = client_slot();
  send(slot);
  EXPECT_TRUE(slot.complete());
  EXPECT_EQ(copy_all(slot.reply()), "SERVER_ERROR backend unavailable\r\n");
  EXPECT_EQ(input(), "mn\r\n");
}

TEST_F(SplitRouteTest, KeysWithNoLiveServerAreMisses) {
  request("get a nowhere b");
  ReplySlot& slot = client_slot();
  send(slot);
  EXPECT_EQ(slot.outstanding(), 2u);
  answer_retrieval(servers_[0].box.ops[0], {{"a", "1"}});
  answer_retrieval(servers_[1].box.ops[0], {{"b", "2"}});
  EXPECT_EQ(copy_all(slot.reply()), "VALUE a 0 1\r\n1\r\nVALUE b 0 1\r\n2\r\nEND\r\n");
}

TEST_F(SplitRouteTest, ScratchIsReadyForTheNextRequest) {
  // fragment_of_server is shared by the worker's clients: a request must
  // leave it as it found it, or the next one's keys land in wrong fragments.
  request("get a b c d");
  ReplySlot& first = client_slot();
  send(first);
  request("get d c");
  ReplySlot& second = client_slot();
  send(second);
  ASSERT_EQ(servers_[2].box.ops.size(), 2u);
  ASSERT_EQ(servers_[0].box.ops.size(), 2u);
  EXPECT_EQ(servers_[2].box.ops[1].keys, (Keys{"d"}));
  EXPECT_EQ(servers_[0].box.ops[1].keys, (Keys{"c"}));
  EXPECT_EQ(second.fragment_count(), 2u);
}

}  // namespace
}  // namespace memshard::proxy::testing_fakes
