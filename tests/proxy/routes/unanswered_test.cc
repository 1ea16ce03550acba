// Requests the proxy sends without waiting for them (routes/unanswered.h):
// the bytes go out intact on the behalf of the request they are made
// for, nobody's slot hears the answer, the pool's routes are kept alive
// until the server has answered, and the request made for does not have
// to outlive the send.
#include "proxy/routes/unanswered.h"

#include <gtest/gtest.h>

#include <memory>
#include <string>

#include "proxy/routes/key_route.h"
#include "tests/proxy/routes/route_test_util.h"

namespace memshard::proxy::testing_fakes {
namespace {

class UnansweredTest : public RouteTest {
 protected:
  ~UnansweredTest() override { EXPECT_EQ(slots_.outstanding, 0) << "a slot was not given back"; }
  std::deque<SentOp>& ops(int server) { return servers_[server].box.ops; }

  // The request an unanswered one is made for, held as a route holds it.
  std::unique_ptr<HeldRequest> held_client_request(std::string_view line) {
    request(line);
    RouteRequest req = route_request();
    return std::make_unique<HeldRequest>(req);
  }

  ServerRoute to_first_{servers_[0]};
  RouteLife life_;
};

TEST_F(UnansweredTest, SentIntactAndKeepsTheRoutesAliveUntilAnswered) {
  auto like = held_client_request("get a");
  const std::string repair = "ms a 2 T0 F3 ME\r\nhi\r\n";
  send_unanswered(*like, repair, to_first_, &life_);
  like.reset();  // the client's request may end before the server answers
  ASSERT_EQ(ops(0).size(), 1u);
  EXPECT_EQ(ops(0)[0].bytes, repair);
  EXPECT_EQ(ops(0)[0].op.mode, ReplyMode::meta);
  EXPECT_EQ(life_.held_requests, 1u) << "routes kept while the server owes an answer";
  EXPECT_EQ(slots_.outstanding, 1);
  answer(ops(0)[0], "HD\r\n");
  EXPECT_EQ(life_.held_requests, 0u);
  EXPECT_EQ(owner_.told, 0) << "no client waits for it";
}

TEST_F(UnansweredTest, TakesTheTimeAndCountersOfTheRequestItIsMadeFor) {
  auto like = held_client_request("get a");
  slots_.now = kNowUsec + 5'000'000;
  send_unanswered(*like, "md a q\r\n", to_first_, &life_);
  ASSERT_EQ(ops(0).size(), 1u);
  EXPECT_EQ(ops(0)[0].bytes, "md a q\r\nmn\r\n") << "quiet: the server's MN ends it";
  EXPECT_EQ(ops(0)[0].op.sent_usec, kNowUsec) << "sent once, at the request's time";
  EXPECT_EQ(ops(0)[0].op.fragment, 0u);
  EXPECT_EQ(pool_stats_.fragments.get(), 1u) << "counted in the pool of the request";
  answer(ops(0)[0], "MN\r\n");
  EXPECT_EQ(life_.held_requests, 0u);
}

TEST_F(UnansweredTest, MadeAfterTheRequestWasSentItTakesTheClocksTime) {
  auto like = held_client_request("get a");
  ServerRoute to_second{servers_[1]};
  like->send_copy(to_second, client_slot());
  slots_.now = kNowUsec + 2'000'000;  // the read's answer came, slowly
  send_unanswered(*like, "ms a 1 T0 ME q\r\nx\r\n", to_first_, &life_);
  ASSERT_EQ(ops(0).size(), 1u);
  EXPECT_EQ(ops(0)[0].op.sent_usec, kNowUsec + 2'000'000)
      << "a server whose queue it heads must not look stalled";
  answer(ops(0)[0], "MN\r\n");
  answer(ops(1)[0], "END\r\n");
}

TEST_F(UnansweredTest, AServerThatCannotTakeItEndsItAtOnce) {
  auto like = held_client_request("get a");
  servers_[0].down = true;
  send_unanswered(*like, "md a q\r\n", to_first_, &life_);
  EXPECT_TRUE(ops(0).empty());
  EXPECT_EQ(life_.held_requests, 0u) << "nothing is owed, nothing is kept";
  EXPECT_EQ(slots_.outstanding, 0);
  EXPECT_EQ(pool_stats_.forward_error.get(), 1u);
}

TEST_F(UnansweredTest, SeveralAtOnceEachKeepTheRoutesUntilItsOwnAnswer) {
  auto like = held_client_request("get a");
  ServerRoute to_third{servers_[2]};
  send_unanswered(*like, "mg a T30 q\r\n", to_first_, &life_);
  send_unanswered(*like, "mg a T30 q\r\n", to_third, &life_);
  EXPECT_EQ(life_.held_requests, 2u);
  answer(ops(2)[0], "MN\r\n");
  EXPECT_EQ(life_.held_requests, 1u);
  fail_op(ops(0)[0], "SERVER_ERROR backend timeout");
  EXPECT_EQ(life_.held_requests, 0u) << "a failure ends it as an answer does";
}

}  // namespace
}  // namespace memshard::proxy::testing_fakes
