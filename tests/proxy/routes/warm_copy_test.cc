// The copy a reload warm-up makes of a value found on a key's old server
// (routes/warm_copy.h): an add on each current server; a copy stored
// while the guard saw a write of the key begin is deleted again; nothing
// is copied while a write is in flight or the key is poisoned; keys a
// text line cannot carry travel base64 with `b`.
#include "proxy/routes/warm_copy.h"

#include <gtest/gtest.h>

#include <array>
#include <memory>
#include <string>

#include "proxy/protocol/base64.h"
#include "proxy/protocol/own_requests.h"
#include "proxy/routes/key_route.h"
#include "tests/proxy/routes/route_test_util.h"

namespace memshard::proxy::testing_fakes {
namespace {

class WarmCopyTest : public RouteTest {
 protected:
  WarmCopyTest() {
    request("get a");
    RouteRequest req = route_request();
    like_ = std::make_unique<HeldRequest>(req);
  }
  ~WarmCopyTest() override { EXPECT_EQ(slots_.outstanding, 0) << "a slot was not given back"; }
  std::deque<SentOp>& ops(int server) { return servers_[server].box.ops; }

  // What the old server said of the key: flags 7, 300 s left.
  static proto::MetaValue found(std::string_view data) {
    proto::MetaValue v;
    v.flags = "7";
    v.ttl = "300";
    v.data = data;
    return v;
  }
  static std::string add_of(std::string_view key, const proto::MetaValue& v) {
    std::string out;
    EXPECT_TRUE(proto::append_copy_request(key, v, false, out));
    return out;
  }
  // The delete that undoes a copy, as a quiet request goes out: then mn.
  static std::string delete_of(std::string_view key) {
    std::string out;
    EXPECT_TRUE(proto::append_delete(key, true, out));
    proto::append_noop(out);
    return out;
  }

  void copy(std::string_view key, const proto::MetaValue& v, const WarmGuard::Sample& sample) {
    copy_to_current(*like_, key, v, targets_, guard_, sample, &life_);
  }

