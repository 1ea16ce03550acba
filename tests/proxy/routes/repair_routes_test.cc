// How routes keep a server's repair log (proxy/backends/repair_log.h):
// writes a server missed are recorded for it, and a read of a recorded key
// deletes it there first, on the same outbox, so the server answers a miss
// rather than a value a later write replaced.
#include <gtest/gtest.h>

#include "proxy/backends/repair_log.h"
#include "proxy/routes/broadcast_route.h"
#include "proxy/routes/key_route.h"
#include "proxy/routes/split_route.h"
#include "tests/proxy/routes/route_test_util.h"

namespace memshard::proxy::testing_fakes {
namespace {

class RepairRoutesTest : public RouteTest {
 protected:
  RepairRoutesTest() {
    placement_.where = {{"a", 0}, {"k", 1}, {"z", 2}};
    for (size_t i = 0; i < servers_.size(); ++i) servers_[i].log = &logs_[i];
  }
  template <typename R>
  void send(R& route, std::string_view line, std::string_view data = {}) {
    request(line, data);
    RouteRequest req = route_request();
    route.send(req, client_slot());
  }
  RepairLog logs_[3] = {RepairLog("p", "s0"), RepairLog("p", "s1"), RepairLog("p", "s2")};
  KeyRoute key_{placement_};
  SplitRoute split_{placement_};
};

TEST_F(RepairRoutesTest, AGetOfARecordedKeyDeletesItThereFirst) {
  logs_[1].record("k");
  send(split_, "get k a");
  ASSERT_EQ(servers_[1].box.ops.size(), 2u);
  EXPECT_EQ(servers_[1].box.ops[0].bytes, "md k q\r\nmn\r\n");
  EXPECT_EQ(servers_[1].box.ops[0].op.mode, ReplyMode::quiet_ignore)
      << "the delete leaves the read's slot to the read";
  EXPECT_TRUE(servers_[1].box.ops[1].via_retrieval);
  EXPECT_EQ(servers_[1].box.ops[1].keys, std::vector<std::string>{"k"});
  ASSERT_EQ(servers_[0].box.ops.size(), 1u) << "a server with nothing recorded gets the read alone";
  EXPECT_TRUE(servers_[0].box.ops[0].via_retrieval);
}

TEST_F(RepairRoutesTest, AnMgOfARecordedKeyDeletesItThereFirst) {
  logs_[1].record("k");
  send(key_, "mg k v");
  ASSERT_EQ(servers_[1].box.ops.size(), 2u);
  EXPECT_EQ(servers_[1].box.ops[0].bytes, "md k q\r\nmn\r\n");
  EXPECT_EQ(servers_[1].box.ops[1].bytes, "mg k v\r\n");
}

TEST_F(RepairRoutesTest, AReadOfAKeyNotRecordedGoesAlone) {
  logs_[1].record("other");
  send(key_, "mg k v");
  ASSERT_EQ(servers_[1].box.ops.size(), 1u);
  EXPECT_EQ(servers_[1].box.ops[0].bytes, "mg k v\r\n");
}

TEST_F(RepairRoutesTest, AWriteTheServerRefusesIsRecorded) {
  servers_[1].down = true;
  send(key_, "set k 0 0 1", "x\r\n");
  EXPECT_TRUE(logs_[1].gates("k"));
  EXPECT_FALSE(logs_[0].gates("k"));
}

TEST_F(RepairRoutesTest, AReadTheServerRefusesRecordsNothing) {
  servers_[1].down = true;
  send(key_, "mg k v");
  EXPECT_TRUE(logs_[1].clear());
}

TEST_F(RepairRoutesTest, AWriteSentCarriesItsKeyForTheBackendToRecordIfItFails) {
  send(key_, "set k 0 0 1", "x\r\n");
  ASSERT_EQ(servers_[1].box.ops.size(), 1u);
  const BackendOp& op = servers_[1].box.ops[0].op;
  EXPECT_TRUE(op.writes);
  EXPECT_EQ(op.key, "k");
  EXPECT_EQ(op.repair_seq, 0u) << "nothing recorded: nothing for its success to forget";
  send(key_, "mg k v");
  EXPECT_FALSE(servers_[1].box.ops[1].op.writes);
}

TEST_F(RepairRoutesTest, AReplacingWriteToARecordedServerCarriesTheSequence) {
  logs_[1].record("k");
  send(key_, "set k 0 0 1", "x\r\n");
  ASSERT_EQ(servers_[1].box.ops.size(), 1u) << "a write is not gated";
  EXPECT_EQ(servers_[1].box.ops[0].op.repair_seq, logs_[1].sequence());
  send(key_, "append k 0 0 1", "y\r\n");
  EXPECT_EQ(servers_[1].box.ops[1].op.repair_seq, 0u) << "an append keeps the old value's bytes";
}

TEST_F(RepairRoutesTest, AWriteThatLandsElsewhereIsRecordedForItsHomeWithTheGuest) {
  placement_.where["k"] = 2;  // its home, server 1, is out of the ring
  placement_.homes = {{"k", 1}};
  send(key_, "set k 0 0 1", "x\r\n");
  ASSERT_EQ(servers_[2].box.ops.size(), 1u);
  EXPECT_TRUE(logs_[1].gates("k"));
  EXPECT_FALSE(logs_[2].gates("k")) << "the guest serves the key meanwhile";
  logs_[1].release_fallbacks();
  EXPECT_TRUE(logs_[2].gates("k")) << "once the home is back the guest copy is recorded";
}

TEST_F(RepairRoutesTest, AWriteWithNoLiveServerIsRecordedForItsHome) {
  placement_.where.erase("k");
  placement_.homes = {{"k", 1}};
  send(key_, "delete k");
  EXPECT_TRUE(logs_[1].gates("k"));
}

TEST_F(RepairRoutesTest, AGatTheServerRefusesIsRecordedForEachKey) {
  servers_[1].down = true;
  placement_.where["k2"] = 1;
  send(split_, "gat 100 k k2 a");
  EXPECT_TRUE(logs_[1].gates("k"));
  EXPECT_TRUE(logs_[1].gates("k2"));
  EXPECT_FALSE(logs_[0].gates("a"));
}

TEST_F(RepairRoutesTest, AFlushAllAServerMissesOwesItAFlush) {
  BroadcastRoute all(placement_);
  servers_[2].down = true;
  send(all, "flush_all");
  EXPECT_TRUE(logs_[2].flush_owed());
  EXPECT_FALSE(logs_[0].flush_owed());
  EXPECT_TRUE(logs_[2].gates("anything")) << "until flushed, any key there may be stale";
}

}  // namespace
}  // namespace memshard::proxy::testing_fakes
