// A route's warm-up from another pool (routes/warm_from_route.h; conf:
// warm_from, warm_ttl), as a routing pool builds it over fake pools: reads
// that miss on the route's pool (cold) are looked up in the warm pool, a
// hit answered and copied to the cold pool with an add; every other
// request goes to the cold pool only.
#include "proxy/routes/warm_from_route.h"

#include <gtest/gtest.h>

#include <map>
#include <memory>
#include <string>

#include "conf/config.h"
#include "proxy/routes/routing_pool.h"
#include "tests/proxy/routes/route_test_util.h"

namespace memshard::proxy::testing_fakes {
namespace {

constexpr const char* kWarmFromConfig = R"(front:
  listen: 127.0.0.1:22121
  routes:
    - pool: cold
      warm_from: warm
      warm_ttl: 600
cold:
  servers: [127.0.0.1:21001:1]
warm:
  servers: [127.0.0.1:21002:1]
)";

class WarmFromTest : public WorkRouteTest {
 protected:
  WarmFromTest() {
    conf::LoadResult r = conf::parse_config(kWarmFromConfig, "warm.yml");
    for (const conf::ConfigError& e : r.errors) ADD_FAILURE() << e.to_string();
    if (!r.config) return;
    config_ = *r.config->find_pool("front");
    routing_ = std::make_unique<RoutingPool>(
        config_, [this](const std::string& name) { return pools_.at(name).routes(); },
        [this](const std::string&) { return counters_; }, &life_);
    key_ = routing_->key_route();
    get_ = routing_->multi_get_route();
  }
  std::deque<SentOp>& cold() { return pools_.at("cold").ops(); }
  std::deque<SentOp>& warm() { return pools_.at("warm").ops(); }

