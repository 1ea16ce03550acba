// A fixture for route tests: three fake servers, a placement over them,
// and requests made the way a client connection makes them (a real line
// parsed by proto::parse_request_line, its bytes at the front of an input
// buffer); and FakePool, another pool as a routing pool, a gutter or a
// shadow enters it.
#pragma once

#include <event2/buffer.h>
#include <gtest/gtest.h>

#include <array>
#include <string>
#include <string_view>

#include "proxy/protocol/request_parser.h"
#include "proxy/routes/broadcast_route.h"
#include "proxy/routes/key_route.h"
#include "proxy/routes/pool_entry.h"
#include "proxy/routes/request_scratch.h"
#include "proxy/routes/route.h"
#include "proxy/routes/split_route.h"
#include "proxy/support/stats.h"
#include "tests/proxy/routes/route_fakes.h"

namespace memshard::proxy::testing_fakes {

// Another pool, as a routing pool, a gutter or a shadow enters it
// (PoolRoutes, pool_entry.h): one fake server holding every key, under
// the plain routes (key, split multi-get, broadcast flush_all), with
// counters of its own.
struct FakePool {
  FakePool() = default;
  FakePool(const FakePool&) = delete;
  FakePool& operator=(const FakePool&) = delete;

  PoolRoutes routes() { return PoolRoutes{&key, &multi_get, &all, &stats}; }
  std::deque<SentOp>& ops() { return server.box.ops; }

  FakeServer server;
  OneServerPlacement placement{server};
  KeyRoute key{placement};
  SplitRoute multi_get{placement};
  BroadcastRoute all{placement};
  PoolStats stats;
};

class RouteTest : public testing::Test {
 protected:
  RouteTest() : in_(evbuffer_new()) {}
  ~RouteTest() override {
    evbuffer_free(in_);
    for (ReplySlot* s : client_slots_) delete s;
  }

  // Parses `line` and puts line, "\r\n" and `data` in the input, followed
  // by `after` (the client's next request, which the route must not touch).
  void request(std::string_view line, std::string_view data = {}, std::string_view after = {},
               proto::Limits limits = {}) {
    line_.assign(line);
    proto::parse_request_line(line_, limits, request_);
    header_bytes_ = line_.size() + 2;
    evbuffer_drain(in_, evbuffer_get_length(in_));
    std::string bytes = line_ + "\r\n" + std::string(data);
    EXPECT_EQ(request_.data_bytes, data.size()) << "test data does not match the line";
    evbuffer_add(in_, bytes.data(), bytes.size());
    evbuffer_add(in_, after.data(), after.size());
    sent_bytes_ = bytes;
  }

  RouteRequest route_request() {
    return RouteRequest{request_, in_,      header_bytes_, line_,         kAffinity,
                        kNowUsec, scratch_, slots_,        worker_stats_, pool_stats_};
  }

  // A slot owed to the client, as ClientConn::new_slot makes it.
  ReplySlot& client_slot() {
    auto* s = new ReplySlot();
    s->set_owner(&owner_);
    client_slots_.push_back(s);
    return *s;
  }

  std::string input() const { return copy_all(in_); }

  static constexpr uint64_t kAffinity = 42;
  static constexpr uint64_t kNowUsec = 1'000'000;

  std::array<FakeServer, 3> servers_;
  FakePlacement placement_{{&servers_[0], &servers_[1], &servers_[2]}};
  FakeSlots slots_;
  FakeOwner owner_;
  RequestScratch scratch_;
  WorkerStats worker_stats_;
  PoolStats pool_stats_;
  std::string line_;
  proto::Request request_;
  evbuffer* in_;
  size_t header_bytes_ = 0;
  std::string sent_bytes_;  // the request's bytes as the client sent them
  std::vector<ReplySlot*> client_slots_;
};

// A test of routes that keep work alive (work.h): at its end every slot
// is given back and every held request has ended.
class WorkRouteTest : public RouteTest {
 protected:
  ~WorkRouteTest() override {
    EXPECT_EQ(slots_.outstanding, 0) << "a slot was not given back";
    EXPECT_EQ(life_.held_requests, 0u) << "a route's work did not end";
  }

  template <typename R>
  void send(R& route, ReplySlot& slot) {
    RouteRequest req = route_request();
    route.send(req, slot);
  }

  RouteLife life_;
};

}  // namespace memshard::proxy::testing_fakes
