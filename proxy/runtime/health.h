// auto_eject_hosts: which servers are out of their pool's ring, and the
// probes that bring them back.
//
// Workers count consecutive failures of a server locally and report once a
// streak reaches the pool's server_failure_limit. The main thread then
// ejects the server from the ring of every worker at once (so all workers
// agree where a key lives) and, every server_retry_timeout, probes it with
// `version`: it is re-admitted only once it answers, so a dead host is
// never retried by live traffic (twemproxy sends real requests to it).
// Before it is, the repairer deletes from it every key written while it
// was out (repairer.h), so that it serves no value those writes replaced.
//
// At most auto_eject_max of a pool's servers are out at once: past the
// cap a failing server stays in (its keys fail fast), and is counted as
// held by the cap. A server that fails again within server_flap_time of
// its re-admission flaps: its next probe waits twice as long as the last.
#pragma once

#include <event2/buffer.h>
#include <event2/event.h>

#include <atomic>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include "proxy/routes/topology.h"
#include "proxy/runtime/main_loop.h"
#include "proxy/runtime/repairer.h"
#include "proxy/support/mailbox.h"
#include "proxy/support/timer.h"

namespace memshard::proxy {

class ServerHealth {
 public:
  // `on_change` runs on the main thread whenever the set of ejected servers
  // changes; it installs with_ejections(...) on the workers.
  ServerHealth(MainLoop& loop, std::function<void()> on_change);
  ~ServerHealth();
  ServerHealth(const ServerHealth&) = delete;
  ServerHealth& operator=(const ServerHealth&) = delete;

  // Thread-safe: a worker saw `server_failure_limit` failures in a row.
  void report_failing(const std::string& pool, const std::string& identity);

  // Main thread: the topology now in force (after a load or reload);
  // ejections of servers no longer in it are forgotten.
  void set_topology(std::shared_ptr<const Topology> base);
  // `base` with every ejected server out of its pool's ring.
  std::shared_ptr<const Topology> with_ejections() const;

  // Thread-safe readers.
  uint64_t ejections() const { return ejections_.load(std::memory_order_relaxed); }
  uint64_t readmissions() const { return readmissions_.load(std::memory_order_relaxed); }
  // When the server was ejected (microseconds since the epoch, as
  // twemproxy reports it), 0 when it is in the ring.
  uint64_t ejected_at(const std::string& pool, const std::string& identity) const;
  uint64_t pool_ejections(const std::string& pool) const;
  // Whether a probe of the ejected server is out now.
  bool probing(const std::string& pool, const std::string& identity) const;
  // Servers of the pool failing now and kept in the ring by auto_eject_max.
  uint64_t held_by_cap(const std::string& pool) const;
  // Servers of the pool that are out now.
  size_t ejected_count(const std::string& pool) const;

 private:
  using Key = std::pair<std::string, std::string>;  // pool, server identity
  struct Probe;
  void on_report(const Key& key);
  void eject(const Key& key);
  void schedule_probe(const Key& key);
  void probe_done(const Key& key, bool healthy);
  void readmit(const Key& key);
  // Whether ejecting one more server of `pool` stays within auto_eject_max.
  bool within_cap(const Pool& pool) const;
  size_t ejected_count_locked(const std::string& pool) const;
  int probe_interval_ms(const Key& key) const;
  void set_probing(const Key& key, bool out);
  const Pool* pool_of(const Key& key) const;
  void eject_pending(PendingSwitch& pending, const std::string& pool) const;

  event_base* base_;
  MainLoop& loop_;  // where probes connect from
  std::function<void()> on_change_;
  Mailbox mailbox_;  // the workers' reports

  // Written on the main thread; read by stats from any thread.
  mutable std::mutex state_mu_;
  std::shared_ptr<const Topology> base_topology_;  // read unlocked on the main thread
  std::set<Key> probing_;
  std::map<Key, uint64_t> ejected_;  // -> when it was ejected (us since the epoch)
  // Flap damping: per server, when it was last re-admitted (monotonic us)
  // and how many times in a row it failed again soon after.
  struct Flaps {
    uint64_t readmitted_usec = 0;
    uint32_t count = 0;
  };
  std::map<Key, Flaps> flaps_;
  // Servers reported failing that the cap kept in: -> when last reported
  // (monotonic us); forgotten when not reported again for a while.
  std::map<Key, uint64_t> capped_;
  std::map<std::string, uint64_t> pool_ejections_;
  std::map<Key, std::unique_ptr<Probe>> probes_;
  // Probes that answered, freed on the loop's next turn: the answer comes
  // inside one of the probe's own callbacks.
  std::vector<std::unique_ptr<Probe>> answered_;
  Timer free_answered_;
  Repairer repairer_;  // repairs a server before its re-admission
  std::atomic<uint64_t> ejections_{0};
  std::atomic<uint64_t> readmissions_{0};
};

}  // namespace memshard::proxy
