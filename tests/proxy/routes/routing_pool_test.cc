// What a routing pool is built into (routes/routing_pool.h, pool_entry.h)
// from a config parsed by conf::parse_config, over fake pools (one fake
// server each): per route its pool, or its zone copies through the
// replicated routes, its shadow and its counters; the key and multi-get
// routes that pick a route by prefix; and flush_all reaching every pool
// behind the listener once, shadows included.
#include "proxy/routes/routing_pool.h"

#include <gtest/gtest.h>

#include <map>
#include <memory>
#include <string>
#include <vector>

#include "conf/config.h"
#include "tests/proxy/routes/route_test_util.h"

namespace memshard::proxy::testing_fakes {
namespace {

constexpr const char* kConfig = R"(front:
  listen: 127.0.0.1:22121
  routes:
    - prefix: "sess:"
      pool: sessions
    - prefix: "feed:"
      pool: feeds
      shadow: feeds_next
    - prefix: "user:"
      pools: [zone_a, zone_b]
    - prefix: "s"
      pool: sessions
    - pool: main
main:
  servers: [127.0.0.1:21001:1]
sessions:
  servers: [127.0.0.1:21002:1]
feeds:
  servers: [127.0.0.1:21003:1]
feeds_next:
  servers: [127.0.0.1:21004:1]
zone_a:
  servers: [127.0.0.1:21005:1]
zone_b:
  servers: [127.0.0.1:21006:1]
)";

class RoutingPoolTest : public WorkRouteTest {
 protected:
  RoutingPoolTest() {
    conf::LoadResult r = conf::parse_config(kConfig, "routes.yml");
    for (const conf::ConfigError& e : r.errors) ADD_FAILURE() << e.to_string();
    if (!r.config) return;
    config_ = *r.config->find_pool("front");
    for (const char* name : {"main", "sessions", "feeds", "feeds_next", "zone_a", "zone_b"}) {
      pools_[name] = std::make_unique<FakePool>();
    }
    routing_ = std::make_unique<RoutingPool>(
        config_,
        [this](const std::string& name) {
          EXPECT_TRUE(pools_.contains(name)) << name;
          return pools_.at(name)->routes();
        },
        [this](const std::string& name) {
          counter_names_.push_back(name);
          auto& c = counters_[name];
          if (!c) c = std::make_shared<RouteStats>();
          return c;
        },
        &life_);
    key_ = routing_->key_route();
    get_ = routing_->multi_get_route();
    flush_ = routing_->flush_route();
  }
  std::deque<SentOp>& ops(const std::string& pool) { return pools_.at(pool)->ops(); }
  // Requests each pool was sent, by name: only the pools that were sent any.
  std::map<std::string, size_t> sent() {
    std::map<std::string, size_t> m;
    for (const auto& [name, pool] : pools_) {
      if (!pool->ops().empty()) m[name] = pool->ops().size();
    }
    return m;
  }

