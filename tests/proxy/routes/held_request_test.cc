// A request held by a route to be sent more than once (routes/
// held_request.h): it takes the client's bytes out of the input, keeps
// them and its own parse, sends them intact each time, and a send after
// the first takes the clock's time rather than the request's arrival.
#include "proxy/routes/held_request.h"

#include <gtest/gtest.h>

#include <string>

#include "proxy/routes/key_route.h"
#include "tests/proxy/routes/route_test_util.h"

namespace memshard::proxy::testing_fakes {
namespace {

class HeldRequestTest : public RouteTest {
 protected:
  HeldRequestTest() { placement_.where = {{"a", 0}, {"b", 1}}; }
  std::deque<SentOp>& ops(int server) { return servers_[server].box.ops; }

  ServerRoute to_first_{servers_[0]};
  ServerRoute to_second_{servers_[1]};
};

TEST_F(HeldRequestTest, TakesTheRequestsBytesAndLeavesTheNextRequest) {
  request("set a 5 0 3", "xyz\r\n", "get b\r\n");
  RouteRequest req = route_request();
  HeldRequest held(req);
  EXPECT_EQ(input(), "get b\r\n") << "the client's next request is not the route's";
  EXPECT_EQ(held.request().command, proto::Command::set);
  ASSERT_EQ(held.request().keys.size(), 1u);
  EXPECT_EQ(held.request().keys[0], "a");
  EXPECT_EQ(held.value(), "xyz");
  EXPECT_EQ(&held.slots(), &slots_);
  EXPECT_EQ(&held.pool_stats(), &pool_stats_);
  EXPECT_EQ(&held.worker_stats(), &worker_stats_);
}

TEST_F(HeldRequestTest, EachSendIsTheClientsBytesIntact) {
  const std::string value = "a value\r\nwith a line break inside";
  request("set a 0 0 " + std::to_string(value.size()), value + "\r\n");
  const std::string sent = sent_bytes_;
  RouteRequest req = route_request();
  HeldRequest held(req);
  // The client parses its next request in the same space meanwhile.
  request("delete b");
  held.send_copy(to_first_, client_slot());
  held.send_copy(to_second_, client_slot());
  held.send_copy(to_first_, client_slot());
  ASSERT_EQ(ops(0).size(), 2u);
  ASSERT_EQ(ops(1).size(), 1u);
  EXPECT_EQ(ops(0)[0].bytes, sent);
  EXPECT_EQ(ops(1)[0].bytes, sent);
  EXPECT_EQ(ops(0)[1].bytes, sent);
  EXPECT_EQ(held.request().keys[0], "a") << "its own parse, not the client's";
  EXPECT_EQ(held.value(), value);
  EXPECT_EQ(input(), "delete b\r\n") << "the client's input is not touched by a send";
  for (int s : {0, 1}) {
    for (SentOp& op : ops(s)) answer(op, "STORED\r\n");
  }
}

TEST_F(HeldRequestTest, TheFirstSendHasTheArrivalTimeALaterOneTheClocks) {
  request("get a");
  RouteRequest req = route_request();
  HeldRequest held(req);
  slots_.now = kNowUsec + 250'000;  // the first send happens a while later
  held.send_copy(to_first_, client_slot());
  slots_.now = kNowUsec + 900'000;
  held.send_copy(to_second_, client_slot());
  slots_.now = kNowUsec + 2'000'000;
  held.send_copy(to_first_, client_slot());
  ASSERT_EQ(ops(0).size(), 2u);
  ASSERT_EQ(ops(1).size(), 1u);
  EXPECT_EQ(ops(0)[0].op.sent_usec, kNowUsec) << "the request's own time";
  EXPECT_EQ(ops(1)[0].op.sent_usec, kNowUsec + 900'000) << "the clock's, at the second send";
  EXPECT_EQ(ops(0)[1].op.sent_usec, kNowUsec + 2'000'000);
  for (int s : {0, 1}) {
    for (SentOp& op : ops(s)) answer(op, "END\r\n");
  }
}

// A request made on the behalf of one already sent (a lookup after a
// miss, a repair, a delete that undoes a copy) goes out later than the
// client's request came: it takes the clock's time, or a server whose
// queue it heads would look stalled (a connection's timer follows its
// oldest operation) and fail every operation on it.
TEST_F(HeldRequestTest, ARequestMadeAfterTheFirstSendTakesTheClocksTime) {
  request("get a");
  RouteRequest req = route_request();
  HeldRequest held(req);
  HeldRequest before_any_send(held, std::string("md a q\r\n"));
  held.send_copy(to_first_, client_slot());
  slots_.now = kNowUsec + 3'000'000;  // the first server answered, slowly
  HeldRequest after_a_send(held, std::string("mg a v f t\r\n"));
  after_a_send.send_copy(to_second_, client_slot());
  before_any_send.send_copy(to_second_, client_slot());
  ASSERT_EQ(ops(1).size(), 2u);
  EXPECT_EQ(ops(1)[0].op.sent_usec, kNowUsec + 3'000'000) << "made after the first send";
  EXPECT_EQ(ops(1)[1].op.sent_usec, kNowUsec) << "made with the request: its first send";
  answer(ops(0)[0], "END\r\n");
  answer(ops(1)[0], "EN\r\n");
  answer(ops(1)[1], "MN\r\n");
}

TEST_F(HeldRequestTest, ARequestTheProxyMadeIsParsedAndLeavesTheClientsInputAlone) {
  request("get a", {}, "get b\r\n");
  RouteRequest req = route_request();
  const std::string own = "md a q\r\n";
  HeldRequest made(req, own, own.size());
  EXPECT_EQ(input(), "get a\r\nget b\r\n") << "context.in is not touched";
  EXPECT_EQ(made.request().command, proto::Command::meta_delete);
  EXPECT_TRUE(made.request().quiet);
  EXPECT_EQ(made.value(), "") << "no data block";
  // One line made on the behalf another held request acts on.
  HeldRequest like(made, std::string("mg a v f t\r\n"));
  EXPECT_EQ(like.request().command, proto::Command::meta_get);
  EXPECT_EQ(&like.slots(), &slots_);
  like.send_copy(to_first_, client_slot());
  ASSERT_EQ(ops(0).size(), 1u);
  EXPECT_EQ(ops(0)[0].bytes, "mg a v f t\r\n");
  EXPECT_EQ(ops(0)[0].op.mode, ReplyMode::meta);
  answer(ops(0)[0], "EN\r\n");
}

TEST_F(HeldRequestTest, ReplaceHoldsAnotherRequestForTheSendsAfter) {
  request("get a");
  RouteRequest req = route_request();
  HeldRequest held(req);
  held.send_copy(to_first_, client_slot());
  const std::string set = "ms a 2 T0\r\nhi\r\n";
  held.replace(set, set.find('\n') + 1);
  EXPECT_EQ(held.request().command, proto::Command::meta_set);
  EXPECT_EQ(held.value(), "hi");
  held.send_copy(to_second_, client_slot());
  ASSERT_EQ(ops(1).size(), 1u);
  EXPECT_EQ(ops(1)[0].bytes, set);
  answer(ops(0)[0], "END\r\n");
  answer(ops(1)[0], "HD\r\n");
}

}  // namespace
}  // namespace memshard::proxy::testing_fakes
