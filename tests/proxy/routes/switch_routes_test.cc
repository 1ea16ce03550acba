// A scheduled switch's routes over fake servers (routes/switch_routes.h,
// and the future ring of past_placement.h as the warm-up routes use it):
// each key follows the placement in force before its moment and the
// waiting one after, a multi-get inside the window is split between them
// and answered in the client's order, and before the switch a write
// deletes the key where it will be and a read that misses looks there
// without copying what it finds back.
#include "proxy/routes/switch_routes.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <array>
#include <set>

#include "ketama/hash.h"
#include "ketama/ring.h"
#include "proxy/routes/broadcast_route.h"
#include "proxy/routes/key_route.h"
#include "proxy/routes/split_route.h"
#include "proxy/routes/warm_get_route.h"
#include "proxy/routes/warm_guard.h"
#include "proxy/routes/warm_key_route.h"
#include "tests/proxy/routes/route_test_util.h"

namespace memshard::proxy::testing_fakes {
namespace {

// The waiting placement: one server, so every key will be on it.
PastRing future_ring() {
  ketama::ServerEntry e;
  e.host = "127.0.0.1";
  e.port = 3;
  return PastRing{ketama::Ring::build({e}, {}),
                  {ServerInfo{"127.0.0.1:3", "127.0.0.1:3", {}, false, "127.0.0.1", 3}},
                  {},
                  UINT64_MAX,
                  2,
                  1,
                  true,
                  false};
}

class SwitchRoutesTest : public RouteTest {
 protected:
  SwitchRoutesTest() {
    // In force: a, b on server 0, c, d on server 1, e on server 2. After
    // the switch everything is on server 2: e does not move.
    placement_.where = {{"a", 0}, {"b", 0}, {"c", 1}, {"d", 1}, {"e", 2}};
    next_.where = {{"a", 2}, {"b", 2}, {"c", 2}, {"d", 2}, {"e", 2}};
    future_.push_back(future_ring());
  }
  ~SwitchRoutesTest() override { EXPECT_EQ(slots_.outstanding, 0) << "a slot was not given back"; }

  template <typename R>
  void send_at(R& route, ReplySlot& slot, uint64_t now_usec) {
    RouteRequest req = route_request();
    req.now_usec = now_usec;
    route.send(req, slot);
  }
  std::deque<SentOp>& ops(int server) { return servers_[server].box.ops; }

  static constexpr uint64_t kAt = kNowUsec + 10'000'000;
  static constexpr uint64_t kWindow = 10'000'000;

