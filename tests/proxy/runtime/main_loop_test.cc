// MainLoop (proxy/runtime/main_loop.h): the main thread's loop as a
// BackendContext. What it promises: run() ends when the loop is asked to
// exit or break, the clock is read once per iteration, the writes an
// iteration made leave at its end (a backend request to a scripted server
// is answered only if they do), and a connection that cannot be made is
// passed on to on_unreachable. The loop runs on the test's thread, bounded.
#include "proxy/runtime/main_loop.h"

#include <event2/buffer.h>
#include <gtest/gtest.h>

#include <csignal>
#include <memory>
#include <string>
#include <vector>

#include "bounded_wait.h"
#include "proxy/backends/backend.h"
#include "proxy/backends/reply_slot.h"
#include "proxy/support/clock.h"
#include "proxy/support/timer.h"
#include "scripted_server.h"

namespace memshard::proxy {
namespace {

using test::Answer;
using test::RefusingPort;
using test::ScriptedServer;

class MainLoopTest : public ::testing::Test {
 protected:
  MainLoopTest() { std::signal(SIGPIPE, SIG_IGN); }
  ~MainLoopTest() override {
    loop_.reset();
    event_base_free(base_);
  }
  bool run_until(const std::function<bool()>& done) {
    return test::run_until(
        base_, [this] { loop_->run(); }, done);
  }

  event_base* base_ = event_base_new();
  std::unique_ptr<MainLoop> loop_ = std::make_unique<MainLoop>(base_);
};

// One `version` request through a BackendServer on the main loop, as a
// health probe makes it.
struct VersionRequest final : SlotOwner {
  VersionRequest(MainLoop& loop, const AddressList& addresses)
      : server(loop, "probe", addresses, ServerSettings{"alpha", 5000, 1, 0, 1024 * 1024, nullptr},
               std::make_shared<ServerStats>(), std::make_shared<PoolStats>()) {}
  // False when the server is in its reconnect back-off.
  bool send(MainLoop& loop) {
    BackendConn* conn = server.connection_for(0);
    if (conn == nullptr) return false;
    slot.reset();
    slot.set_owner(this);
    slot.expect();
    slot.add_fragment();
    evbuffer_add(conn->output(), "version\r\n", 9);
    conn->enqueue(BackendOp{&slot, 0, ReplyMode::single, loop.now_usec()});
    return true;
  }
  void on_slot_complete() override {
    completed = true;
    const size_t n = evbuffer_get_length(slot.reply());
    reply.resize(n);
    evbuffer_copyout(slot.reply(), reply.data(), n);
  }

  ReplySlot slot;  // before `server`: its operations point here
  BackendServer server;
  bool completed = false;
  std::string reply;
};

TEST_F(MainLoopTest, RunEndsWhenTheLoopIsAskedToExit) {
  int fired = 0;
  Timer exit_timer(base_, [&] {
    ++fired;
    event_base_loopexit(base_, nullptr);
  });
  exit_timer.arm_ms(1);
  loop_->run();
  EXPECT_EQ(fired, 1);
}

TEST_F(MainLoopTest, RunEndsWhenTheLoopIsBroken) {
  int fired = 0;
  // A repeating timer: the loop would run forever unless run() ends on the
  // break.
  Timer break_timer(
      base_,
      [&] {
        ++fired;
        event_base_loopbreak(base_);
      },
      true);
  break_timer.arm_ms(1);
  loop_->run();
  EXPECT_EQ(fired, 1);
}

TEST_F(MainLoopTest, TheClockIsReadOncePerIteration) {
  uint64_t first = 0, again = 0, next_iteration = 0;
  Timer later(base_, [&] {
    next_iteration = loop_->now_usec();
    event_base_loopexit(base_, nullptr);
  });
  Timer now(base_, [&] {
    first = loop_->now_usec();
    // Time passes inside the callback; the iteration's time does not.
    const uint64_t until = monotonic_usec() + 2000;
    for (int i = 0; i < 100'000'000 && monotonic_usec() <= until; ++i) {
    }
    again = loop_->now_usec();
    later.arm_usec(0);
  });
  now.arm_usec(0);
  loop_->run();
  ASSERT_NE(first, 0u);
  EXPECT_EQ(again, first);
  EXPECT_GT(next_iteration, first) << "the next iteration kept the old time";
}

TEST_F(MainLoopTest, ARequestWrittenInACallbackLeavesAtTheEndOfTheIteration) {
  ScriptedServer server([](const std::string& line) -> Answer {
    return line == "version" ? "VERSION 1.6.99\r\n" : "ERROR\r\n";
  });
  VersionRequest request(*loop_, resolve_addresses("127.0.0.1", server.port(), false));
  Timer send_soon(base_, [&] { ASSERT_TRUE(request.send(*loop_)); });
  send_soon.arm_usec(0);
  ASSERT_TRUE(run_until([&] { return request.completed; })) << "the request never left";
  EXPECT_EQ(request.reply, "VERSION 1.6.99\r\n");
  EXPECT_EQ(request.slot.status(), proto::ReplyStatus::version);
  EXPECT_EQ(server.lines(), 1u);
}

TEST_F(MainLoopTest, AConnectionThatCannotBeMadeIsReportedUnreachable) {
  RefusingPort refusing;
  std::vector<std::string> unreachable;
  loop_->on_unreachable = [&](const std::string& pool, const std::string& identity) {
    unreachable.push_back(pool + "/" + identity);
  };
  VersionRequest request(*loop_, resolve_addresses("127.0.0.1", refusing.port(), false));
  Timer send_soon(base_, [&] { ASSERT_TRUE(request.send(*loop_)); });
  send_soon.arm_usec(0);
  ASSERT_TRUE(run_until([&] { return request.completed; }));
  EXPECT_NE(request.slot.status(), proto::ReplyStatus::version);
  ASSERT_EQ(unreachable.size(), 1u);
  EXPECT_EQ(unreachable.front(), "alpha/probe");
}

TEST_F(MainLoopTest, UnreachableWithoutAListenerIsDropped) {
  // Nothing set: the report goes nowhere, and nothing else happens.
  loop_->server_unreachable("alpha", "probe");
  loop_->server_failing("alpha", "probe");
  std::vector<std::string> heard;
  loop_->on_unreachable = [&](const std::string& pool, const std::string& identity) {
    heard.push_back(pool + "/" + identity);
  };
  loop_->server_failing("alpha", "probe");  // a probe never ejects
  loop_->server_unreachable("beta", "cache-1:11211");
  EXPECT_EQ(heard, std::vector<std::string>{"beta/cache-1:11211"});
}

}  // namespace
}  // namespace memshard::proxy
