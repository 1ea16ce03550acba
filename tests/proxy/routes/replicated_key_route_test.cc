// ReplicatedKeyRoute (routes/replicated_key_route.h): single-key requests
// sorted by what they do: reads to the first copy, writes to every copy,
// adds and cas decided by the first.
#include "proxy/routes/replicated_key_route.h"

#include <gtest/gtest.h>

#include "tests/proxy/routes/route_test_util.h"

namespace memshard::proxy::testing_fakes {
namespace {

class ReplicatedKeyRouteTest : public RouteTest {
 protected:
  ReplicatedKeyRouteTest() {
    first_.where = {{"k", 0}};
    second_.where = {{"k", 1}};
  }
  ~ReplicatedKeyRouteTest() override { EXPECT_EQ(slots_.outstanding, 0); }
  ReplySlot& send(std::string_view line, std::string_view data = {}) {
    request(line, data);
    ReplySlot& slot = client_slot();
    RouteRequest req = route_request();
    route_.send(req, slot);
    return slot;
  }
  std::deque<SentOp>& ops(int server) { return servers_[server].box.ops; }

  FakePlacement first_{{&servers_[0], &servers_[1], &servers_[2]}};
  FakePlacement second_{{&servers_[0], &servers_[1], &servers_[2]}};
  KeyRoute key0_{first_}, key1_{second_};
  RouteLife life_;
  ReplicatedKeyRoute route_{{&key0_, &key1_}, ReplyPolicy::first, false, &life_};
};

TEST_F(ReplicatedKeyRouteTest, ReadGoesToTheFirstCopyOnly) {
  ReplySlot& slot = send("mg k v");
  ASSERT_EQ(ops(0).size(), 1u);
  EXPECT_TRUE(ops(1).empty());
  EXPECT_EQ(life_.held_requests, 1u) << "a held request counts itself";
  answer(ops(0)[0], "VA 1\r\nx\r\n");
  EXPECT_EQ(copy_all(slot.reply()), "VA 1\r\nx\r\n");
  EXPECT_EQ(life_.held_requests, 0u);
}

TEST_F(ReplicatedKeyRouteTest, WritesGoToEveryCopy) {
  for (const auto& [line, data] :
       std::vector<std::pair<std::string, std::string>>{{"set k 0 0 1", "x\r\n"},
                                                        {"delete k", ""},
                                                        {"incr k 1", ""},
                                                        {"touch k 10", ""},
                                                        {"mg k T10 v", ""},
                                                        {"ms k 1", "x\r\n"},
                                                        {"md k", ""},
                                                        {"ma k", ""}}) {
    for (FakeServer& s : servers_) s.box.ops.clear();
    ReplySlot& slot = send(line, data);
    ASSERT_EQ(ops(0).size(), 1u) << line;
    ASSERT_EQ(ops(1).size(), 1u) << line;
    EXPECT_EQ(ops(1)[0].bytes, line + "\r\n" + data);
    answer(ops(1)[0], "SERVER_ERROR backend timeout\r\n");
    answer(ops(0)[0], "HD\r\n");
    EXPECT_EQ(copy_all(slot.reply()), "HD\r\n") << line << ": `first` takes the copy that answered";
  }
  EXPECT_EQ(pool_stats_.replica_writes.get(), 8u);
  EXPECT_EQ(pool_stats_.replica_write_failures.get(), 8u);
}

TEST_F(ReplicatedKeyRouteTest, AddAndCasAreDecidedByTheFirstCopy) {
  for (const char* line : {"add k 0 0 1", "cas k 0 0 1 5", "ms k 1 ME", "ms k 1 C5"}) {
    for (FakeServer& s : servers_) s.box.ops.clear();
    ReplySlot& slot = send(line, "x\r\n");
    ASSERT_EQ(ops(0).size(), 1u) << line;
    EXPECT_TRUE(ops(1).empty()) << line;
    answer(ops(0)[0], "NS\r\n");
    EXPECT_TRUE(slot.complete()) << line;
    EXPECT_TRUE(ops(1).empty()) << line;
  }
}

TEST_F(ReplicatedKeyRouteTest, TooLargeSetIsInvalidatedOnEveryCopy) {
  request("set k 0 0 5000000", {}, {}, proto::Limits{1024 * 1024});
  ASSERT_TRUE(request_.invalidate_key);
  ReplySlot& slot = client_slot();
  evbuffer_add(slot.reply(), "SERVER_ERROR object too large for cache\r\n", 41);
  RouteRequest req = route_request();
  route_.invalidate(req, slot);
  ASSERT_EQ(ops(0).size(), 1u);
  ASSERT_EQ(ops(1).size(), 1u);
  EXPECT_EQ(ops(1)[0].bytes, "md k q\r\nmn\r\n");
  EXPECT_FALSE(slot.complete());
  answer(ops(0)[0], "MN\r\n");
  answer(ops(1)[0], "MN\r\n");
  EXPECT_TRUE(slot.complete());
}

}  // namespace
}  // namespace memshard::proxy::testing_fakes