  std::unique_ptr<HeldRequest> like_;
  std::array<Server*, 2> targets_{&servers_[0], &servers_[2]};
  WarmGuard guard_{64};
  RouteLife life_;
};

TEST_F(WarmCopyTest, AnAddOnEachCurrentServer) {
  const proto::MetaValue v = found("BB");
  copy("k", v, guard_.sample("k"));
  like_.reset();  // the read that found it may be answered and gone
  ASSERT_EQ(ops(0).size(), 1u);
  ASSERT_EQ(ops(2).size(), 1u);
  EXPECT_TRUE(ops(1).empty()) << "not a target";
  EXPECT_EQ(ops(0)[0].bytes, add_of("k", v));
  EXPECT_EQ(ops(2)[0].bytes, add_of("k", v));
  EXPECT_NE(ops(0)[0].bytes.find(" ME"), std::string::npos) << "add: a newer value wins";
  EXPECT_EQ(life_.held_requests, 2u);
  answer(ops(0)[0], "HD\r\n");
  answer(ops(2)[0], "NS\r\n");  // a value was written there meanwhile
  EXPECT_EQ(pool_stats_.warmup_copies.get(), 1u) << "only the copy stored counts";
  EXPECT_EQ(ops(0).size(), 1u) << "no write began: the copy stays";
  EXPECT_EQ(life_.held_requests, 0u);
  EXPECT_EQ(owner_.told, 0);
}

TEST_F(WarmCopyTest, CopiesAndTheirDeletesAreSentAtTheClocksTime) {
  // The read that found the value was sent at the request's time; its
  // answer came later, and the copy goes out then.
  ServerRoute old_server{servers_[1]};
  like_->send_copy(old_server, client_slot());
  slots_.now = kNowUsec + 4'000'000;
  copy("k", found("BB"), guard_.sample("k"));
  ASSERT_EQ(ops(0).size(), 1u);
  EXPECT_EQ(ops(0)[0].op.sent_usec, kNowUsec + 4'000'000);
  guard_.begin("k");
  slots_.now = kNowUsec + 6'000'000;
  answer(ops(0)[0], "HD\r\n");
  ASSERT_EQ(ops(0).size(), 2u);
  EXPECT_EQ(ops(0)[1].op.sent_usec, kNowUsec + 6'000'000) << "the delete, after the copy's answer";
  answer(ops(0)[1], "MN\r\n");
  answer(ops(2)[0], "NS\r\n");
  answer(ops(1)[0], "EN\r\n");
  guard_.end("k");
}

TEST_F(WarmCopyTest, ACopyStoredAfterAWriteBeganIsDeletedAgainOnItsServer) {
  const WarmGuard::Sample sample = guard_.sample("k");
  copy("k", found("BB"), sample);
  guard_.begin("k");  // a delete of k, on any worker, while the copies travel
  answer(ops(0)[0], "HD\r\n");
  ASSERT_EQ(ops(0).size(), 2u);
  EXPECT_EQ(ops(0)[1].bytes, delete_of("k"));
  EXPECT_EQ(life_.held_requests, 2u) << "the delete is owed; the other copy too";
  answer(ops(0)[1], "MN\r\n");
  // The other copy was not stored: there is nothing to undo.
  answer(ops(2)[0], "NS\r\n");
  EXPECT_EQ(ops(2).size(), 1u);
  EXPECT_EQ(life_.held_requests, 0u);
  guard_.end("k");
}

// The copy's answer names its CAS: the undo deletes that item only, so a
// set that landed on the server after the copy (and replaced it) stays.
TEST_F(WarmCopyTest, TheUndoOfACopyDeletesOnlyTheCopyByItsCas) {
  const WarmGuard::Sample sample = guard_.sample("k");
  copy("k", found("BB"), sample);
  guard_.begin("k");
  answer(ops(0)[0], "HD c4711\r\n");
  ASSERT_EQ(ops(0).size(), 2u);
  std::string only_the_copy;
  ASSERT_TRUE(proto::append_delete_if("k", 4711, true, only_the_copy));
  proto::append_noop(only_the_copy);
  EXPECT_EQ(ops(0)[1].bytes, only_the_copy);
  EXPECT_NE(only_the_copy.find(" C4711"), std::string::npos) << only_the_copy;
  answer(ops(0)[1], "MN\r\n");
  answer(ops(2)[0], "NS\r\n");
  EXPECT_EQ(life_.held_requests, 0u);
  guard_.end("k");
}

TEST_F(WarmCopyTest, AWriteThatEndedBeforeTheCopyIsStoredStillCounts) {
  const WarmGuard::Sample sample = guard_.sample("k");
  copy("k", found("BB"), sample);
  guard_.begin("k");
  guard_.end("k");
  answer(ops(0)[0], "HD\r\n");
  answer(ops(2)[0], "HD\r\n");
  ASSERT_EQ(ops(0).size(), 2u);
  ASSERT_EQ(ops(2).size(), 2u);
  EXPECT_EQ(ops(0)[1].bytes, delete_of("k"));
  EXPECT_EQ(ops(2)[1].bytes, delete_of("k"));
  answer(ops(0)[1], "MN\r\n");
  answer(ops(2)[1], "MN\r\n");
}

TEST_F(WarmCopyTest, AFailedCopyIsNotCountedNorUndone) {
  const WarmGuard::Sample sample = guard_.sample("k");
  copy("k", found("BB"), sample);
  guard_.begin("k");
  fail_op(ops(0)[0], "SERVER_ERROR backend timeout");
  fail_op(ops(2)[0], "SERVER_ERROR backend timeout");
  EXPECT_EQ(ops(0).size(), 1u);
  EXPECT_EQ(ops(2).size(), 1u);
  EXPECT_EQ(pool_stats_.warmup_copies.get(), 0u);
  guard_.end("k");
}

TEST_F(WarmCopyTest, NothingWhileAWriteIsInFlightOrTheKeyIsPoisoned) {
  guard_.begin("k");
  copy("k", found("BB"), guard_.sample("k"));
  guard_.end("k");
  guard_.poison("p");
  copy("p", found("BB"), guard_.sample("p"));
  EXPECT_TRUE(ops(0).empty());
  EXPECT_TRUE(ops(2).empty());
  EXPECT_EQ(life_.held_requests, 0u);
}

TEST_F(WarmCopyTest, AKeyWithASpaceTravelsBase64BothWays) {
  const std::string key = "user 42";
  std::string encoded;
  proto::base64_encode(key, encoded);
  const proto::MetaValue v = found("v");
  copy(key, v, guard_.sample(key));
  ASSERT_EQ(ops(0).size(), 1u);
  const std::string& add = ops(0)[0].bytes;
  EXPECT_EQ(add, add_of(key, v));
  EXPECT_TRUE(add.starts_with("ms " + encoded + " ")) << add;
  EXPECT_NE(add.find(" b"), std::string::npos) << add;
  EXPECT_EQ(add.find(key), std::string::npos) << "never the raw key, which is two tokens";
  guard_.begin(key);
  answer(ops(0)[0], "HD\r\n");
  ASSERT_EQ(ops(0).size(), 2u);
  const std::string& md = ops(0)[1].bytes;
  EXPECT_EQ(md, delete_of(key));
  EXPECT_TRUE(md.starts_with("md " + encoded + " b")) << md;
  answer(ops(0)[1], "MN\r\n");
  answer(ops(2)[0], "NS\r\n");
  guard_.end(key);
}

TEST_F(WarmCopyTest, AKeyWithNoMetaFormIsNotCopied) {
  const std::string key(251, 'k');
  copy(key, found("v"), guard_.sample(key));
  EXPECT_TRUE(ops(0).empty());
  EXPECT_TRUE(ops(2).empty());
}

}  // namespace
}  // namespace memshard::proxy::testing_fakes
