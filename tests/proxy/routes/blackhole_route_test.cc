// A blackhole route (routes/blackhole_route.h; conf: blackhole: true):
// mcrouter's NullRoute reply for each operation, answered at once, the
// request's bytes consumed and nothing sent anywhere.
#include "proxy/routes/blackhole_route.h"

#include <gtest/gtest.h>

#include <string>
#include <tuple>

#include "tests/proxy/routes/route_test_util.h"

namespace memshard::proxy::testing_fakes {
namespace {

class BlackholeTest : public RouteTest {
 protected:
  // The reply to `line` (and `data`), checking the input is left at the
  // next request.
  std::string reply_to(const std::string& line, const std::string& data = "") {
    request(line, data, "get next\r\n");
    ReplySlot& slot = client_slot();
    RouteRequest req = route_request();
    route_.send(req, slot);
    EXPECT_TRUE(slot.complete()) << line;
    EXPECT_EQ(input(), "get next\r\n") << line;
    return copy_all(slot.reply());
  }
  RouteStats counters_;
  BlackholeRoute route_{counters_};
};

TEST_F(BlackholeTest, NullRoutesReplyPerOperation) {
  const std::tuple<const char*, const char*, const char*> cases[] = {
      {"get a b", "", "END\r\n"},
      {"gets a", "", "END\r\n"},
      {"gat 10 a", "", "END\r\n"},
      {"set k 0 0 1", "x\r\n", "NOT_STORED\r\n"},
      {"add k 0 0 1", "x\r\n", "NOT_STORED\r\n"},
      {"append k 0 0 1", "x\r\n", "NOT_STORED\r\n"},
      {"cas k 0 0 1 5", "x\r\n", "NOT_STORED\r\n"},
      {"set k 0 0 1 noreply", "x\r\n", ""},
      {"delete k", "", "NOT_FOUND\r\n"},
      {"incr k 1", "", "NOT_FOUND\r\n"},
      {"touch k 10", "", "NOT_FOUND\r\n"},
      {"delete k noreply", "", ""},
      {"mg k v", "", "EN\r\n"},
      {"mg k v k Oab", "", "EN kk Oab\r\n"},
      {"mg k v q", "", ""},
      {"ms k 1 T5", "x\r\n", "NS\r\n"},
      {"ms k 1 q Oz", "x\r\n", "NS Oz\r\n"},
      {"md k", "", "NF\r\n"},
      {"md k q", "", ""},
      {"ma k", "", "NF\r\n"},
      {"mg aw== b k v", "", "EN kaw== b\r\n"},
  };
  for (const auto& [line, data, want] : cases) EXPECT_EQ(reply_to(line, data), want) << line;
  EXPECT_EQ(counters_.blackholed.get(), std::size(cases));
  for (const FakeServer& s : servers_) EXPECT_TRUE(s.box.ops.empty());
}

}  // namespace
}  // namespace memshard::proxy::testing_fakes
