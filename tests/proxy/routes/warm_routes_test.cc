// Reload warm-up's routes over fake servers (routes/warm_get_route.h,
// warm_key_route.h, past_placement.h, warm_guard.h): a moved key that
// misses is looked up where the past config kept it and copied over (and
// asked again where it belongs when it missed everywhere), a write deletes
// the old copy once it is stored and before it is answered, and the guard
// keeps a copy from outliving a write that raced it.
#include <gtest/gtest.h>

#include "ketama/ring.h"
#include "proxy/routes/key_route.h"
#include "proxy/routes/past_placement.h"
#include "proxy/routes/split_route.h"
#include "proxy/routes/warm_get_route.h"
#include "proxy/routes/warm_guard.h"
#include "proxy/routes/warm_key_route.h"
#include "tests/proxy/routes/route_test_util.h"

namespace memshard::proxy::testing_fakes {
namespace {

// A past config of one server: every key was on it.
PastRing one_server_past(uint64_t until_usec) {
  ketama::ServerEntry e;
  e.host = "127.0.0.1";
  e.port = 1;
  return PastRing{ketama::Ring::build({e}, {}),
                  {ServerInfo{"127.0.0.1:1", "127.0.0.1:1", {}, false, "127.0.0.1", 1}},
                  {},
                  until_usec,
                  1,
                  1};
}

class WarmRoutesTest : public RouteTest {
 protected:
  WarmRoutesTest() {
    // Now: a and b on server 0, c on server 1. Before: all on server 1,
    // so a and b moved and c did not.
    placement_.where = {{"a", 0}, {"b", 0}, {"c", 1}};
    past_.push_back(one_server_past(kNowUsec + 60'000'000));
  }
  ~WarmRoutesTest() override { EXPECT_EQ(slots_.outstanding, 0) << "a slot was not given back"; }
  template <typename R>
  void send(R& route, ReplySlot& slot) {
    RouteRequest req = route_request();
    route.send(req, slot);
  }
  std::deque<SentOp>& ops(int server) { return servers_[server].box.ops; }