  FakePlacement next_{{&servers_[0], &servers_[1], &servers_[2]}};
  std::vector<PastRing> future_;
  PastPlacement future_past_{future_, {{&servers_[2]}}, &placement_, nullptr};
  WarmGuard guard_{64};
  KeyRoute before_key_{placement_};
  KeyRoute after_key_{next_};
  SplitRoute before_get_{placement_};
  SplitRoute after_get_{next_};
  WarmKeyRoute warm_key_{before_key_, future_past_, guard_, nullptr};
  WarmGetRoute warm_get_{before_get_, future_past_, guard_, nullptr};
};

TEST(SwitchMoment, AKeysMomentIsItsMd5ModuloTheWindowTheSameEverywhere) {
  const SwitchMoment m{1'000'000, 10'000'000};
  for (const char* key : {"a", "user:42", "0:tag", "something longer than a word"}) {
    unsigned char d[16];
    ketama::md5_digest(key, d);
    const uint32_t h = static_cast<uint32_t>(d[0]) | static_cast<uint32_t>(d[1]) << 8 |
                       static_cast<uint32_t>(d[2]) << 16 | static_cast<uint32_t>(d[3]) << 24;
    EXPECT_EQ(m.of(key), 1'000'000 + uint64_t{h % 10'000} * 1000) << key;
    EXPECT_FALSE(m.switched(key, m.of(key) - 1)) << key;
    EXPECT_TRUE(m.switched(key, m.of(key))) << key;
  }
  EXPECT_FALSE(m.switched("a", 999'999)) << "before the window, no key";
  EXPECT_TRUE(m.switched("a", 11'000'000)) << "once it ended, every key";
  const SwitchMoment at_once{1'000'000, 0};
  EXPECT_EQ(at_once.of("a"), 1'000'000u);
}

TEST(SwitchMoment, KeysSpreadOverTheWindow) {
  const SwitchMoment m{0, 10'000'000};
  std::array<int, 10> per_second{};
  for (int i = 0; i < 10'000; ++i) ++per_second[m.of("key:" + std::to_string(i)) / 1'000'000];
  for (int n : per_second) {
    EXPECT_GT(n, 800) << "a tenth of the keys, give or take";
    EXPECT_LT(n, 1200);
  }
}

TEST_F(SwitchRoutesTest, AKeyFollowsThePlacementInForceUntilItsMomentThenTheWaitingOne) {
  const SwitchMoment m{kAt, kWindow};
  SwitchKeyRoute route(before_key_, after_key_, m);
  request("get a");
  ReplySlot& early = client_slot();
  send_at(route, early, m.of("a") - 1);
  ASSERT_EQ(ops(0).size(), 1u);
  answer(ops(0)[0], "END\r\n");
  request("get a");
  ReplySlot& late = client_slot();
  send_at(route, late, m.of("a"));
  ASSERT_EQ(ops(2).size(), 1u) << "switched at its moment";
  answer(ops(2)[0], "END\r\n");
  EXPECT_TRUE(early.complete());
  EXPECT_TRUE(late.complete());
}

TEST_F(SwitchRoutesTest, AMultiGetInsideTheWindowIsSplitAndAnsweredInTheClientsOrder) {
  const SwitchMoment m{kAt, kWindow};
  // a and c: whichever switches first is switched, the other not yet.
  const bool a_first = m.of("a") < m.of("c");
  const uint64_t now = std::max(std::min(m.of("a"), m.of("c")), kAt);
  ASSERT_NE(m.of("a"), m.of("c"));
  SwitchGetRoute route(before_get_, after_get_, m, future_past_, nullptr);
  request("get a c e");
  ReplySlot& slot = client_slot();
  send_at(route, slot, now);
  // The switched key (and e, which does not move) go to server 2 as one
  // request; the other to its server in force.
  const std::string waiting = a_first ? "c" : "a";
  const std::string switched = a_first ? "a" : "c";
  ASSERT_EQ(ops(2).size(), 1u);
  EXPECT_EQ(ops(2)[0].keys, (std::vector<std::string>{switched, "e"}));
  const int old_server = a_first ? 1 : 0;
  ASSERT_EQ(ops(old_server).size(), 1u);
  EXPECT_EQ(ops(old_server)[0].keys, (std::vector<std::string>{waiting}));
  answer_retrieval(ops(2)[0], {{"e", "E"}, {switched, "S"}});
  EXPECT_FALSE(slot.complete());
  answer_retrieval(ops(old_server)[0], {{waiting, "W"}});
  ASSERT_TRUE(slot.complete());
  EXPECT_EQ(owner_.told, 1);
  const std::string a = a_first ? "S" : "W", c = a_first ? "W" : "S";
  EXPECT_EQ(copy_all(slot.reply()),
            "VALUE a 0 1\r\n" + a + "\r\nVALUE c 0 1\r\n" + c + "\r\nVALUE e 0 1\r\nE\r\nEND\r\n");
}

TEST_F(SwitchRoutesTest, AHalfThatFailsReadsAsMisses) {
  const SwitchMoment m{kAt, kWindow};
  const bool a_first = m.of("a") < m.of("c");
  const uint64_t now = std::max(std::min(m.of("a"), m.of("c")), kAt);
  SwitchGetRoute route(before_get_, after_get_, m, future_past_, nullptr);
  request("get a c");
  ReplySlot& slot = client_slot();
  send_at(route, slot, now);
  const int old_server = a_first ? 1 : 0;
  fail_retrieval(ops(old_server)[0], "SERVER_ERROR backend timeout");
  answer_retrieval(ops(2)[0], {{a_first ? "a" : "c", "S"}});
  ASSERT_TRUE(slot.complete());
  EXPECT_EQ(copy_all(slot.reply()),
            std::string("VALUE ") + (a_first ? "a" : "c") + " 0 1\r\nS\r\nEND\r\n");
}

TEST_F(SwitchRoutesTest, AMultiGetWhoseKeysAgreeGoesWholeWithNothingHeld) {
  const SwitchMoment m{kAt, kWindow};
  SwitchGetRoute route(before_get_, after_get_, m, future_past_, nullptr);
  request("get a b c");
  ReplySlot& before = client_slot();
  send_at(route, before, kAt - 1);
  EXPECT_EQ(ops(0).size(), 1u);
  EXPECT_EQ(ops(1).size(), 1u);
  request("get a b c");
  ReplySlot& after = client_slot();
  send_at(route, after, kAt + kWindow);
  ASSERT_EQ(ops(2).size(), 1u);
  EXPECT_EQ(ops(2)[0].keys, (std::vector<std::string>{"a", "b", "c"}));
  EXPECT_EQ(slots_.acquired, 0) << "no split: the client's slot was filled directly";
  for (int s = 0; s < 3; ++s) {
    for (SentOp& op : ops(s)) answer_retrieval(op, {});
  }
  EXPECT_TRUE(before.complete());
  EXPECT_TRUE(after.complete());
}

TEST_F(SwitchRoutesTest, BeforeTheSwitchAWriteDeletesTheKeyWhereItWillBe) {
  request("set a 0 0 1", "x\r\n");
  ReplySlot& slot = client_slot();
  send_at(warm_key_, slot, kNowUsec);
  ASSERT_EQ(ops(0).size(), 1u);
  EXPECT_TRUE(ops(2).empty()) << "the future copy is deleted once the write is stored";
  answer(ops(0)[0], "STORED\r\n");
  ASSERT_EQ(ops(2).size(), 1u);
  EXPECT_EQ(ops(2)[0].bytes, "md a\r\n");
  EXPECT_FALSE(slot.complete()) << "answered before the future copy is gone";
  answer(ops(2)[0], "NF\r\n");
  ASSERT_TRUE(slot.complete());
  EXPECT_EQ(copy_all(slot.reply()), "STORED\r\n");
  EXPECT_EQ(pool_stats_.switch_future_deletes.get(), 1u);
  request("set e 0 0 1", "x\r\n");  // e does not move: nothing else
  ReplySlot& unmoved = client_slot();
  send_at(warm_key_, unmoved, kNowUsec);
  ASSERT_EQ(ops(2).size(), 2u);
  EXPECT_EQ(ops(2)[1].bytes, "set e 0 0 1\r\nx\r\n");
  answer(ops(2)[1], "STORED\r\n");
  EXPECT_EQ(pool_stats_.switch_future_deletes.get(), 1u);
}

TEST_F(SwitchRoutesTest, BeforeTheSwitchAMissLooksWhereTheKeyWillBeAndCopiesNothingBack) {
  request("mg a v f t");
  ReplySlot& slot = client_slot();
  send_at(warm_key_, slot, kNowUsec);
  answer(ops(0)[0], "EN\r\n");
  ASSERT_EQ(ops(2).size(), 1u);
  answer(ops(2)[0], "VA 1 f0 t300\r\nZ\r\n");
  ASSERT_TRUE(slot.complete());
  EXPECT_EQ(copy_all(slot.reply()), "VA 1 f0 t300\r\nZ\r\n");
  EXPECT_EQ(ops(0).size(), 1u) << "not copied to the server in force";
  EXPECT_EQ(pool_stats_.switch_fallback_reads.get(), 1u);

  request("get b");
  ReplySlot& get = client_slot();
  send_at(warm_get_, get, kNowUsec);
  answer_retrieval(ops(0)[1], {});
  ASSERT_EQ(ops(2).size(), 2u);
  answer(ops(2)[1], "VA 1 f0 t-1\r\nB\r\n");
  ASSERT_TRUE(get.complete());
  EXPECT_EQ(copy_all(get.reply()), "VALUE b 0 1\r\nB\r\nEND\r\n");
  EXPECT_EQ(ops(0).size(), 2u) << "not copied to the server in force";
  EXPECT_EQ(pool_stats_.switch_fallback_reads.get(), 2u);
  EXPECT_EQ(pool_stats_.warmup_copies.get(), 0u);
}

TEST_F(SwitchRoutesTest, FlushAllReachesTheServersOfBothPlacements) {
  ServerList all({&servers_[0], &servers_[1], &servers_[2]});
  BroadcastRoute route(all);
  request("flush_all");
  ReplySlot& slot = client_slot();
  send_at(route, slot, kNowUsec);
  for (int s = 0; s < 3; ++s) {
    ASSERT_EQ(ops(s).size(), 1u) << s;
    answer(ops(s)[0], "OK\r\n");
  }
  ASSERT_TRUE(slot.complete());
  EXPECT_EQ(copy_all(slot.reply()), "OK\r\n");
}

}  // namespace
}  // namespace memshard::proxy::testing_fakes
