// Repairs what servers may hold stale (proxy/backends/repair_log.h): deletes
// the recorded keys on their servers, and flushes a server whose log owes a
// flush. On the main thread, over connections of its own (BackendServer,
// as the health probes).
//   - Before re-admission: a server coming back from ejection is repaired
//     whole first (repair_before_readmission): every key recorded while it
//     was out, in passes until a pass finds nothing new, and a flush if
//     one is owed. Only then does it take reads again.
//   - In the background: every server in the ring with keys recorded (a
//     copy that missed a write, a write that failed) is repaired a little
//     later (kRepairDelay: a write that timed out may still be applied
//     meanwhile), batch by batch.
// Once a key is repaired on its home, the guest copies the entry names
// are recorded on their own servers, whose repair follows.
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "proxy/backends/backend.h"
#include "proxy/backends/repair_log.h"
#include "proxy/routes/topology.h"
#include "proxy/runtime/main_loop.h"
#include "proxy/support/timer.h"

namespace memshard::proxy {

// Settings of a connection the main thread makes to a server of `pool` (a
// health probe, a repair): the pool's timeout (1 s when it has none), TLS
// and record bound, one connection, never ejecting.
ServerSettings own_connection_settings(const Pool& pool);

class Repairer {
 public:
  // A recorded key is repaired in the background no sooner than this after
  // its record: a write that failed by timing out may reach the server
  // late, and the repair must come after it.
  static constexpr uint64_t kRepairDelayUsec = 1'000'000;
  // Keys per repair request (md ... q, then mn).
  static constexpr size_t kBatch = 200;

  explicit Repairer(MainLoop& loop);
  ~Repairer();
  Repairer(const Repairer&) = delete;
  Repairer& operator=(const Repairer&) = delete;

  // The topology in force (servers' addresses, timeouts, TLS), without
  // ejections.
  void set_topology(std::shared_ptr<const Topology> topology);
  // Repairs the ejected server whole, then calls done(true); done(false)
  // when the server failed meanwhile (it stays out). A job already running
  // for it is replaced.
  void repair_before_readmission(const std::string& pool, const std::string& identity,
                                 std::function<void(bool)> done);
  // Whether any server of `pool` is ejected, asked before releasing guest
  // copies (a key may still be read from its guest).
  std::function<bool(const std::string& pool)> pool_has_ejections;

 private:
  struct Job;
  using Key = std::pair<std::string, std::string>;  // pool, identity
  void tick();
  void start_background(RepairLog& log);
  void job_done(const Key& key, bool ok);
  std::unique_ptr<Job> make_job(const Key& key, const Pool& pool, const ServerInfo& info,
                                RepairLog& log);
  const ServerInfo* find_server(const Key& key, const Pool** pool) const;

  MainLoop& loop_;
  std::shared_ptr<const Topology> topology_;
  std::map<Key, std::unique_ptr<Job>> jobs_;
  std::vector<std::unique_ptr<Job>> finished_;  // freed on the loop's next turn
  Timer tick_;
  Timer free_finished_;
};

}  // namespace memshard::proxy