  conf::PoolConfig config_;
  std::map<std::string, FakePool> pools_{[] {
    std::map<std::string, FakePool> m;
    m.try_emplace("cold");
    m.try_emplace("warm");
    return m;
  }()};
  std::shared_ptr<RouteStats> counters_ = std::make_shared<RouteStats>();
  std::unique_ptr<RoutingPool> routing_;
  std::unique_ptr<SingleKeyRoute> key_;
  std::unique_ptr<Route> get_;
};

TEST_F(WarmFromTest, AGetThatMissesColdIsAnsweredWarmAndCopiedWithWarmTtl) {
  request("get k");
  ReplySlot& slot = client_slot();
  send(*get_, slot);
  ASSERT_EQ(cold().size(), 1u);
  EXPECT_TRUE(warm().empty()) << "the cold side first";
  answer_retrieval(cold()[0], {});
  ASSERT_EQ(warm().size(), 1u);
  EXPECT_EQ(warm()[0].bytes, "mg k f t v\r\n") << "a plain lookup: nothing touched there";
  answer(warm()[0], "VA 2 f7 t-1\r\nhi\r\n");
  ASSERT_TRUE(slot.complete()) << "get does not wait for the copy";
  EXPECT_EQ(copy_all(slot.reply()), "VALUE k 7 2\r\nhi\r\nEND\r\n");
  ASSERT_EQ(cold().size(), 2u);
  EXPECT_EQ(cold()[1].bytes, "ms k 2 c T600 F7 ME\r\nhi\r\n")
      << "an add, so that a set meanwhile wins, with warm_ttl";
  answer(cold()[1], "HD c9\r\n");
  EXPECT_EQ(counters_->warm_lookups.get(), 1u);
  EXPECT_EQ(counters_->warm_hits.get(), 1u);
  EXPECT_EQ(counters_->warm_copies.get(), 1u);
}

TEST_F(WarmFromTest, AMissOnBothSidesIsAMiss) {
  request("get k");
  ReplySlot& slot = client_slot();
  send(*get_, slot);
  answer_retrieval(cold()[0], {});
  ASSERT_EQ(warm().size(), 1u);
  answer(warm()[0], "EN\r\n");
  ASSERT_TRUE(slot.complete());
  EXPECT_EQ(copy_all(slot.reply()), "END\r\n");
  EXPECT_EQ(cold().size(), 1u) << "nothing copied";
  EXPECT_EQ(counters_->warm_lookups.get(), 1u);
  EXPECT_EQ(counters_->warm_hits.get(), 0u);
}

TEST_F(WarmFromTest, AColdHitNeverAsksTheWarmSide) {
  request("get k");
  ReplySlot& slot = client_slot();
  send(*get_, slot);
  answer_retrieval(cold()[0], {{"k", "v"}});
  ASSERT_TRUE(slot.complete());
  EXPECT_EQ(copy_all(slot.reply()), "VALUE k 0 1\r\nv\r\nEND\r\n");
  EXPECT_TRUE(warm().empty());
  EXPECT_EQ(counters_->warm_lookups.get(), 0u);
}

TEST_F(WarmFromTest, AMultiGetLooksUpEachMissingKeyAndAnswersInKeyOrder) {
  request("get a b c d");
  ReplySlot& slot = client_slot();
  send(*get_, slot);
  answer_retrieval(cold()[0], {{"c", "C"}});
  ASSERT_EQ(warm().size(), 3u) << "a, b and d at once";
  EXPECT_EQ(warm()[0].bytes, "mg a f t v\r\n");
  EXPECT_EQ(warm()[1].bytes, "mg b f t v\r\n");
  EXPECT_EQ(warm()[2].bytes, "mg d f t v\r\n");
  answer(warm()[2], "VA 1 f0 t-1\r\nD\r\n");
  answer(warm()[1], "EN\r\n");
  EXPECT_FALSE(slot.complete());
  answer(warm()[0], "VA 1 f3 t10\r\nA\r\n");
  ASSERT_TRUE(slot.complete());
  EXPECT_EQ(copy_all(slot.reply()),
            "VALUE a 3 1\r\nA\r\nVALUE c 0 1\r\nC\r\nVALUE d 0 1\r\nD\r\nEND\r\n");
  ASSERT_EQ(cold().size(), 3u) << "a and d copied";
  EXPECT_EQ(cold()[1].bytes, "ms a 1 c T600 F3 ME\r\nA\r\n");
  EXPECT_EQ(cold()[2].bytes, "ms d 1 c T600 ME\r\nD\r\n");
  answer(cold()[1], "HD c1\r\n");
  answer(cold()[2], "NS\r\n");  // a set came first: not overwritten
  EXPECT_EQ(counters_->warm_lookups.get(), 3u);
  EXPECT_EQ(counters_->warm_hits.get(), 2u);
  EXPECT_EQ(counters_->warm_copies.get(), 1u);
}

// gets: the copy first, then the cold side again, for a cas of its own.
TEST_F(WarmFromTest, GetsCopiesThenAsksTheColdSideAgain) {
  request("gets k");
  ReplySlot& slot = client_slot();
  send(*get_, slot);
  answer_retrieval(cold()[0], {});
  answer(warm()[0], "VA 1 f0 t-1\r\nx\r\n");
  EXPECT_FALSE(slot.complete());
  ASSERT_EQ(cold().size(), 2u);
  EXPECT_EQ(cold()[1].bytes, "ms k 1 c T600 ME\r\nx\r\n");
  answer(cold()[1], "HD c5\r\n");
  ASSERT_EQ(cold().size(), 3u);
  EXPECT_EQ(cold()[2].bytes, "gets k\r\n");
  answer_retrieval(cold()[2], {{"k", "x"}});
  ASSERT_TRUE(slot.complete());
  EXPECT_EQ(copy_all(slot.reply()), "VALUE k 0 1\r\nx\r\nEND\r\n");
}

// gat: the copy takes the gat's own expiry, then the gat goes to the
// cold side again (and touches it there).
TEST_F(WarmFromTest, GatCopiesWithItsExpiryThenAsksAgain) {
  request("gat 30 k");
  ReplySlot& slot = client_slot();
  send(*get_, slot);
  answer_retrieval(cold()[0], {});
  EXPECT_EQ(warm()[0].bytes, "mg k f t v\r\n") << "the warm side is not touched";
  answer(warm()[0], "VA 1 f0 t-1\r\nx\r\n");
  ASSERT_EQ(cold().size(), 2u);
  EXPECT_EQ(cold()[1].bytes, "ms k 1 c T30 ME\r\nx\r\n");
  answer(cold()[1], "HD c5\r\n");
  ASSERT_EQ(cold().size(), 3u);
  EXPECT_EQ(cold()[2].bytes, "gat 30 k\r\n");
  answer_retrieval(cold()[2], {{"k", "x"}});
  ASSERT_TRUE(slot.complete());
  EXPECT_EQ(copy_all(slot.reply()), "VALUE k 0 1\r\nx\r\nEND\r\n");
}

TEST_F(WarmFromTest, MetaGetCopiesThenAsksTheColdSideAgain) {
  request("mg k v f c");
  ReplySlot& slot = client_slot();
  send(*key_, slot);
  ASSERT_EQ(cold().size(), 1u);
  answer(cold()[0], "EN\r\n");
  ASSERT_EQ(warm().size(), 1u);
  EXPECT_EQ(warm()[0].bytes, "mg k f t v\r\n");
  answer(warm()[0], "VA 1 f4 t-1\r\nx\r\n");
  ASSERT_EQ(cold().size(), 2u);
  EXPECT_EQ(cold()[1].bytes, "ms k 1 c T600 F4 ME\r\nx\r\n");
  answer(cold()[1], "HD c5\r\n");
  ASSERT_EQ(cold().size(), 3u);
  EXPECT_EQ(cold()[2].bytes, "mg k v f c\r\n");
  answer(cold()[2], "VA 1 f4 c5\r\nx\r\n");
  ASSERT_TRUE(slot.complete());
  EXPECT_EQ(copy_all(slot.reply()), "VA 1 f4 c5\r\nx\r\n");
  EXPECT_EQ(counters_->warm_copies.get(), 1u);
}

// An mg with T, as a binary GAT becomes: the copy takes its expiry.
TEST_F(WarmFromTest, MetaGetWithTouchCopiesWithItsExpiry) {
  request("mg k v f T45");
  ReplySlot& slot = client_slot();
  send(*key_, slot);
  answer(cold()[0], "EN\r\n");
  answer(warm()[0], "VA 1 f0 t-1\r\nx\r\n");
  ASSERT_EQ(cold().size(), 2u);
  EXPECT_EQ(cold()[1].bytes, "ms k 1 c T45 ME\r\nx\r\n");
  answer(cold()[1], "HD c5\r\n");
  answer(cold()[2], "VA 1 f0\r\nx\r\n");
  ASSERT_TRUE(slot.complete());
  EXPECT_EQ(copy_all(slot.reply()), "VA 1 f0\r\nx\r\n");
}

TEST_F(WarmFromTest, WritesGoToTheColdSideOnly) {
  for (const auto& [line, data, reply] :
       {std::tuple<const char*, const char*, const char*>{"set k 0 0 1", "x\r\n", "STORED\r\n"},
        {"delete k", "", "DELETED\r\n"},
        {"touch k 10", "", "TOUCHED\r\n"},
        {"incr k 1", "", "2\r\n"},
        {"md k", "", "HD\r\n"},
        {"mg k N30 v", "", "EN\r\n"}}) {
    request(line, data);
    ReplySlot& slot = client_slot();
    send(*key_, slot);
    ASSERT_FALSE(cold().empty()) << line;
    EXPECT_EQ(cold().back().bytes, std::string(line) + "\r\n" + data);
    answer(cold().back(), reply);
    ASSERT_TRUE(slot.complete()) << line;
    EXPECT_EQ(copy_all(slot.reply()), reply);
  }
  EXPECT_TRUE(warm().empty());
  EXPECT_EQ(counters_->warm_lookups.get(), 0u);
}

// Zone copies with warm_from one of them (mcrouter's two-level caching):
// the first pool is the cold side, read alone and copied to; writes go to
// every copy.
constexpr const char* kWarmZonesConfig = R"(front:
  listen: 127.0.0.1:22121
  write_policy: all
  routes:
    - pools: [local, shared]
      warm_from: shared
      warm_ttl: 10
local:
  servers: [127.0.0.1:21001:1]
shared:
  servers: [127.0.0.1:21002:1]
)";

