// Shadow traffic (routes/shadow.h) over fake pools, alone and as a routing
// pool's route sends it (routes/prefix_route.h): a share of the keys chosen
// by a hash of the key, the same keys each time; the copy's answer dropped,
// never changing, failing or delaying the client's, even when the shadow
// fails or never answers; at most Shadow::kMaxInFlight copies waiting per
// worker, and past that copies dropped and counted.
#include "proxy/routes/shadow.h"

#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "proxy/routes/prefix_route.h"
#include "tests/proxy/routes/route_test_util.h"

namespace memshard::proxy::testing_fakes {
namespace {

std::vector<std::string> sample_keys(int n) {
  std::vector<std::string> keys;
  for (int i = 0; i < n; ++i) keys.push_back("feed:" + std::to_string(i));
  return keys;
}

TEST(ShadowShare, TheSameKeysEachTimeAndTheShareAsked) {
  const std::vector<std::string> keys = sample_keys(20000);
  size_t tenth = 0, half = 0;
  for (const std::string& k : keys) {
    const bool in_tenth = shadow_takes(k, 0.1);
    EXPECT_EQ(shadow_takes(k, 0.1), in_tenth) << "the same answer each time: " << k;
    if (in_tenth) {
      EXPECT_TRUE(shadow_takes(k, 0.5)) << "a larger share keeps the smaller's keys: " << k;
    }
    tenth += in_tenth;
    half += shadow_takes(k, 0.5);
    EXPECT_TRUE(shadow_takes(k, 1.0)) << "100%: every key";
    EXPECT_FALSE(shadow_takes(k, 0.0)) << "0%: none";
  }
  // Chance alone: 2000 +- 42 and 10000 +- 71 (one standard deviation).
  EXPECT_GT(tenth, 1800u);
  EXPECT_LT(tenth, 2200u);
  EXPECT_GT(half, 9700u);
  EXPECT_LT(half, 10300u);
}

TEST(ShadowShare, NotTheKeysOfAnyOneRingArc) {
  // Keys that differ only in their last bytes (fnv1a's weak spot) are
  // still taken about one in ten, in every run of ten consecutive numbers.
  size_t runs_with_none = 0;
  for (int run = 0; run < 1000; ++run) {
    size_t taken = 0;
    for (int i = 0; i < 10; ++i) taken += shadow_takes("k" + std::to_string(run * 10 + i), 0.1);
    runs_with_none += taken == 0;
  }
  // (0.9)^10 = 35% of runs take none by chance.
  EXPECT_GT(runs_with_none, 250u);
  EXPECT_LT(runs_with_none, 450u);
}

class ShadowTest : public WorkRouteTest {
 protected:
  ShadowTest() { targets_.push_back(RouteTarget{&main_key_, &main_get_, &shadow_, &counters_}); }
  void copy(Shadow& shadow) {
    RouteRequest req = route_request();
    shadow.copy(req);
  }
  std::deque<SentOp>& shadow_ops() { return shadow_pool_.ops(); }

