// A routing pool's routes (routes/prefix_route.h, routes/grouped_get.h,
// routes/route_count.h) over fake pools: each key goes to the route of the
// longest prefix it starts with, or to the default route; a key no route
// takes is a CLIENT_ERROR; a multi-get spanning routes is split per route
// and merged in the client's key order; each route counts its requests,
// hits, misses and errors.
#include "proxy/routes/prefix_route.h"

#include <gtest/gtest.h>

#include <memory>
#include <string>
#include <vector>

#include "proxy/routes/route_count.h"
#include "tests/proxy/routes/route_test_util.h"

namespace memshard::proxy::testing_fakes {
namespace {

// The routes, in the order the config lists them: the short prefix before
// the longer one it is a prefix of, so that the first match in list order
// would be the wrong one.
enum RouteIndex : size_t { kShort = 0, kSess = 1, kFeed = 2, kMain = 3 };

class PrefixRouteTest : public WorkRouteTest {
 protected:
  PrefixRouteTest() {
    FakePool* pools[] = {&short_, &sess_, &feed_, &main_};
    for (FakePool* p : pools) {
      entries_.push_back(std::make_unique<PoolEntry>(p->routes(), PoolEntry::Part::key));
      get_entries_.push_back(std::make_unique<PoolEntry>(p->routes(), PoolEntry::Part::multi_get));
    }
    for (size_t r = 0; r < 4; ++r) {
      targets_.push_back(
          RouteTarget{entries_[r].get(), get_entries_[r].get(), nullptr, &counters_[r]});
    }
  }
  // What the client connection does with a complete slot's counters.
  static void count(ReplySlot& slot) {
    if (slot.route_stats != nullptr) count_reply(*slot.route_stats, slot);
  }
  // Every pool but `pool` got nothing.
  void expect_only(const FakePool& pool) {
    for (const FakePool* p : {&short_, &sess_, &feed_, &main_}) {
      if (p != &pool) {
        EXPECT_TRUE(p->server.box.ops.empty());
      }
    }
  }