  conf::PoolConfig config_;
  std::map<std::string, std::unique_ptr<FakePool>> pools_;
  std::map<std::string, std::shared_ptr<RouteStats>> counters_;
  std::vector<std::string> counter_names_;
  std::unique_ptr<RoutingPool> routing_;
  std::unique_ptr<SingleKeyRoute> key_;
  std::unique_ptr<Route> get_, flush_;
};

TEST_F(RoutingPoolTest, EachRouteHasTheCountersOfItsName) {
  EXPECT_EQ(counter_names_,
            (std::vector<std::string>{"sess:", "feed:", "user:", "s", "(default)"}));
}

TEST_F(RoutingPoolTest, EachKeyGoesToItsRoutesPoolThroughItsEntry) {
  const std::pair<const char*, const char*> cases[] = {
      {"sess:1", "sessions"}, {"sx", "sessions"}, {"feed:1", "feeds"}, {"other", "main"}};
  for (const auto& [key, pool] : cases) {
    request(std::string("delete ") + key);
    ReplySlot& slot = client_slot();
    send(*key_, slot);
    ASSERT_FALSE(ops(pool).empty()) << key;
    EXPECT_EQ(ops(pool).back().bytes, std::string("delete ") + key + "\r\n");
    answer(ops(pool).back(), "DELETED\r\n");
    ASSERT_TRUE(slot.complete()) << key;
    EXPECT_EQ(copy_all(slot.reply()), "DELETED\r\n");
  }
  EXPECT_EQ(sent(), (std::map<std::string, size_t>{
                        {"sessions", 2}, {"feeds", 1}, {"feeds_next", 1}, {"main", 1}}))
      << "feed:1 copied to its shadow, nothing else anywhere else";
  answer(ops("feeds_next")[0], "DELETED\r\n");
  EXPECT_EQ(counters_["sess:"]->requests.get(), 1u);
  EXPECT_EQ(counters_["s"]->requests.get(), 1u);
  EXPECT_EQ(counters_["feed:"]->requests.get(), 1u);
  EXPECT_EQ(counters_["feed:"]->shadow_sent.get(), 1u);
  EXPECT_EQ(counters_["(default)"]->requests.get(), 1u);
  EXPECT_EQ(pools_["sessions"]->stats.requests.get(), 2u) << "counted as the target pool's";
  EXPECT_EQ(pools_["feeds_next"]->stats.requests.get(), 1u);
}

TEST_F(RoutingPoolTest, ZoneCopiesTakeEveryWriteAndReadFromTheFirstZone) {
  request("set user:1 0 0 1", "x\r\n");
  ReplySlot& write = client_slot();
  send(*key_, write);
  ASSERT_EQ(ops("zone_a").size(), 1u);
  ASSERT_EQ(ops("zone_b").size(), 1u);
  EXPECT_EQ(ops("zone_a")[0].bytes, "set user:1 0 0 1\r\nx\r\n");
  EXPECT_EQ(ops("zone_b")[0].bytes, "set user:1 0 0 1\r\nx\r\n");
  answer(ops("zone_b")[0], "STORED\r\n");
  answer(ops("zone_a")[0], "STORED\r\n");
  ASSERT_TRUE(write.complete());
  EXPECT_EQ(copy_all(write.reply()), "STORED\r\n");

  request("get user:1");
  ReplySlot& read = client_slot();
  send(*get_, read);
  ASSERT_EQ(ops("zone_a").size(), 2u) << "the local zone first";
  EXPECT_EQ(ops("zone_b").size(), 1u);
  fail_retrieval(ops("zone_a")[1], "SERVER_ERROR backend timeout");
  ASSERT_EQ(ops("zone_b").size(), 2u) << "the next zone when the first fails";
  answer(ops("zone_b")[1], "VA 1 f0\r\nx\r\n");
  ASSERT_TRUE(read.complete());
  EXPECT_EQ(copy_all(read.reply()), "VALUE user:1 0 1\r\nx\r\nEND\r\n");
  EXPECT_EQ(counters_["user:"]->requests.get(), 2u);
}

TEST_F(RoutingPoolTest, AMultiGetIsSplitByRoute) {
  request("get other sess:1 user:1 feed:1");
  ReplySlot& slot = client_slot();
  send(*get_, slot);
  ASSERT_EQ(ops("main").size(), 1u);
  ASSERT_EQ(ops("sessions").size(), 1u);
  ASSERT_EQ(ops("zone_a").size(), 1u);
  ASSERT_EQ(ops("feeds").size(), 1u);
  ASSERT_EQ(ops("feeds_next").size(), 1u);
  EXPECT_TRUE(ops("zone_b").empty());
  answer_retrieval(ops("feeds_next")[0], {{"feed:1", "N"}});
  answer_retrieval(ops("feeds")[0], {{"feed:1", "F"}});
  answer_retrieval(ops("zone_a")[0], {{"user:1", "U"}});
  answer_retrieval(ops("sessions")[0], {});
  answer_retrieval(ops("main")[0], {{"other", "O"}});
  ASSERT_TRUE(slot.complete());
  EXPECT_EQ(copy_all(slot.reply()),
            "VALUE other 0 1\r\nO\r\nVALUE user:1 0 1\r\nU\r\nVALUE feed:1 0 1\r\nF\r\nEND\r\n");
}

TEST_F(RoutingPoolTest, FlushAllReachesEveryPoolBehindTheListenerOnce) {
  request("flush_all", {}, "get next\r\n");
  ReplySlot& slot = client_slot();
  send(*flush_, slot);
  EXPECT_EQ(input(), "get next\r\n");
  EXPECT_EQ(sent(), (std::map<std::string, size_t>{{"main", 1},
                                                   {"sessions", 1},
                                                   {"feeds", 1},
                                                   {"feeds_next", 1},
                                                   {"zone_a", 1},
                                                   {"zone_b", 1}}))
      << "every pool, the shadow included, sessions once though two routes name it";
  for (auto& [name, pool] : pools_) {
    ASSERT_EQ(pool->ops().size(), 1u) << name;
    EXPECT_EQ(pool->ops()[0].bytes, "flush_all\r\n") << name;
    answer(pool->ops()[0], "OK\r\n");
  }
  ASSERT_TRUE(slot.complete());
  EXPECT_EQ(owner_.told, 1);
  EXPECT_EQ(copy_all(slot.reply()), "OK\r\n");

  request("flush_all");
  ReplySlot& failed = client_slot();
  send(*flush_, failed);
  for (auto& [name, pool] : pools_) {
    ASSERT_EQ(pool->ops().size(), 2u) << name;
    answer(pool->ops()[1], name == "feeds_next" ? "SERVER_ERROR out of memory\r\n" : "OK\r\n");
  }
  ASSERT_TRUE(failed.complete());
  EXPECT_EQ(copy_all(failed.reply()), "SERVER_ERROR out of memory\r\n")
      << "OK only when every pool said OK";
}

}  // namespace
}  // namespace memshard::proxy::testing_fakes
