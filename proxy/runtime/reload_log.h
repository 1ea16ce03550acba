// The last reloads and their outcome (and the start), for the status page:
// kept on the main thread as they happen, read by stats from any thread.
#pragma once

#include <cstddef>
#include <deque>
#include <mutex>
#include <string>
#include <utility>
#include <vector>

#include "proxy/admin/stats_view.h"

namespace memshard::proxy {

class ReloadLog {
 public:
  // Records kept: a page shows the last few; older ones are in the log.
  static constexpr size_t kKept = 10;

  void started(uint64_t generation);
  void applied(uint64_t generation, std::vector<std::pair<std::string, double>> moved);
  // `generation`: the one still in force.
  void refused(uint64_t generation, std::string reason);
  // Oldest first.
  std::vector<ReloadRecord> records() const;

 private:
  void add(ReloadRecord r);

  mutable std::mutex mu_;
  std::deque<ReloadRecord> records_;
};

}  // namespace memshard::proxy