class WarmFromZonesTest : public WorkRouteTest {
 protected:
  WarmFromZonesTest() {
    pools_.try_emplace("local");
    pools_.try_emplace("shared");
    conf::LoadResult r = conf::parse_config(kWarmZonesConfig, "zones.yml");
    for (const conf::ConfigError& e : r.errors) ADD_FAILURE() << e.to_string();
    if (!r.config) return;
    config_ = *r.config->find_pool("front");
    routing_ = std::make_unique<RoutingPool>(
        config_, [this](const std::string& name) { return pools_.at(name).routes(); },
        [this](const std::string&) { return counters_; }, &life_);
    key_ = routing_->key_route();
    get_ = routing_->multi_get_route();
  }
  std::deque<SentOp>& local() { return pools_.at("local").ops(); }
  std::deque<SentOp>& shared() { return pools_.at("shared").ops(); }

  conf::PoolConfig config_;
  std::map<std::string, FakePool> pools_;
  std::shared_ptr<RouteStats> counters_ = std::make_shared<RouteStats>();
  std::unique_ptr<RoutingPool> routing_;
  std::unique_ptr<SingleKeyRoute> key_;
  std::unique_ptr<Route> get_;
};

TEST_F(WarmFromZonesTest, ReadsAndCopiesGoToTheFirstPoolWritesToEvery) {
  request("get k");
  ReplySlot& read = client_slot();
  send(*get_, read);
  ASSERT_EQ(local().size(), 1u);
  EXPECT_TRUE(shared().empty()) << "the cold side alone";
  answer_retrieval(local()[0], {});
  ASSERT_EQ(shared().size(), 1u);
  EXPECT_EQ(shared()[0].bytes, "mg k f t v\r\n");
  answer(shared()[0], "VA 1 f0 t-1\r\nx\r\n");
  ASSERT_TRUE(read.complete());
  EXPECT_EQ(copy_all(read.reply()), "VALUE k 0 1\r\nx\r\nEND\r\n");
  ASSERT_EQ(local().size(), 2u);
  EXPECT_EQ(local()[1].bytes, "ms k 1 c T10 ME\r\nx\r\n");
  EXPECT_EQ(shared().size(), 1u) << "no copy to the warm side";
  answer(local()[1], "HD c1\r\n");

  request("set k 0 0 1", "y\r\n");
  ReplySlot& write = client_slot();
  send(*key_, write);
  ASSERT_EQ(local().size(), 3u);
  ASSERT_EQ(shared().size(), 2u);
  EXPECT_EQ(local()[2].bytes, "set k 0 0 1\r\ny\r\n");
  EXPECT_EQ(shared()[1].bytes, "set k 0 0 1\r\ny\r\n");
  answer(local()[2], "STORED\r\n");
  answer(shared()[1], "STORED\r\n");
  ASSERT_TRUE(write.complete());
  EXPECT_EQ(copy_all(write.reply()), "STORED\r\n");
}

}  // namespace
}  // namespace memshard::proxy::testing_fakes
