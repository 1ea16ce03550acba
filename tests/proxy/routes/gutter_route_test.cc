// A pool with a gutter (routes/gutter_route.h) over a real ring of three
// fake servers and a fake gutter pool: a key whose server is down
// (ejected, or refusing connections) goes to the gutter, not to the ring's
// next server; a request that fails on its way is tried again in the
// gutter; every expiry set in the gutter is capped at gutter_ttl (exptime
// 0 too); the keys of live servers never touch the gutter, and go back to
// their server once it is readmitted.
#include "proxy/routes/gutter_route.h"

#include <gtest/gtest.h>

#include <ctime>
#include <string>
#include <vector>

#include "ketama/ring.h"
#include "tests/proxy/routes/route_test_util.h"

namespace memshard::proxy::testing_fakes {
namespace {

constexpr uint32_t kTtl = 10;

// A server whose connects are refused: down() says so (a FakeServer's
// outbox can be withheld, but it never says it is down).
class RefusingServer final : public Server {
 public:
  Outbox* outbox(uint64_t) override {
    ++asked;
    return refusing ? nullptr : &box;
  }
  bool down() const override { return refusing; }
  FakeOutbox box;
  bool refusing = false;
  int asked = 0;
};

ketama::Ring ring_of_three() {
  std::vector<ketama::ServerEntry> servers(3);
  for (uint16_t i = 0; i < 3; ++i) {
    servers[i].host = "127.0.0.1";
    servers[i].port = static_cast<uint16_t>(21001 + i);
  }
  return ketama::Ring::build(servers, {});
}

class GutterRouteTest : public WorkRouteTest {
 protected:
  GutterRouteTest() {
    for (int i = 0; i < 1000; ++i) {
      const std::string k = "key:" + std::to_string(i);
      keys_on_[ring_.lookup(k)].push_back(k);
    }
    for (const auto& keys : keys_on_) EXPECT_GE(keys.size(), 2u) << "every server holds keys";
  }
  std::deque<SentOp>& ops(size_t server) {
    return server == 2 ? third_.box.ops : servers_[server].box.ops;
  }
  // The n-th sample key the ring gives `server`.
  const std::string& key_on(size_t server, size_t n = 0) { return keys_on_[server][n]; }
  // No server of the pool was sent anything.
  void expect_servers_untouched() {
    for (size_t s = 0; s < 3; ++s) EXPECT_TRUE(ops(s).empty()) << "server " << s;
  }