  FakePool main_, shadow_pool_;
  PoolEntry main_key_{main_.routes(), PoolEntry::Part::key};
  PoolEntry main_get_{main_.routes(), PoolEntry::Part::multi_get};
  RouteStats counters_;
  Shadow shadow_{shadow_pool_.routes(), 1.0, counters_, &life_};
  std::vector<RouteTarget> targets_;
  PrefixTable table_{{""}, 0};
  PrefixKeyRoute key_{table_, targets_};
  PrefixGetRoute get_{table_, targets_, &life_};
};

TEST_F(ShadowTest, TakesIsTheSharesHash) {
  RouteStats c;
  Shadow tenth(shadow_pool_.routes(), 0.1, c, &life_);
  for (const std::string& k : sample_keys(2000)) {
    EXPECT_EQ(tenth.takes(k), shadow_takes(k, 0.1)) << k;
    EXPECT_TRUE(shadow_.takes(k)) << k;
  }
}

TEST_F(ShadowTest, ACopyGoesToTheShadowAndItsAnswerNeverReachesTheClient) {
  request("set feed:1 0 0 1", "x\r\n", "get next\r\n");
  ReplySlot& slot = client_slot();
  send(key_, slot);
  ASSERT_EQ(main_.ops().size(), 1u);
  EXPECT_EQ(main_.ops()[0].bytes, "set feed:1 0 0 1\r\nx\r\n") << "the client's bytes, whole";
  ASSERT_EQ(shadow_ops().size(), 1u);
  EXPECT_EQ(shadow_ops()[0].bytes, "set feed:1 0 0 1\r\nx\r\n") << "a copy of them";
  EXPECT_NE(shadow_ops()[0].op.slot, &slot) << "in a slot of its own";
  EXPECT_EQ(input(), "get next\r\n");
  EXPECT_EQ(counters_.shadow_sent.get(), 1u);
  EXPECT_EQ(shadow_pool_.stats.requests.get(), 1u) << "counted as the shadow pool's";

  // The shadow answers first, and differently: the client still waits on
  // its own pool, and gets its own pool's answer.
  answer(shadow_ops()[0], "NOT_STORED\r\n");
  EXPECT_FALSE(slot.complete());
  EXPECT_EQ(owner_.told, 0);
  answer(main_.ops()[0], "STORED\r\n");
  ASSERT_TRUE(slot.complete());
  EXPECT_EQ(owner_.told, 1);
  EXPECT_EQ(copy_all(slot.reply()), "STORED\r\n");
  EXPECT_EQ(counters_.shadow_failed.get(), 0u);
}

TEST_F(ShadowTest, AShadowThatFailsLateChangesNothingTheClientSaw) {
  request("get feed:1 feed:2");
  ReplySlot& slot = client_slot();
  send(get_, slot);
  ASSERT_EQ(main_.ops().size(), 1u);
  ASSERT_EQ(shadow_ops().size(), 1u);
  EXPECT_EQ(shadow_ops()[0].keys, (std::vector<std::string>{"feed:1", "feed:2"}));
  answer_retrieval(main_.ops()[0], {{"feed:2", "M"}});
  ASSERT_TRUE(slot.complete()) << "the client does not wait for the shadow";
  EXPECT_EQ(owner_.told, 1);
  const std::string seen = "VALUE feed:2 0 1\r\nM\r\nEND\r\n";
  EXPECT_EQ(copy_all(slot.reply()), seen);
  fail_retrieval(shadow_ops()[0], "SERVER_ERROR backend timeout");
  EXPECT_EQ(owner_.told, 1) << "the client hears nothing more";
  EXPECT_EQ(copy_all(slot.reply()), seen);
  EXPECT_EQ(counters_.shadow_failed.get(), 1u);
  EXPECT_EQ(counters_.errors.get(), 0u) << "the route's own errors are the client's";
}

TEST_F(ShadowTest, ADeadShadowChangesNothing) {
  shadow_pool_.server.down = true;
  request("set feed:1 0 0 1", "x\r\n");
  ReplySlot& slot = client_slot();
  send(key_, slot);
  EXPECT_EQ(counters_.shadow_failed.get(), 1u) << "failed at once";
  EXPECT_FALSE(slot.complete());
  answer(main_.ops()[0], "STORED\r\n");
  ASSERT_TRUE(slot.complete());
  EXPECT_EQ(copy_all(slot.reply()), "STORED\r\n");
  EXPECT_EQ(owner_.told, 1);
}

TEST_F(ShadowTest, AShadowThatNeverAnswersChangesNothing) {
  for (int i = 0; i < 3; ++i) {
    request("mg feed:" + std::to_string(i) + " v");
    ReplySlot& slot = client_slot();
    send(key_, slot);
    answer(main_.ops().back(), "EN\r\n");
    ASSERT_TRUE(slot.complete());
    EXPECT_EQ(copy_all(slot.reply()), "EN\r\n");
  }
  EXPECT_EQ(owner_.told, 3);
  EXPECT_EQ(shadow_ops().size(), 3u);
  EXPECT_EQ(life_.held_requests, 3u) << "the copies wait, on their own";
  for (SentOp& op : shadow_ops()) answer(op, "VA 1\r\ns\r\n");  // freed at last
  EXPECT_EQ(owner_.told, 3);
}

TEST_F(ShadowTest, OnlyTheSharesKeysAreCopiedTheSameOnesEachTime) {
  RouteStats c;
  Shadow tenth(shadow_pool_.routes(), 0.1, c, &life_);
  std::vector<RouteTarget> targets{RouteTarget{&main_key_, &main_get_, &tenth, &c}};
  PrefixKeyRoute route(table_, targets);
  std::vector<std::string> expected;
  for (int round = 0; round < 2; ++round) {
    for (const std::string& k : sample_keys(300)) {
      request("delete " + k);
      ReplySlot& slot = client_slot();
      send(route, slot);
      answer(main_.ops().back(), "DELETED\r\n");
      if (round == 0 && shadow_takes(k, 0.1)) expected.push_back("delete " + k + "\r\n");
    }
  }
  EXPECT_EQ(main_.ops().size(), 600u) << "every request goes to its own pool";
  ASSERT_EQ(shadow_ops().size(), 2 * expected.size());
  EXPECT_GT(expected.size(), 10u);
  EXPECT_LT(expected.size(), 60u);
  for (size_t i = 0; i < shadow_ops().size(); ++i) {
    EXPECT_EQ(shadow_ops()[i].bytes, expected[i % expected.size()]) << i;
    answer(shadow_ops()[i], "NOT_FOUND\r\n");
  }
  EXPECT_EQ(c.shadow_sent.get(), shadow_ops().size());
}

TEST_F(ShadowTest, AMultiGetsCopyAsksForTheSharesKeysOnly) {
  // Two keys the half share takes, two it does not.
  std::vector<std::string> in, out;
  for (const std::string& k : sample_keys(100)) {
    (shadow_takes(k, 0.5) ? in : out).push_back(k);
  }
  ASSERT_GE(in.size(), 2u);
  ASSERT_GE(out.size(), 2u);
  RouteStats c;
  Shadow half(shadow_pool_.routes(), 0.5, c, &life_);
  std::vector<RouteTarget> targets{RouteTarget{&main_key_, &main_get_, &half, &c}};
  PrefixGetRoute route(table_, targets, &life_);
  request("gets " + out[0] + " " + in[0] + " " + out[1] + " " + in[1], {}, "get next\r\n");
  ReplySlot& slot = client_slot();
  send(route, slot);
  ASSERT_EQ(shadow_ops().size(), 1u);
  EXPECT_EQ(shadow_ops()[0].verb, "gets");
  EXPECT_EQ(shadow_ops()[0].keys, (std::vector<std::string>{in[0], in[1]}));
  ASSERT_EQ(main_.ops().size(), 1u);
  EXPECT_EQ(main_.ops()[0].keys.size(), 4u) << "the client's pool gets every key";
  EXPECT_EQ(input(), "get next\r\n");
  answer_retrieval(shadow_ops()[0], {{in[0], "S"}});
  EXPECT_FALSE(slot.complete());
  answer_retrieval(main_.ops()[0], {});
  ASSERT_TRUE(slot.complete());
  EXPECT_EQ(copy_all(slot.reply()), "END\r\n") << "the shadow's hit is not the client's";

  // None taken: no copy at all.
  request("get " + out[0] + " " + out[1]);
  ReplySlot& none = client_slot();
  send(route, none);
  EXPECT_EQ(shadow_ops().size(), 1u);
  answer_retrieval(main_.ops()[1], {});
  EXPECT_EQ(c.shadow_sent.get(), 1u);
}

TEST_F(ShadowTest, AMultiGetSpanningRoutesCopiesEachRoutesOwnKeysToItsShadow) {
  FakePool sess;
  PoolEntry sess_key(sess.routes(), PoolEntry::Part::key);
  PoolEntry sess_get(sess.routes(), PoolEntry::Part::multi_get);
  RouteStats sess_counters;
  std::vector<RouteTarget> targets{RouteTarget{&main_key_, &main_get_, &shadow_, &counters_},
                                   RouteTarget{&sess_key, &sess_get, nullptr, &sess_counters}};
  PrefixTable table({"feed:", "sess:"}, PrefixTable::npos);
  PrefixGetRoute route(table, targets, &life_);
  request("get sess:1 feed:1 sess:2 feed:2");
  ReplySlot& slot = client_slot();
  send(route, slot);
  ASSERT_EQ(shadow_ops().size(), 1u);
  EXPECT_EQ(shadow_ops()[0].keys, (std::vector<std::string>{"feed:1", "feed:2"}))
      << "the feed: route's keys, not the sess: route's";
  answer_retrieval(shadow_ops()[0], {{"feed:1", "S"}, {"feed:2", "S"}});
  answer_retrieval(main_.ops()[0], {{"feed:2", "F"}});
  answer_retrieval(sess.ops()[0], {{"sess:1", "A"}});
  ASSERT_TRUE(slot.complete());
  EXPECT_EQ(copy_all(slot.reply()), "VALUE sess:1 0 1\r\nA\r\nVALUE feed:2 0 1\r\nF\r\nEND\r\n");
}

TEST_F(ShadowTest, PastTheInFlightBoundCopiesAreDroppedAndCounted) {
  request("set feed:1 0 0 1", "x\r\n");
  for (uint32_t i = 0; i < Shadow::kMaxInFlight; ++i) copy(shadow_);
  EXPECT_EQ(shadow_ops().size(), Shadow::kMaxInFlight);
  EXPECT_EQ(counters_.shadow_sent.get(), Shadow::kMaxInFlight);
  EXPECT_EQ(counters_.shadow_dropped.get(), 0u);
  EXPECT_EQ(input(), "set feed:1 0 0 1\r\nx\r\n") << "copies leave the client's bytes alone";

  // The client's own request still goes, and is answered.
  ReplySlot& slot = client_slot();
  send(key_, slot);
  EXPECT_EQ(counters_.shadow_dropped.get(), 1u);
  EXPECT_EQ(shadow_ops().size(), Shadow::kMaxInFlight) << "dropped, not queued";
  ASSERT_EQ(main_.ops().size(), 1u);
  answer(main_.ops()[0], "STORED\r\n");
  ASSERT_TRUE(slot.complete());
  EXPECT_EQ(copy_all(slot.reply()), "STORED\r\n");

  // One answered: room for one more.
  answer(shadow_ops()[0], "STORED\r\n");
  request("set feed:2 0 0 1", "y\r\n");
  copy(shadow_);
  EXPECT_EQ(shadow_ops().size(), Shadow::kMaxInFlight + 1);
  copy(shadow_);
  EXPECT_EQ(counters_.shadow_dropped.get(), 2u);
  EXPECT_EQ(counters_.shadow_sent.get(), Shadow::kMaxInFlight + 1);
  for (SentOp& op : shadow_ops()) {
    if (!op.answered) answer(op, "STORED\r\n");
  }
}

}  // namespace
}  // namespace memshard::proxy::testing_fakes
