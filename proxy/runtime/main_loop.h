// The main thread's event loop as the layers below see it. Health probes
// talk to ejected servers through a BackendServer here, and the stats port
// serves through Streams here, with the same sockets, buffers and reply
// reading as a worker's: one socket stack in the process.
#pragma once

#include <event2/event.h>

#include <cstdint>
#include <functional>
#include <string>

#include "proxy/backends/context.h"
#include "proxy/support/stats.h"
#include "proxy/transport/stream.h"

namespace memshard::proxy {

class MainLoop final : public BackendContext {
 public:
  // One writev per socket: the main loop writes a probe or a stats reply
  // now and then, and batching them would gain nothing (and take an
  // io_uring ring of its own).
  explicit MainLoop(event_base* base)
      : base_(base), streams_(base, StreamLoop::Writes::one_by_one) {}

  // Runs until event_base_loopexit: one iteration, then the writes that it
  // produced, as a worker runs.
  void run();

  event_base* base() const override { return base_; }
  StreamLoop& streams() override { return streams_; }
  uint64_t now_usec() override;
  // Probes' counters: not the workers', so not in the stats.
  WorkerStats& stats() override { return stats_; }
  // A probe never ejects (its server is out already).
  void server_failing(const std::string&, const std::string&) override {}
  void server_unreachable(const std::string& pool, const std::string& identity) override {
    if (on_unreachable) on_unreachable(pool, identity);
  }
  // A probe that cannot connect: the server's name may have moved.
  std::function<void(const std::string&, const std::string&)> on_unreachable;

 private:
  event_base* base_;
  StreamLoop streams_;
  WorkerStats stats_;
  uint64_t now_usec_ = 0;
};

}  // namespace memshard::proxy
