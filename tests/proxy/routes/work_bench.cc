// What the route work mechanism costs per request (routes/work.h), against
// the mechanism it replaced: a heap object per request implementing
// SlotOwner by hand, with its own flags for "still inside send()" and a
// `delete this` at the end. Both send the same held request to the same
// fake servers and are answered the same way, so the difference is the
// mechanism: coroutine frame and awaiters against object and callbacks.
//
//   build/tests/proxy/work_bench --benchmark_repetitions=5
#include <benchmark/benchmark.h>

#include "proxy/routes/fanout_route.h"
#include "proxy/routes/key_route.h"
#include "proxy/routes/work.h"
#include "tests/proxy/routes/route_test_util.h"

namespace memshard::proxy::testing_fakes {
namespace {

class Bench : public RouteTest {
 public:
  using RouteTest::request;
  using RouteTest::route_request;
  void TestBody() override {}
  ReplySlot& fresh_client_slot() {
    for (ReplySlot* s : client_slots_) delete s;
    client_slots_.clear();
    return client_slot();
  }
  // Every op still owed: answered STORED, in the order sent.
  void answer_all() {
    for (auto& server : servers_) {
      for (SentOp& op : server.box.ops) {
        if (!op.answered) answer(op, "STORED\r\n");
      }
      server.box.ops.clear();
    }
  }
  ServerRoute r0_{servers_[0]}, r1_{servers_[1]}, r2_{servers_[2]};
};

// The replaced mechanism, as FanoutRoute::Copies was written.
class CallbackFanout final : public SlotOwner {
 public:
  CallbackFanout(std::vector<Route*> targets, RouteRequest& req, ReplySlot& client)
      : targets_(std::move(targets)), held_(req), client_(client) {}
  bool run() {
    slots_.reserve(targets_.size());
    for (Route* target : targets_) {
      ReplySlot* slot = held_.slots().acquire_slot(this);
      slots_.push_back(slot);
      sending_ = true;
      held_.send_copy(*target, *slot);
      sending_ = false;
    }
    return maybe_finish();
  }
  void on_slot_complete() override {
    if (!sending_) maybe_finish();
  }
  bool synchronous = true;

 private:
  bool maybe_finish() {
    if (slots_.size() < targets_.size()) return false;
    for (ReplySlot* s : slots_) {
      if (!s->complete()) return false;
    }
    ReplySlot* chosen = slots_.front();
    for (ReplySlot* s : slots_) {
      if (!proto::failed(s->status())) {
        chosen = s;
        break;
      }
    }
    evbuffer_add_buffer(client_.reply(), chosen->reply());
    for (ReplySlot* s : slots_) held_.slots().release_slot(s);
    ReplySlot& client = client_;
    const bool sync = synchronous;
    delete this;  // the mechanism being measured against; not in proxy/
    if (sync) {
      client.fragment_done_unreported();
    } else {
      client.fragment_done();
    }
    return true;
  }
  std::vector<Route*> targets_;
  HeldRequest held_;
  ReplySlot& client_;
  std::vector<ReplySlot*> slots_;
  bool sending_ = false;
};

void BM_FanoutOfThreeCoroutine(benchmark::State& state) {
  Bench b;
  FanoutRoute route({&b.r0_, &b.r1_, &b.r2_}, ReplyPolicy::first);
  for (auto _ : state) {
    b.request("set k 0 0 3", "abc\r\n");
    ReplySlot& slot = b.fresh_client_slot();
    RouteRequest req = b.route_request();
    route.send(req, slot);
    b.answer_all();
    if (!slot.complete()) state.SkipWithError("not complete");
  }
}
BENCHMARK(BM_FanoutOfThreeCoroutine);

void BM_FanoutOfThreeCallbacks(benchmark::State& state) {
  Bench b;
  std::vector<Route*> targets{&b.r0_, &b.r1_, &b.r2_};
  for (auto _ : state) {
    b.request("set k 0 0 3", "abc\r\n");
    ReplySlot& slot = b.fresh_client_slot();
    RouteRequest req = b.route_request();
    slot.expect();
    slot.add_fragment();
    auto* work = new CallbackFanout(targets, req, slot);
    if (!work->run()) work->synchronous = false;
    b.answer_all();
    if (!slot.complete()) state.SkipWithError("not complete");
  }
}
BENCHMARK(BM_FanoutOfThreeCallbacks);

// The floor: one request straight to a server, no composite at all.
void BM_PlainKeyRoute(benchmark::State& state) {
  Bench b;
  for (auto _ : state) {
    b.request("set k 0 0 3", "abc\r\n");
    ReplySlot& slot = b.fresh_client_slot();
    RouteRequest req = b.route_request();
    b.r0_.send(req, slot);
    b.answer_all();
    if (!slot.complete()) state.SkipWithError("not complete");
  }
}
BENCHMARK(BM_PlainKeyRoute);

}  // namespace
}  // namespace memshard::proxy::testing_fakes

BENCHMARK_MAIN();
