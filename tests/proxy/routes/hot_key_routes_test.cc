// The hot-key layer around a pool's routes (routes/hot_key_routes.h), over
// fake servers, with the pool's HotKeyCache: a single-key get of a hot key
// fills the cache and the next is answered from it; every request that
// changes a key invalidates it when sent and again when answered, before
// its client hears; flush_all clears the cache; and the keys forwarded are
// sampled into the worker's summary under their server's name.
#include "proxy/routes/hot_key_routes.h"

#include <gtest/gtest.h>

#include <functional>
#include <memory>
#include <string>

#include "proxy/routes/broadcast_route.h"
#include "proxy/routes/key_route.h"
#include "proxy/routes/pool_route.h"
#include "proxy/routes/split_route.h"
#include "tests/proxy/routes/route_test_util.h"

namespace memshard::proxy::testing_fakes {
namespace {

// A client whose reply the test inspects at the moment it is told: what
// the cache holds then is what a client's next read could be answered.
class CheckingOwner final : public SlotOwner {
 public:
  explicit CheckingOwner(std::function<void()> check) : check_(std::move(check)) {}
  void on_slot_complete() override {
    ++told;
    check_();
  }
  int told = 0;

 private:
  std::function<void()> check_;
};

class HotKeyRoutesTest : public RouteTest {
 protected:
  // `cache_mb` 0: no hot_key_cache. The pool is named after the test: a
  // pool's cache is shared by name across the process.
  void build(uint32_t cache_mb = 1) {
    const auto* info = ::testing::UnitTest::GetInstance()->current_test_info();
    conf::PoolConfig pc;
    pc.name = std::string(info->test_suite_name()) + "." + info->name();
    pc.hot_key_cache_mb = cache_mb;
    pc.hot_key_ttl_ms = 60'000;
    std::vector<ketama::ServerEntry> entries(3);
    std::vector<ServerInfo> infos;
    for (size_t i = 0; i < entries.size(); ++i) {
      entries[i].host = "10.0.0." + std::to_string(i + 1);
      infos.push_back(ServerInfo{entries[i].address(),
                                 "server-" + std::to_string(i),
                                 {},
                                 false,
                                 entries[i].host,
                                 entries[i].port});
    }
    pool_ = std::make_unique<Pool>(
        Pool{pc, ketama::Ring::build(entries, {}), std::move(infos), {}, {}, {}, {}, {}, {}});
    route_.pool = pool_.get();
    route_.stats = std::make_shared<PoolStats>();
    route_.placement = std::make_unique<RingPlacement>(
        pool_->ring, std::vector<Server*>{&servers_[0], &servers_[1], &servers_[2]});
    // The routes build_routes would make, over the fake placement.
    route_.key = std::make_unique<KeyRoute>(placement_);
    route_.multi_get = std::make_unique<SplitRoute>(placement_);
    route_.all = std::make_unique<BroadcastRoute>(placement_);
    route_.build_hot_keys();
    if (cache_mb > 0) {
      cache_ = HotKeyCache::for_pool(pc.name, size_t{cache_mb} << 20,
                                     uint64_t{pc.hot_key_ttl_ms} * 1000);
    }
  }

  // Makes `key` hot on this worker: all of a window's samples, then the
  // tick that remakes the hot list (before the requests' own time).
  void make_hot(const std::string& key) {
    HotKeyTracker& tracker = route_.stats->hot_keys;
    for (int i = 0; i < 2 * static_cast<int>(HotKeyTracker::kMinSamples); ++i) {
      tracker.record(key, "server-0", 0);
    }
    tracker.tick_if_due(HotKeyTracker::kTickUsec);
    ASSERT_TRUE(tracker.is_hot(key));
  }

  template <typename R>
  void send(R& route, ReplySlot& slot) {
    RouteRequest req = route_request();
    route.send(req, slot);
  }

  ReplySlot& checked_slot(std::function<void()> check) {
    owners_.push_back(std::make_unique<CheckingOwner>(std::move(check)));
    ReplySlot& s = client_slot();
    s.set_owner(owners_.back().get());
    return s;
  }

  bool cached(std::string_view key) {
    std::string out;
    return cache_->lookup(key, kNowUsec, out);
  }
  void fill(std::string_view key) {
    const std::string block = "VALUE " + std::string(key) + " 0 3\r\nold\r\n";
    cache_->fill(key, block, cache_->epoch(key), kNowUsec);
    ASSERT_TRUE(cached(key));
  }

  std::deque<SentOp>& ops(int server) { return servers_[server].box.ops; }