  std::vector<PastRing> past_;
  PastPlacement placement_past_{past_, {{&servers_[1]}}, &placement_, nullptr};
  WarmGuard guard_{64};
  KeyRoute key_{placement_};
  SplitRoute split_{placement_};
  WarmKeyRoute warm_key_{key_, placement_past_, guard_, nullptr};
  WarmGetRoute warm_get_{split_, placement_past_, guard_, nullptr};
};

TEST(WarmGuard, AWriteInFlightOrBegunMeanwhileIsSeen) {
  WarmGuard g(16);
  const WarmGuard::Sample quiet = g.sample("k");
  EXPECT_FALSE(quiet.writing);
  EXPECT_FALSE(g.changed("k", quiet));
  g.begin("k");
  EXPECT_TRUE(g.changed("k", quiet)) << "a write that began after the sample";
  const WarmGuard::Sample during = g.sample("k");
  EXPECT_TRUE(during.writing);
  g.end("k");
  EXPECT_FALSE(g.sample("k").writing);
  EXPECT_FALSE(g.changed("k", g.sample("k")));
  EXPECT_FALSE(g.sample("k").poisoned);
  g.poison("k");
  EXPECT_TRUE(g.sample("k").poisoned);
}

TEST_F(WarmRoutesTest, PastOwnersAreTheOldServersThatAreNotCurrent) {
  std::array<Server*, kMaxPastOwners> out;
  ASSERT_EQ(placement_past_.owners("a", kNowUsec, out), 1u);
  EXPECT_EQ(out[0], &servers_[1]);
  EXPECT_EQ(placement_past_.owners("c", kNowUsec, out), 0u) << "c did not move";
  EXPECT_EQ(placement_past_.owners("a", kNowUsec + 60'000'000, out), 0u) << "the window ended";
  past_[0].live = {false};  // the old server is ejected now
  EXPECT_EQ(placement_past_.owners("a", kNowUsec, out), 0u);
}

TEST_F(WarmRoutesTest, AMovedMissIsFoundOnTheOldServerAnsweredInOrderAndCopied) {
  request("get a b c");
  ReplySlot& slot = client_slot();
  send(warm_get_, slot);
  ASSERT_EQ(ops(0).size(), 1u);
  ASSERT_EQ(ops(1).size(), 1u);
  answer_retrieval(ops(0)[0], {{"a", "A"}});  // b missed on its new server
  answer_retrieval(ops(1)[0], {});            // c missed, but it did not move
  EXPECT_FALSE(slot.complete());
  ASSERT_EQ(ops(1).size(), 2u) << "b looked up on the server of the past config";
  EXPECT_EQ(ops(1)[1].bytes, "mg b f t v\r\n");
  answer(ops(1)[1], "VA 2 f7 t300\r\nBB\r\n");
  ASSERT_TRUE(slot.complete());
  EXPECT_EQ(owner_.told, 1);
  EXPECT_EQ(copy_all(slot.reply()), "VALUE a 0 1\r\nA\r\nVALUE b 7 2\r\nBB\r\nEND\r\n");
  ASSERT_EQ(ops(0).size(), 2u) << "b copied to its new server";
  EXPECT_EQ(ops(0)[1].bytes, "ms b 2 c T300 F7 ME\r\nBB\r\n");
  answer(ops(0)[1], "HD\r\n");
  EXPECT_EQ(pool_stats_.warmup_lookups.get(), 1u);
  EXPECT_EQ(pool_stats_.warmup_hits.get(), 1u);
  EXPECT_EQ(pool_stats_.warmup_copies.get(), 1u);
}

TEST_F(WarmRoutesTest, AnOldServerThatFailsLeavesAMiss) {
  request("get b");
  ReplySlot& slot = client_slot();
  send(warm_get_, slot);
  answer_retrieval(ops(0)[0], {});
  ASSERT_EQ(ops(1).size(), 1u);
  fail_op(ops(1)[0], "SERVER_ERROR backend timeout");
  ASSERT_EQ(ops(0).size(), 2u) << "missed everywhere: the new server asked again";
  answer_retrieval(ops(0)[1], {});
  ASSERT_TRUE(slot.complete());
  EXPECT_EQ(copy_all(slot.reply()), "END\r\n");
}

// A write of b, stored on b's new server after this read missed there, and
// whose delete of the old copy reached the old server before this read
// did: the key was never absent, and the read finds it when it asks the
// new server again.
TEST_F(WarmRoutesTest, AMultiGetThatMissesAKeyEverywhereAsksTheNewServerAgain) {
  request("gets a b c");
  ReplySlot& slot = client_slot();
  send(warm_get_, slot);
  answer_retrieval(ops(0)[0], {{"a", "A"}});  // b missed on its new server
  answer_retrieval(ops(1)[0], {});            // c missed, but it did not move
  ASSERT_EQ(ops(1).size(), 2u);
  answer(ops(1)[1], "EN\r\n");  // and b is gone from its old one
  ASSERT_FALSE(slot.complete());
  ASSERT_EQ(ops(0).size(), 2u);
  EXPECT_EQ(ops(0)[1].bytes, "gets b\r\n") << "only the key missed everywhere, as the client asked";
  answer_retrieval(ops(0)[1], {{"b", "B"}});
  ASSERT_TRUE(slot.complete());
  EXPECT_EQ(copy_all(slot.reply()), "VALUE a 0 1\r\nA\r\nVALUE b 0 1\r\nB\r\nEND\r\n");
  EXPECT_EQ(ops(0).size(), 2u) << "found where it belongs: nothing to copy";
}

TEST_F(WarmRoutesTest, AKeyReadThatMissesEverywhereAsksTheNewServerAgain) {
  request("mg a v");
  ReplySlot& slot = client_slot();
  send(warm_key_, slot);
  answer(ops(0)[0], "EN\r\n");
  answer(ops(1)[0], "EN\r\n");
  ASSERT_FALSE(slot.complete());
  ASSERT_EQ(ops(0).size(), 2u);
  EXPECT_EQ(ops(0)[1].bytes, "mg a v\r\n");
  answer(ops(0)[1], "VA 1\r\nA\r\n");
  ASSERT_TRUE(slot.complete());
  EXPECT_EQ(copy_all(slot.reply()), "VA 1\r\nA\r\n");
}

TEST_F(WarmRoutesTest, AKeyThatDidNotMoveIsNotAskedAgain) {
  request("mg c v");
  ReplySlot& slot = client_slot();
  send(warm_key_, slot);
  answer(ops(1)[0], "EN\r\n");
  ASSERT_TRUE(slot.complete());
  EXPECT_EQ(copy_all(slot.reply()), "EN\r\n");
  EXPECT_EQ(ops(1).size(), 1u);
}

TEST_F(WarmRoutesTest, KeysThatDidNotMoveGoStraightToThePoolsRoute) {
  request("get c");
  ReplySlot& slot = client_slot();
  send(warm_get_, slot);
  ASSERT_EQ(ops(1).size(), 1u);
  EXPECT_EQ(slot.kind(), SlotKind::retrieval) << "the pool's own route filled the client's slot";
  answer_retrieval(ops(1)[0], {});
  ASSERT_TRUE(slot.complete());
  EXPECT_EQ(copy_all(slot.reply()), "END\r\n");
  EXPECT_EQ(slots_.acquired, 0) << "nothing was held";
}

TEST_F(WarmRoutesTest, NoCopyWhileAWriteOfTheKeyIsInFlight) {
  request("get b");
  ReplySlot& slot = client_slot();
  send(warm_get_, slot);
  guard_.begin("b");  // a write of b, on another worker, before the miss is seen
  answer_retrieval(ops(0)[0], {});
  answer(ops(1)[0], "VA 1 f0 t-1\r\nB\r\n");
  ASSERT_TRUE(slot.complete());
  EXPECT_EQ(copy_all(slot.reply()), "VALUE b 0 1\r\nB\r\nEND\r\n");
  EXPECT_EQ(ops(0).size(), 1u) << "no copy";
  guard_.end("b");
}

TEST_F(WarmRoutesTest, ACopyThatAWriteOvertookIsDeletedAgain) {
  request("get b");
  ReplySlot& slot = client_slot();
  send(warm_get_, slot);
  answer_retrieval(ops(0)[0], {});
  answer(ops(1)[0], "VA 1 f0 t-1\r\nB\r\n");
  ASSERT_EQ(ops(0).size(), 2u);
  guard_.begin("b");  // a delete of b began while the copy was on its way
  answer(ops(0)[1], "HD\r\n");
  ASSERT_EQ(ops(0).size(), 3u);
  EXPECT_EQ(ops(0)[2].bytes, "md b q\r\nmn\r\n");
  answer(ops(0)[2], "MN\r\n");
  guard_.end("b");
}

TEST_F(WarmRoutesTest, AWriteDeletesTheOldCopyBeforeItIsAnswered) {
  request("set a 0 0 1", "x\r\n");
  ReplySlot& slot = client_slot();
  send(warm_key_, slot);
  ASSERT_EQ(ops(0).size(), 1u);
  EXPECT_TRUE(ops(1).empty()) << "the old copy is deleted once the write is stored";
  EXPECT_TRUE(guard_.sample("a").writing);
  answer(ops(0)[0], "STORED\r\n");
  ASSERT_EQ(ops(1).size(), 1u);
  EXPECT_EQ(ops(1)[0].bytes, "md a\r\n");
  EXPECT_FALSE(slot.complete()) << "answered before the old copy is gone";
  answer(ops(1)[0], "HD\r\n");
  ASSERT_TRUE(slot.complete());
  EXPECT_EQ(copy_all(slot.reply()), "STORED\r\n");
  EXPECT_FALSE(guard_.sample("a").writing);
  EXPECT_EQ(pool_stats_.warmup_invalidations.get(), 1u);
}

TEST_F(WarmRoutesTest, AnOldCopyThatCouldNotBeDeletedIsNeverReadAgain) {
  request("delete a");
  ReplySlot& slot = client_slot();
  send(warm_key_, slot);
  answer(ops(0)[0], "NOT_FOUND\r\n");
  fail_op(ops(1)[0], "SERVER_ERROR backend timeout");
  ASSERT_TRUE(slot.complete());
  EXPECT_EQ(copy_all(slot.reply()), "NOT_FOUND\r\n");
  EXPECT_TRUE(guard_.sample("a").poisoned);
  request("get a");
  ReplySlot& read = client_slot();
  send(warm_get_, read);
  answer_retrieval(ops(0)[1], {});
  ASSERT_TRUE(read.complete());
  EXPECT_EQ(copy_all(read.reply()), "END\r\n");
  EXPECT_EQ(ops(1).size(), 1u) << "the old server was not asked";
}

TEST_F(WarmRoutesTest, AMetaReadFallsBackAsTheClientWroteIt) {
  request("mg a v");
  ReplySlot& slot = client_slot();
  send(warm_key_, slot);
  answer(ops(0)[0], "EN\r\n");
  ASSERT_EQ(ops(1).size(), 1u);
  EXPECT_EQ(ops(1)[0].bytes, "mg a v\r\n");
  answer(ops(1)[0], "VA 1\r\nA\r\n");
  ASSERT_TRUE(slot.complete());
  EXPECT_EQ(copy_all(slot.reply()), "VA 1\r\nA\r\n");
  EXPECT_EQ(pool_stats_.warmup_hits.get(), 1u);
}

TEST_F(WarmRoutesTest, AMetaReadWhoseOldServerFailsIsTheMiss) {
  request("mg a v");
  ReplySlot& slot = client_slot();
  send(warm_key_, slot);
  answer(ops(0)[0], "EN\r\n");
  fail_op(ops(1)[0], "SERVER_ERROR backend timeout");
  ASSERT_EQ(ops(0).size(), 2u) << "missed everywhere: the new server asked again";
  answer(ops(0)[1], "EN\r\n");
  ASSERT_TRUE(slot.complete());
  EXPECT_EQ(copy_all(slot.reply()), "EN\r\n");
}

}  // namespace
}  // namespace memshard::proxy::testing_fakes