  ketama::Ring ring_ = ring_of_three();
  std::vector<std::string> keys_on_[3];
  std::vector<bool> live_{true, true, true};
  RefusingServer third_;
  GutterPlacement gp_{ring_, live_, {&servers_[0], &servers_[1], &third_}};
  FakePool gutter_;
  Gutter gutter_routes_{GutterEntry(gutter_.routes(), PoolEntry::Part::key, kTtl, &life_),
                        GutterEntry(gutter_.routes(), PoolEntry::Part::multi_get, kTtl, &life_)};
  SplitRoute split_{gp_};
  GutterKeyRoute key_{gp_, gutter_routes_, &life_};
  GutterGetRoute get_{gp_, split_, gutter_routes_, &life_};
};

TEST_F(GutterRouteTest, ADownServerHasNoKeysWhileTheOthersKeepTheirs) {
  for (size_t s = 0; s < 3; ++s) {
    for (const std::string& k : keys_on_[s]) ASSERT_EQ(gp_.place(k), s) << k;
  }
  live_[1] = false;  // ejected
  third_.refusing = true;
  for (const std::string& k : keys_on_[0]) EXPECT_EQ(gp_.place(k), 0u) << k;
  for (const std::string& k : keys_on_[1]) EXPECT_EQ(gp_.place(k), Placement::npos) << k;
  for (const std::string& k : keys_on_[2]) EXPECT_EQ(gp_.place(k), Placement::npos) << k;
  live_[1] = true;
  third_.refusing = false;
  for (const std::string& k : keys_on_[1]) EXPECT_EQ(gp_.place(k), 1u) << "readmitted: " << k;
}

TEST_F(GutterRouteTest, LiveServersKeysNeverTouchTheGutter) {
  for (size_t s = 0; s < 3; ++s) {
    request("set " + key_on(s) + " 0 0 1", "x\r\n", "get next\r\n");
    ReplySlot& slot = client_slot();
    send(key_, slot);
    ASSERT_EQ(ops(s).size(), 1u) << s;
    EXPECT_EQ(ops(s)[0].bytes, sent_bytes_) << "as the client wrote it: no expiry capped";
    EXPECT_EQ(input(), "get next\r\n");
    answer(ops(s)[0], "STORED\r\n");
    ASSERT_TRUE(slot.complete());
    EXPECT_EQ(copy_all(slot.reply()), "STORED\r\n");
  }
  request("get " + key_on(0) + " " + key_on(1) + " " + key_on(2));
  ReplySlot& slot = client_slot();
  send(get_, slot);
  for (size_t s = 0; s < 3; ++s) {
    ASSERT_EQ(ops(s).size(), 2u);
    answer_retrieval(ops(s)[1], {});
  }
  ASSERT_TRUE(slot.complete());
  EXPECT_EQ(copy_all(slot.reply()), "END\r\n");
  EXPECT_TRUE(gutter_.ops().empty());
  EXPECT_EQ(pool_stats_.gutter_requests.get(), 0u);
  EXPECT_EQ(pool_stats_.gutter_sets.get(), 0u);
}

TEST_F(GutterRouteTest, AnEjectedServersKeyGoesToTheGutterNotToTheNextServer) {
  live_[1] = false;
  const std::string& k = key_on(1);
  request("set " + k + " 0 0 1", "x\r\n", "get next\r\n");
  ReplySlot& slot = client_slot();
  send(key_, slot);
  ASSERT_EQ(gutter_.ops().size(), 1u);
  EXPECT_EQ(gutter_.ops()[0].bytes, "set " + k + " 0 10 1\r\nx\r\n") << "exptime 0 is gutter_ttl";
  EXPECT_EQ(input(), "get next\r\n");
  expect_servers_untouched();
  EXPECT_TRUE(servers_[1].affinities.empty()) << "the ejected server is not even asked";
  EXPECT_FALSE(slot.complete());
  answer(gutter_.ops()[0], "STORED\r\n");
  ASSERT_TRUE(slot.complete());
  EXPECT_EQ(owner_.told, 1);
  EXPECT_EQ(copy_all(slot.reply()), "STORED\r\n");
  EXPECT_EQ(pool_stats_.gutter_requests.get(), 1u);
  EXPECT_EQ(pool_stats_.gutter_sets.get(), 1u);
  EXPECT_EQ(gutter_.stats.requests.get(), 1u) << "counted as the gutter pool's request";

  request("get " + k);
  ReplySlot& read = client_slot();
  send(get_, read);
  ASSERT_EQ(gutter_.ops().size(), 2u);
  EXPECT_EQ(gutter_.ops()[1].keys, std::vector<std::string>{k});
  expect_servers_untouched();
  answer_retrieval(gutter_.ops()[1], {{k, "x"}});
  ASSERT_TRUE(read.complete());
  EXPECT_EQ(copy_all(read.reply()), "VALUE " + k + " 0 1\r\nx\r\nEND\r\n");
  EXPECT_EQ(pool_stats_.gutter_requests.get(), 2u);
  EXPECT_EQ(pool_stats_.gutter_sets.get(), 1u) << "a read is no set";

  // Readmitted: its keys go back to it, and not to the gutter.
  live_[1] = true;
  request("get " + k);
  ReplySlot& back = client_slot();
  send(get_, back);
  ASSERT_EQ(ops(1).size(), 1u);
  EXPECT_EQ(gutter_.ops().size(), 2u);
  answer_retrieval(ops(1)[0], {});
  EXPECT_EQ(copy_all(back.reply()), "END\r\n");
  EXPECT_EQ(pool_stats_.gutter_requests.get(), 2u);
}

TEST_F(GutterRouteTest, ARefusingServersKeyGoesToTheGutter) {
  third_.refusing = true;
  const std::string& k = key_on(2);
  request("delete " + k);
  ReplySlot& slot = client_slot();
  send(key_, slot);
  ASSERT_EQ(gutter_.ops().size(), 1u);
  EXPECT_EQ(gutter_.ops()[0].bytes, "delete " + k + "\r\n") << "no expiry: as the client wrote it";
  EXPECT_EQ(third_.asked, 0) << "a server known down is not tried first";
  expect_servers_untouched();
  answer(gutter_.ops()[0], "DELETED\r\n");
  ASSERT_TRUE(slot.complete());
  EXPECT_EQ(copy_all(slot.reply()), "DELETED\r\n");
  EXPECT_EQ(pool_stats_.gutter_requests.get(), 1u);
  EXPECT_EQ(pool_stats_.gutter_sets.get(), 0u);
}

TEST_F(GutterRouteTest, EveryExpirySetInTheGutterIsCappedAtGutterTtl) {
  live_[0] = false;
  const std::string k = key_on(0);
  const std::string far = std::to_string(std::time(nullptr) + 365 * 86400);
  struct Case {
    std::string line, data, sent;
    bool storage;
  };
  const Case cases[] = {
      {"set K 0 0 1", "x\r\n", "set K 0 10 1\r\nx\r\n", true},
      {"set K 5 3600 1", "x\r\n", "set K 5 10 1\r\nx\r\n", true},
      {"add K 0 4 1", "x\r\n", "add K 0 4 1\r\nx\r\n", true},  // shorter: kept
      {"replace K 0 " + far, "", "", true},                    // filled in below
      {"cas K 0 0 1 99", "x\r\n", "cas K 0 10 1 99\r\nx\r\n", true},
      {"set K 0 0 1 noreply", "x\r\n", "set K 0 10 1 noreply\r\nx\r\nmn\r\n", true},
      {"append K 0 0 1", "x\r\n", "append K 0 0 1\r\nx\r\n", true},  // append ignores it
      {"touch K 0", "", "touch K 10\r\n", false},
      {"ms K 1 T0", "x\r\n", "ms K 1 T10\r\nx\r\n", true},
      {"ms K 1 F3", "x\r\n", "ms K 1 F3 T10\r\nx\r\n", true},  // none: gets one
      {"mg K v T100", "", "mg K v T10\r\n", false},
      {"ma K N0", "", "ma K N10\r\n", false},
      {"incr K 1", "", "incr K 1\r\n", false},
      {"mg K v", "", "mg K v\r\n", false},
  };
  uint64_t sets = 0;
  for (Case c : cases) {
    if (c.line.starts_with("replace")) {
      c.line += " 1";
      c.data = "x\r\n";
      c.sent = "replace K 0 10 1\r\nx\r\n";  // a far unix time
    }
    const auto subst = [&](std::string s) {
      const size_t at = s.find(" K");
      return s.replace(at, 2, " " + k);
    };
    request(subst(c.line), c.data, "get next\r\n");
    ReplySlot& slot = client_slot();
    send(key_, slot);
    ASSERT_FALSE(gutter_.ops().empty()) << c.line;
    EXPECT_EQ(gutter_.ops().back().bytes, subst(c.sent)) << c.line;
    EXPECT_EQ(input(), "get next\r\n") << c.line;
    answer(gutter_.ops().back(), c.line.find("noreply") != std::string::npos ? "MN\r\n" : "HD\r\n");
    EXPECT_TRUE(slot.complete()) << c.line;
    sets += c.storage ? 1 : 0;
  }
  EXPECT_EQ(pool_stats_.gutter_requests.get(), std::size(cases));
  EXPECT_EQ(pool_stats_.gutter_sets.get(), sets);
  expect_servers_untouched();

  // gat, whole or as the gutter's part of a split multi-get.
  request("gat 0 " + k);
  ReplySlot& gat = client_slot();
  send(get_, gat);
  EXPECT_EQ(gutter_.ops().back().bytes, "gat 10 " + k + "\r\n");
  answer_retrieval(gutter_.ops().back(), {{k, "g"}});
  ASSERT_TRUE(gat.complete());
  EXPECT_EQ(copy_all(gat.reply()), "VALUE " + k + " 0 1\r\ng\r\nEND\r\n");

  const std::string& live = key_on(1);
  request("gats 3600 " + live + " " + k);
  ReplySlot& split = client_slot();
  send(get_, split);
  ASSERT_EQ(ops(1).size(), 1u);
  EXPECT_EQ(ops(1)[0].bytes, "gats 3600 " + live + "\r\n") << "a live server's part as asked";
  EXPECT_EQ(gutter_.ops().back().bytes, "gats 10 " + k + "\r\n");
  answer_retrieval(gutter_.ops().back(), {});
  answer_retrieval(ops(1)[0], {{live, "L"}});
  ASSERT_TRUE(split.complete());
  EXPECT_EQ(copy_all(split.reply()), "VALUE " + live + " 0 1\r\nL\r\nEND\r\n");
}

TEST_F(GutterRouteTest, ARequestThatFailsOnItsWayIsTriedAgainInTheGutter) {
  const std::string& k = key_on(0);
  request("set " + k + " 0 0 1", "x\r\n", "get next\r\n");
  ReplySlot& slot = client_slot();
  send(key_, slot);
  ASSERT_EQ(ops(0).size(), 1u);
  EXPECT_EQ(ops(0)[0].bytes, "set " + k + " 0 0 1\r\nx\r\n") << "its live server first, as asked";
  EXPECT_EQ(input(), "get next\r\n");
  EXPECT_TRUE(gutter_.ops().empty());
  fail_op(ops(0)[0], "SERVER_ERROR backend timeout");
  ASSERT_EQ(gutter_.ops().size(), 1u);
  EXPECT_EQ(gutter_.ops()[0].bytes, "set " + k + " 0 10 1\r\nx\r\n") << "capped there";
  EXPECT_FALSE(slot.complete()) << "the failure is not the answer";
  answer(gutter_.ops()[0], "STORED\r\n");
  ASSERT_TRUE(slot.complete());
  EXPECT_EQ(owner_.told, 1);
  EXPECT_EQ(copy_all(slot.reply()), "STORED\r\n");
  EXPECT_EQ(pool_stats_.gutter_requests.get(), 1u);
  EXPECT_EQ(pool_stats_.gutter_sets.get(), 1u);

  // A SERVER_ERROR the server answered itself is a failure too.
  request("mg " + k + " v");
  ReplySlot& read = client_slot();
  send(key_, read);
  answer(ops(0)[1], "SERVER_ERROR out of memory\r\n");
  ASSERT_EQ(gutter_.ops().size(), 2u);
  EXPECT_EQ(gutter_.ops()[1].bytes, "mg " + k + " v\r\n");
  answer(gutter_.ops()[1], "EN\r\n");
  EXPECT_EQ(copy_all(read.reply()), "EN\r\n");

  // Failing in the gutter as well: the gutter's failure is the answer.
  request("delete " + k);
  ReplySlot& twice = client_slot();
  send(key_, twice);
  fail_op(ops(0)[2], "SERVER_ERROR connection lost");
  fail_op(gutter_.ops()[2], "SERVER_ERROR backend timeout");
  ASSERT_TRUE(twice.complete());
  EXPECT_EQ(copy_all(twice.reply()), "SERVER_ERROR backend timeout\r\n");
  EXPECT_EQ(owner_.told, 3);
}

TEST_F(GutterRouteTest, AQuietWriteThatFailsIsTriedInTheGutterAndStaysQuiet) {
  const std::string& k = key_on(2);
  request("set " + k + " 0 0 1 noreply", "x\r\n");
  ReplySlot& slot = client_slot();
  send(key_, slot);
  ASSERT_EQ(ops(2).size(), 1u);
  fail_op(ops(2)[0], "SERVER_ERROR backend timeout");
  ASSERT_EQ(gutter_.ops().size(), 1u);
  EXPECT_EQ(gutter_.ops()[0].bytes, "set " + k + " 0 10 1 noreply\r\nx\r\nmn\r\n");
  answer(gutter_.ops()[0], "MN\r\n");
  ASSERT_TRUE(slot.complete());
  EXPECT_EQ(copy_all(slot.reply()), "");
}

TEST_F(GutterRouteTest, AnAnswerThatIsNoFailureIsNotTriedInTheGutter) {
  const std::string& k = key_on(1);
  const char* answers[] = {"EN\r\n", "CLIENT_ERROR bad command line format\r\n", "NS\r\n"};
  for (const char* a : answers) {
    request("mg " + k + " v");
    ReplySlot& slot = client_slot();
    send(key_, slot);
    answer(ops(1).back(), a);
    ASSERT_TRUE(slot.complete());
    EXPECT_EQ(copy_all(slot.reply()), a);
  }
  EXPECT_TRUE(gutter_.ops().empty());
  EXPECT_EQ(pool_stats_.gutter_requests.get(), 0u);
}

TEST_F(GutterRouteTest, AMultiGetSpanningLiveAndDownServersIsSplitAndMergedInOrder) {
  live_[1] = false;
  const std::string a = key_on(0), b = key_on(1), b2 = key_on(1, 1), c = key_on(2);
  request("get " + b + " " + a + " " + b2 + " " + c, {}, "get next\r\n");
  ReplySlot& slot = client_slot();
  send(get_, slot);
  EXPECT_EQ(input(), "get next\r\n");
  ASSERT_EQ(gutter_.ops().size(), 1u);
  EXPECT_EQ(gutter_.ops()[0].keys, (std::vector<std::string>{b, b2}));
  ASSERT_EQ(ops(0).size(), 1u);
  EXPECT_EQ(ops(0)[0].keys, std::vector<std::string>{a});
  ASSERT_EQ(ops(2).size(), 1u);
  EXPECT_EQ(ops(2)[0].keys, std::vector<std::string>{c});
  EXPECT_TRUE(ops(1).empty());
  answer_retrieval(ops(2)[0], {{c, "C"}});
  answer_retrieval(ops(0)[0], {{a, "A"}});
  EXPECT_FALSE(slot.complete());
  answer_retrieval(gutter_.ops()[0], {{b2, "B2"}, {b, "B"}});
  ASSERT_TRUE(slot.complete());
  EXPECT_EQ(owner_.told, 1);
  EXPECT_EQ(copy_all(slot.reply()), "VALUE " + b + " 0 1\r\nB\r\nVALUE " + a +
                                        " 0 1\r\nA\r\nVALUE " + b2 + " 0 2\r\nB2\r\nVALUE " + c +
                                        " 0 1\r\nC\r\nEND\r\n");
  EXPECT_EQ(pool_stats_.gutter_requests.get(), 2u) << "one per key taken by the gutter";

  // A live server's part that fails on its way is asked of the gutter;
  // when the gutter fails it too, its keys read as misses.
  request("get " + a + " " + b);
  ReplySlot& part = client_slot();
  send(get_, part);
  ASSERT_EQ(gutter_.ops().size(), 2u);
  fail_retrieval(ops(0)[1], "SERVER_ERROR backend timeout");
  ASSERT_EQ(gutter_.ops().size(), 3u);
  EXPECT_EQ(gutter_.ops()[2].keys, std::vector<std::string>{a});
  answer_retrieval(gutter_.ops()[1], {{b, "B"}});
  answer_retrieval(gutter_.ops()[2], {{a, "GA"}});
  ASSERT_TRUE(part.complete());
  EXPECT_EQ(copy_all(part.reply()),
            "VALUE " + a + " 0 2\r\nGA\r\nVALUE " + b + " 0 1\r\nB\r\nEND\r\n");

  request("get " + a + " " + b);
  ReplySlot& both = client_slot();
  send(get_, both);
  fail_retrieval(ops(0)[2], "SERVER_ERROR backend timeout");
  ASSERT_EQ(gutter_.ops().size(), 5u);
  fail_retrieval(gutter_.ops()[4], "SERVER_ERROR backend timeout");
  answer_retrieval(gutter_.ops()[3], {{b, "B"}});
  ASSERT_TRUE(both.complete());
  EXPECT_EQ(copy_all(both.reply()), "VALUE " + b + " 0 1\r\nB\r\nEND\r\n");
}

// docs/failures.md, "Gutter": a request that fails on its way
// (timed out, connection lost, a SERVER_ERROR) is tried again on the
// gutter, retrievals too: a live server's share of a get is asked of the
// gutter when it fails (156f51f; before, the client got the failure).
TEST_F(GutterRouteTest, AGetWhoseLiveServerFailsOnItsWayIsAnsweredByTheGutter) {
  const std::string& k = key_on(0);
  request("get " + k);
  ReplySlot& slot = client_slot();
  send(get_, slot);
  ASSERT_EQ(ops(0).size(), 1u);
  fail_retrieval(ops(0)[0], "SERVER_ERROR backend timeout");
  ASSERT_EQ(gutter_.ops().size(), 1u) << "the failed share is asked of the gutter";
  answer_retrieval(gutter_.ops()[0], {{k, "G"}});
  ASSERT_TRUE(slot.complete());
  EXPECT_EQ(copy_all(slot.reply()), "VALUE " + k + " 0 1\r\nG\r\nEND\r\n");
  EXPECT_EQ(pool_stats_.gutter_requests.get(), 1u);
}

TEST_F(GutterRouteTest, InvalidateDeletesTheKeyWhereItsRequestsGo) {
  live_[1] = false;
  request("set " + key_on(1) + " 0 0 1", "x\r\n");
  ReplySlot& down = client_slot();
  RouteRequest req = route_request();
  key_.invalidate(req, down);
  ASSERT_EQ(gutter_.ops().size(), 1u);
  EXPECT_EQ(gutter_.ops()[0].bytes, "md " + key_on(1) + " q\r\nmn\r\n");
  expect_servers_untouched();
  answer(gutter_.ops()[0], "MN\r\n");

  request("set " + key_on(0) + " 0 0 1", "x\r\n");
  ReplySlot& up = client_slot();
  RouteRequest live = route_request();
  key_.invalidate(live, up);
  ASSERT_EQ(ops(0).size(), 1u);
  EXPECT_EQ(ops(0)[0].bytes, "md " + key_on(0) + " q\r\nmn\r\n");
  EXPECT_EQ(gutter_.ops().size(), 1u);
  answer(ops(0)[0], "MN\r\n");
}

}  // namespace
}  // namespace memshard::proxy::testing_fakes