  std::unique_ptr<Pool> pool_;
  PoolRoute route_;
  std::shared_ptr<HotKeyCache> cache_;
  std::vector<std::unique_ptr<CheckingOwner>> owners_;
};

TEST_F(HotKeyRoutesTest, AGetOfAHotKeyFillsTheCacheAndTheNextIsAnsweredFromIt) {
  build();
  placement_.where = {{"a", 0}};
  make_hot("a");
  request("get a", {}, "get next\r\n");
  ReplySlot& first = client_slot();
  send(*route_.multi_get, first);
  ASSERT_EQ(ops(0).size(), 1u);
  EXPECT_FALSE(cached("a"));
  answer_retrieval(ops(0)[0], {{"a", "AAA"}});
  ASSERT_TRUE(first.complete());
  const std::string reply = copy_all(first.reply());
  EXPECT_EQ(reply, "VALUE a 0 3\r\nAAA\r\nEND\r\n");
  EXPECT_TRUE(cached("a")) << "the hit filled the cache";

  request("get a", {}, "get next\r\n");
  ReplySlot& second = client_slot();
  send(*route_.multi_get, second);
  EXPECT_EQ(ops(0).size(), 1u) << "no server asked";
  ASSERT_TRUE(second.complete());
  EXPECT_EQ(copy_all(second.reply()), reply);
  EXPECT_EQ(input(), "get next\r\n") << "the request's bytes are consumed, the next left";
  EXPECT_EQ(pool_stats_.hot_key_hits.get(), 1u);
  EXPECT_EQ(slots_.outstanding, 0);
}

TEST_F(HotKeyRoutesTest, AMissOrAColdKeyFillsNothing) {
  build();
  placement_.where = {{"a", 0}, {"cold", 1}};
  make_hot("a");
  request("get a");
  ReplySlot& miss = client_slot();
  send(*route_.multi_get, miss);
  answer_retrieval(ops(0)[0], {});
  EXPECT_EQ(copy_all(miss.reply()), "END\r\n");
  request("get cold");
  ReplySlot& cold = client_slot();
  send(*route_.multi_get, cold);
  answer_retrieval(ops(1)[0], {{"cold", "C"}});
  EXPECT_EQ(copy_all(cold.reply()), "VALUE cold 0 1\r\nC\r\nEND\r\n");
  EXPECT_EQ(cache_->entries(), 0u);
  EXPECT_EQ(slots_.outstanding, 0);
}

TEST_F(HotKeyRoutesTest, AWriteInvalidatesWhenSentAndAgainBeforeItsClientHears) {
  build();
  placement_.where = {{"a", 0}};
  fill("a");
  request("set a 0 0 1", "x\r\n");
  bool cached_when_told = true;
  ReplySlot& slot = checked_slot([&] { cached_when_told = cached("a"); });
  send(*route_.key, slot);
  EXPECT_FALSE(cached("a")) << "dropped when sent";
  ASSERT_EQ(ops(0).size(), 1u);
  EXPECT_EQ(ops(0)[0].bytes, sent_bytes_);
  // A read that began before the write reached the server fills the old
  // value meanwhile.
  fill("a");
  answer(ops(0)[0], "STORED\r\n");
  ASSERT_TRUE(slot.complete());
  EXPECT_EQ(copy_all(slot.reply()), "STORED\r\n");
  EXPECT_FALSE(cached_when_told) << "dropped again before the client heard";
  EXPECT_EQ(slots_.outstanding, 0);
}

TEST_F(HotKeyRoutesTest, EveryKindOfWriteInvalidatesAndReadsDoNot) {
  build();
  placement_.where = {{"a", 0}};
  struct Case {
    std::string line, data;
    bool multi_get;  // gat goes by the retrieval route
    bool writes;
  };
  const std::vector<Case> cases = {
      {"delete a", "", false, true},       {"incr a 1", "", false, true},
      {"touch a 10", "", false, true},     {"append a 0 0 1", "x\r\n", false, true},
      {"ms a 1 T0", "x\r\n", false, true}, {"md a q", "", false, true},
      {"ma a", "", false, true},           {"mg a T30 v", "", false, true},
      {"mg a N30 v", "", false, true},     {"gat 10 a", "", true, true},
      {"mg a v", "", false, false},        {"me a", "", false, false}};
  for (const Case& c : cases) {
    SCOPED_TRACE(c.line);
    fill("a");
    request(c.line, c.data);
    ReplySlot& slot = client_slot();
    send(c.multi_get ? *route_.multi_get : *route_.key, slot);
    EXPECT_EQ(cached("a"), !c.writes);
    ASSERT_FALSE(ops(0).empty());
    SentOp& op = ops(0).back();
    if (op.op.mode == ReplyMode::retrieval) {
      answer_retrieval(op, {});
    } else {
      answer(op, op.op.mode == ReplyMode::quiet_keep ? "MN\r\n" : "EN\r\n");
    }
    EXPECT_TRUE(slot.complete());
  }
  EXPECT_EQ(slots_.outstanding, 0);
}

TEST_F(HotKeyRoutesTest, FlushAllClearsTheCacheWhenSentAndWhenAnswered) {
  build();
  fill("a");
  fill("b");
  request("flush_all");
  bool empty_when_told = false;
  ReplySlot& slot = checked_slot([&] { empty_when_told = cache_->entries() == 0; });
  send(*route_.all, slot);
  EXPECT_EQ(cache_->entries(), 0u);
  fill("c");
  for (int s = 0; s < 3; ++s) {
    ASSERT_EQ(ops(s).size(), 1u) << "flush_all goes to every server";
    answer(ops(s)[0], "OK\r\n");
  }
  ASSERT_TRUE(slot.complete());
  EXPECT_EQ(copy_all(slot.reply()), "OK\r\n");
  EXPECT_TRUE(empty_when_told);
  EXPECT_EQ(slots_.outstanding, 0);
}

TEST_F(HotKeyRoutesTest, TheDeleteOfARefusedSetInvalidatesToo) {
  build();
  placement_.where = {{"a", 0}};
  fill("a");
  // A set refused as too large: its data is swallowed, the key deleted.
  request("set a 0 0 100", {}, {}, proto::Limits{10});
  ASSERT_TRUE(request_.invalidate_key);
  ReplySlot& slot = client_slot();
  evbuffer_add(slot.reply(), request_.error_reply.data(), request_.error_reply.size());
  RouteRequest req = route_request();
  route_.key->invalidate(req, slot);
  slot.complete_unsent();
  EXPECT_FALSE(cached("a"));
  ASSERT_EQ(ops(0).size(), 1u);
  EXPECT_TRUE(ops(0)[0].bytes.starts_with("md a q\r\n")) << ops(0)[0].bytes;
  fill("a");
  answer(ops(0)[0], "MN\r\n");
  ASSERT_TRUE(slot.complete());
  EXPECT_FALSE(cached("a"));
  EXPECT_EQ(copy_all(slot.reply()), std::string(request_.error_reply));
}

TEST_F(HotKeyRoutesTest, WithoutACacheWritesAndFlushPassStraightThrough) {
  build(0);
  placement_.where = {{"a", 0}};
  EXPECT_NE(dynamic_cast<BroadcastRoute*>(route_.all.get()), nullptr) << "flush_all not wrapped";
  make_hot("a");
  request("get a");
  ReplySlot& get = client_slot();
  send(*route_.multi_get, get);
  ASSERT_EQ(ops(0).size(), 1u);
  EXPECT_EQ(get.kind(), SlotKind::retrieval) << "the pool's own route filled the client's slot";
  answer_retrieval(ops(0)[0], {{"a", "A"}});
  request("get a");
  ReplySlot& again = client_slot();
  send(*route_.multi_get, again);
  EXPECT_EQ(ops(0).size(), 2u) << "nothing cached: the server is asked again";
  answer_retrieval(ops(0)[1], {});
  EXPECT_EQ(slots_.acquired, 0) << "no work of the hot-key layer";
}

TEST_F(HotKeyRoutesTest, KeysForwardedAreSampledUnderTheirServersName) {
  build(0);
  placement_.where = {{"z", 0}};
  // One request in HotKeyTracker::kSampleEvery is counted: send enough
  // that a few are, whatever the sampler's sequence.
  const int requests = 64 * static_cast<int>(HotKeyTracker::kSampleEvery);
  for (int i = 0; i < requests; ++i) {
    request("get z");
    send(*route_.multi_get, client_slot());
  }
  const HotKeySummary summary = route_.stats->hot_keys.summary();
  ASSERT_EQ(summary.counters.size(), 1u);
  EXPECT_EQ(summary.counters[0].key, "z");
  EXPECT_GT(summary.total, 0u);
  EXPECT_LT(summary.total, static_cast<uint64_t>(requests)) << "a sample, not every request";
  // Named by the pool's ring, as stats show it.
  EXPECT_EQ(summary.counters[0].server, pool_->servers[pool_->ring.lookup("z")].stats_name);
  for (SentOp& op : ops(0)) answer_retrieval(op, {});
}

}  // namespace
}  // namespace memshard::proxy::testing_fakes