  FakePool short_, sess_, feed_, main_;
  std::vector<std::unique_ptr<PoolEntry>> entries_, get_entries_;
  RouteStats counters_[4];
  std::vector<RouteTarget> targets_;
  PrefixTable table_{{"s", "sess:", "feed:", ""}, kMain};
  PrefixTable no_default_{{"s", "sess:", "feed:"}, PrefixTable::npos};
  PrefixKeyRoute key_{table_, targets_};
  PrefixGetRoute get_{table_, targets_, &life_};
  PrefixKeyRoute strict_key_{no_default_, targets_};
  PrefixGetRoute strict_get_{no_default_, targets_, &life_};
};

TEST(PrefixTable, TheLongestPrefixWinsWhateverTheOrderOfTheRoutes) {
  const PrefixTable t({"s", "sess:", "feed:", "", "sess:admin:"}, 3);
  EXPECT_EQ(t.find("sess:1"), 1u);
  EXPECT_EQ(t.find("sess:admin:1"), 4u);
  EXPECT_EQ(t.find("sess:admin"), 1u) << "a key shorter than a prefix does not take it";
  EXPECT_EQ(t.find("sx"), 0u);
  EXPECT_EQ(t.find("s"), 0u) << "a key equal to a prefix takes it";
  EXPECT_EQ(t.find("feed:9"), 2u);
  EXPECT_EQ(t.find("feed"), 3u);
  EXPECT_EQ(t.find("user:1"), 3u) << "no prefix matches: the default";
  EXPECT_EQ(t.find("Sess:1"), 3u) << "prefixes match bytes as they are";
  const PrefixTable strict({"sess:", "feed:"}, PrefixTable::npos);
  EXPECT_EQ(strict.find("sess:1"), 0u);
  EXPECT_EQ(strict.find("user:1"), PrefixTable::npos);
}

TEST_F(PrefixRouteTest, AKeyGoesToItsLongestPrefixsPoolAsTheClientWroteIt) {
  request("set sess:1 0 0 1", "x\r\n", "get next\r\n");
  ReplySlot& slot = client_slot();
  send(key_, slot);
  ASSERT_EQ(sess_.ops().size(), 1u) << "sess: is longer than s";
  expect_only(sess_);
  EXPECT_EQ(sess_.ops()[0].bytes, "set sess:1 0 0 1\r\nx\r\n");
  EXPECT_EQ(input(), "get next\r\n") << "the client's next request untouched";
  EXPECT_EQ(slot.route_stats, &counters_[kSess]);
  EXPECT_EQ(counters_[kSess].requests.get(), 1u);
  EXPECT_EQ(counters_[kShort].requests.get(), 0u);
  EXPECT_EQ(sess_.stats.requests.get(), 1u) << "counted as the target pool's request";
  answer(sess_.ops()[0], "STORED\r\n");
  ASSERT_TRUE(slot.complete());
  EXPECT_EQ(copy_all(slot.reply()), "STORED\r\n");

  request("ms sx 1 T0", "y\r\n");
  ReplySlot& meta = client_slot();
  send(key_, meta);
  ASSERT_EQ(short_.ops().size(), 1u) << "meta commands route alike";
  EXPECT_EQ(short_.ops()[0].bytes, "ms sx 1 T0\r\ny\r\n");
  EXPECT_EQ(counters_[kShort].requests.get(), 1u);
  answer(short_.ops()[0], "HD\r\n");
  EXPECT_EQ(copy_all(meta.reply()), "HD\r\n");
}

TEST_F(PrefixRouteTest, AKeyNoPrefixTakesGoesToTheDefaultRoute) {
  request("delete user:1");
  ReplySlot& slot = client_slot();
  send(key_, slot);
  ASSERT_EQ(main_.ops().size(), 1u);
  expect_only(main_);
  EXPECT_EQ(main_.ops()[0].bytes, "delete user:1\r\n");
  EXPECT_EQ(counters_[kMain].requests.get(), 1u);
  answer(main_.ops()[0], "NOT_FOUND\r\n");
  EXPECT_EQ(copy_all(slot.reply()), "NOT_FOUND\r\n");
}

TEST_F(PrefixRouteTest, AKeyNoRouteTakesIsAClientErrorAndTheConnectionGoesOn) {
  request("set user:1 0 0 1", "x\r\n", "get next\r\n");
  ReplySlot& slot = client_slot();
  send(strict_key_, slot);
  ASSERT_TRUE(slot.complete()) << "answered at once";
  EXPECT_EQ(copy_all(slot.reply()), "CLIENT_ERROR no route for this key\r\n");
  EXPECT_EQ(slot.status(), proto::ReplyStatus::client_error);
  EXPECT_EQ(input(), "get next\r\n") << "line and data consumed, nothing more";
  EXPECT_EQ(worker_stats_.client_errors.get(), 1u);
  expect_only(main_);
  EXPECT_TRUE(main_.ops().empty());
  for (const RouteStats& c : counters_) EXPECT_EQ(c.requests.get(), 0u);

  request("set user:1 0 0 1 noreply", "x\r\n", "get next\r\n");
  ReplySlot& quiet = client_slot();
  send(strict_key_, quiet);
  ASSERT_TRUE(quiet.complete());
  EXPECT_EQ(copy_all(quiet.reply()), "") << "noreply: silent, as memcached is";
  EXPECT_EQ(quiet.status(), proto::ReplyStatus::client_error);
  EXPECT_EQ(input(), "get next\r\n");
  EXPECT_EQ(worker_stats_.client_errors.get(), 2u);
}

TEST_F(PrefixRouteTest, AMultiGetWithAKeyNoRouteTakesFailsWhole) {
  request("get sess:1 user:1 feed:1", {}, "get next\r\n");
  ReplySlot& slot = client_slot();
  send(strict_get_, slot);
  ASSERT_TRUE(slot.complete());
  EXPECT_EQ(copy_all(slot.reply()), "CLIENT_ERROR no route for this key\r\n");
  EXPECT_EQ(input(), "get next\r\n");
  EXPECT_TRUE(sess_.ops().empty()) << "not even the keys that have a route";
  EXPECT_TRUE(feed_.ops().empty());
  EXPECT_EQ(counters_[kSess].requests.get(), 0u);
}

TEST_F(PrefixRouteTest, AMultiGetSpanningRoutesIsSplitPerRouteAndMergedInTheClientsOrder) {
  request("get feed:1 sess:1 user:1 feed:2 sess:2 sx", {}, "get next\r\n");
  ReplySlot& slot = client_slot();
  send(get_, slot);
  EXPECT_EQ(input(), "get next\r\n");
  ASSERT_EQ(sess_.ops().size(), 1u) << "one retrieval per route";
  ASSERT_EQ(feed_.ops().size(), 1u);
  ASSERT_EQ(main_.ops().size(), 1u);
  ASSERT_EQ(short_.ops().size(), 1u);
  EXPECT_EQ(sess_.ops()[0].keys, (std::vector<std::string>{"sess:1", "sess:2"}));
  EXPECT_EQ(feed_.ops()[0].keys, (std::vector<std::string>{"feed:1", "feed:2"}));
  EXPECT_EQ(main_.ops()[0].keys, (std::vector<std::string>{"user:1"}));
  EXPECT_EQ(short_.ops()[0].keys, (std::vector<std::string>{"sx"}));
  // The routes answer in the reverse of the client's order.
  answer_retrieval(short_.ops()[0], {{"sx", "X"}});
  answer_retrieval(main_.ops()[0], {});
  answer_retrieval(sess_.ops()[0], {{"sess:2", "S2"}, {"sess:1", "S1"}});
  EXPECT_FALSE(slot.complete()) << "the feed: route has not answered";
  answer_retrieval(feed_.ops()[0], {{"feed:2", "F2"}});
  ASSERT_TRUE(slot.complete());
  EXPECT_EQ(owner_.told, 1);
  EXPECT_EQ(copy_all(slot.reply()),
            "VALUE sess:1 0 2\r\nS1\r\nVALUE feed:2 0 2\r\nF2\r\nVALUE sess:2 0 2\r\nS2\r\n"
            "VALUE sx 0 1\r\nX\r\nEND\r\n");
  // Each route counted once, with its own keys' hits and misses; the
  // client's slot carries no route (a route's counters would count all the
  // keys as its own again).
  EXPECT_EQ(slot.route_stats, nullptr);
  for (size_t r = 0; r < 4; ++r) EXPECT_EQ(counters_[r].requests.get(), 1u) << r;
  EXPECT_EQ(counters_[kSess].hits.get(), 2u);
  EXPECT_EQ(counters_[kSess].misses.get(), 0u);
  EXPECT_EQ(counters_[kFeed].hits.get(), 1u);
  EXPECT_EQ(counters_[kFeed].misses.get(), 1u);
  EXPECT_EQ(counters_[kMain].hits.get(), 0u);
  EXPECT_EQ(counters_[kMain].misses.get(), 1u);
  EXPECT_EQ(counters_[kShort].hits.get(), 1u);
  for (const RouteStats& c : counters_) EXPECT_EQ(c.errors.get(), 0u);
}

TEST_F(PrefixRouteTest, ARouteThatFailsInASplitMultiGetMakesItsKeysMissesAndCountsAnError) {
  request("get sess:1 feed:1");
  ReplySlot& slot = client_slot();
  send(get_, slot);
  fail_retrieval(sess_.ops()[0], "SERVER_ERROR backend timeout");
  answer_retrieval(feed_.ops()[0], {{"feed:1", "F"}});
  ASSERT_TRUE(slot.complete());
  EXPECT_EQ(copy_all(slot.reply()), "VALUE feed:1 0 1\r\nF\r\nEND\r\n");
  EXPECT_EQ(counters_[kSess].errors.get(), 1u);
  EXPECT_EQ(counters_[kSess].misses.get(), 0u);
  EXPECT_EQ(counters_[kFeed].hits.get(), 1u);
  EXPECT_EQ(counters_[kFeed].errors.get(), 0u);

  request("get sess:1 feed:1");
  ReplySlot& both = client_slot();
  send(get_, both);
  fail_retrieval(sess_.ops()[1], "SERVER_ERROR backend timeout");
  fail_retrieval(feed_.ops()[1], "SERVER_ERROR connection lost");
  ASSERT_TRUE(both.complete());
  EXPECT_EQ(copy_all(both.reply()), "SERVER_ERROR backend timeout\r\n")
      << "every route failed: the client gets the error";
}

TEST_F(PrefixRouteTest, AMultiGetOnOneRouteGoesWholeAndIsCountedWhenComplete) {
  request("gets sess:1 sess:2", {}, "get next\r\n");
  ReplySlot& slot = client_slot();
  send(get_, slot);
  ASSERT_EQ(sess_.ops().size(), 1u);
  expect_only(sess_);
  EXPECT_EQ(sess_.ops()[0].keys, (std::vector<std::string>{"sess:1", "sess:2"}));
  EXPECT_EQ(sess_.ops()[0].verb, "gets");
  EXPECT_EQ(slots_.acquired, 0) << "no split: the client's own slot went to the pool";
  EXPECT_EQ(slot.route_stats, &counters_[kSess]);
  EXPECT_EQ(input(), "get next\r\n");
  answer_retrieval(sess_.ops()[0], {{"sess:2", "B"}});
  ASSERT_TRUE(slot.complete());
  EXPECT_EQ(copy_all(slot.reply()), "VALUE sess:2 0 1\r\nB\r\nEND\r\n");
  count(slot);
  EXPECT_EQ(counters_[kSess].requests.get(), 1u);
  EXPECT_EQ(counters_[kSess].hits.get(), 1u);
  EXPECT_EQ(counters_[kSess].misses.get(), 1u);
}

TEST_F(PrefixRouteTest, EachRouteCountsItsHitsMissesAndErrors) {
  const char* replies[] = {"VA 1\r\nx\r\n", "EN\r\n", "SERVER_ERROR out of memory\r\n",
                           "VA 1\r\ny\r\n"};
  for (const char* reply : replies) {
    request("mg feed:1 v");
    ReplySlot& slot = client_slot();
    send(key_, slot);
    answer(feed_.ops().back(), reply);
    ASSERT_TRUE(slot.complete());
    count(slot);
  }
  EXPECT_EQ(counters_[kFeed].requests.get(), 4u);
  EXPECT_EQ(counters_[kFeed].hits.get(), 2u);
  EXPECT_EQ(counters_[kFeed].misses.get(), 1u);
  EXPECT_EQ(counters_[kFeed].errors.get(), 1u);
  EXPECT_EQ(counters_[kMain].requests.get(), 0u);
  EXPECT_EQ(feed_.stats.requests.get(), 4u);
}

TEST_F(PrefixRouteTest, InvalidateDeletesTheKeyInItsRoutesPoolOnly) {
  request("set feed:1 0 0 1", "x\r\n");
  ReplySlot& slot = client_slot();
  RouteRequest req = route_request();
  key_.invalidate(req, slot);
  ASSERT_EQ(feed_.ops().size(), 1u);
  expect_only(feed_);
  EXPECT_EQ(feed_.ops()[0].bytes, "md feed:1 q\r\nmn\r\n");
  EXPECT_EQ(input(), "set feed:1 0 0 1\r\nx\r\n") << "invalidate does not touch the request";
  answer(feed_.ops()[0], "MN\r\n");

  request("set user:1 0 0 1", "x\r\n");
  ReplySlot& none = client_slot();
  RouteRequest unrouted = route_request();
  strict_key_.invalidate(unrouted, none);
  EXPECT_TRUE(main_.ops().empty()) << "no route: nothing to delete";
  EXPECT_EQ(none.outstanding(), 0u);
}

}  // namespace
}  // namespace memshard::proxy::testing_fakes
