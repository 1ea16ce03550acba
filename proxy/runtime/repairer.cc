#include "proxy/runtime/repairer.h"

#include <algorithm>
#include <limits>

#include "proxy/backends/backend.h"
#include "proxy/backends/reply_slot.h"
#include "proxy/protocol/own_requests.h"
#include "proxy/support/clock.h"
#include "proxy/support/log.h"

namespace memshard::proxy {

namespace {

// How often the background pass looks for logs to repair.
constexpr uint64_t kTickMs = 200;
// Passes over a returning server's log before it is re-admitted: each
// takes what was recorded during the last (writes still go elsewhere while
// it runs); the read gate covers what the last leaves.
constexpr int kMaxPasses = 4;

}  // namespace

// One repair in progress: a connection of its own to the server, one
// request at a time (a flush, or a batch of quiet deletes and an mn).
struct Repairer::Job final : public SlotOwner {
  Repairer* owner = nullptr;
  Key key;
  RepairLog* log = nullptr;
  bool readmission = false;
  std::function<void(bool)> done;
  ReplySlot slot;  // before `server`: its operations point here
  std::unique_ptr<BackendServer> server;
  std::vector<RepairLog::Item> items;
  size_t next = 0, batch_end = 0;
  uint64_t after_seq = 0;  // readmission: the next pass takes entries past this
  int passes = 0;
  bool flushing = false;
  uint64_t flush_seq = 0;
  bool finished = false;

  void step() {
    if (log->flush_owed()) return send_flush();
    if (next < items.size()) return send_batch();
    if (!readmission || passes >= kMaxPasses) return finish(true);
    // A new pass: what was recorded since the last one began.
    items.clear();
    next = 0;
    const uint64_t seq = log->sequence();
    log->take(std::numeric_limits<size_t>::max(), after_seq, std::numeric_limits<uint64_t>::max(),
              true, items);
    after_seq = seq;
    ++passes;
    if (items.empty()) return finish(true);
    send_batch();
  }

  BackendConn* connection() {
    server->forget_backoff();
    return server->connection_for(0);
  }

  void send(BackendConn& conn, const std::string& text, ReplyMode mode) {
    slot.reset();
    slot.set_owner(this);
    slot.expect();
    slot.add_fragment();
    evbuffer_add(conn.output(), text.data(), text.size());
    conn.enqueue(BackendOp{&slot, 0, mode, owner->loop_.now_usec()});
  }

  void send_flush() {
    BackendConn* conn = connection();
    if (conn == nullptr) return finish(false);
    flushing = true;
    flush_seq = log->sequence();
    log_warn(
        "pool '%s': server %s may hold values it missed and the repair record cannot name "
        "(it overflowed, or a flush_all missed it): flushing it%s",
        key.first.c_str(), key.second.c_str(), readmission ? " before it is re-admitted" : "");
    send(*conn, "flush_all\r\n", ReplyMode::broadcast);
  }

  void send_batch() {
    BackendConn* conn = connection();
    if (conn == nullptr) return finish(false);
    std::string text;
    batch_end = std::min(items.size(), next + kBatch);
    for (size_t i = next; i < batch_end; ++i) {
      if (!proto::append_delete(items[i].key, true, text)) continue;
    }
    proto::append_noop(text);
    send(*conn, text, ReplyMode::quiet_drop);
  }

  void on_slot_complete() override {
    const bool failed =
        slot.fragment(0).failed || slot.status() == proto::ReplyStatus::server_error;
    if (failed) return finish(false);
    if (flushing) {
      flushing = false;
      log->flushed(flush_seq);
      // What the flush removed needs no delete.
      items.clear();
      next = 0;
      return step();
    }
    for (size_t i = next; i < batch_end; ++i) {
      // Before re-admission the guests still serve: their entries stay
      // (released once the server is back, ServerHealth).
      for (RepairLog* guest : log->repaired(items[i], !readmission)) guest->record(items[i].key);
    }
    next = batch_end;
    step();
  }

  void finish(bool ok) {
    if (finished) return;
    finished = true;
    owner->job_done(key, ok);  // may free this, on the loop's next turn
  }
};

Repairer::Repairer(MainLoop& loop)
    : loop_(loop),
      tick_(
          loop.base(), [this] { tick(); }, true),
      free_finished_(loop.base(), [this] { finished_.clear(); }) {
  tick_.arm_ms(kTickMs);
}

Repairer::~Repairer() {
  jobs_.clear();
  finished_.clear();
}

void Repairer::set_topology(std::shared_ptr<const Topology> topology) {
  topology_ = std::move(topology);
}

const ServerInfo* Repairer::find_server(const Key& key, const Pool** pool_out) const {
  if (!topology_) return nullptr;
  const Pool* pool = topology_->find_pool(key.first);
  if (pool == nullptr) return nullptr;
  *pool_out = pool;
  for (const ServerInfo& s : pool->servers) {
    if (s.identity == key.second) return &s;
  }
  for (const PastRing& past : pool->past) {
    for (const ServerInfo& s : past.servers) {
      if (s.identity == key.second) return &s;
    }
  }
  return nullptr;
}

ServerSettings own_connection_settings(const Pool& pool) {
  return ServerSettings{pool.config.name,
                        pool.config.timeout_ms.value_or(1000),
                        1,
                        0,
                        pool.config.item_size_max,
                        pool.server_tls,
                        0,
                        size_t{pool.config.repair_record_mb} << 20};
}

// A job repairing `info` over a connection of its own, with the pool's
// timeout and TLS, as the health probes connect.
std::unique_ptr<Repairer::Job> Repairer::make_job(const Key& key, const Pool& pool,
                                                  const ServerInfo& info, RepairLog& log) {
  auto job = std::make_unique<Job>();
  job->owner = this;
  job->key = key;
  job->log = &log;
  job->server = std::make_unique<BackendServer>(
      loop_, info.identity, info.addresses, own_connection_settings(pool),
      std::make_shared<ServerStats>(), std::make_shared<PoolStats>());
  return job;
}

void Repairer::repair_before_readmission(const std::string& pool, const std::string& identity,
                                         std::function<void(bool)> done) {
  const Key key{pool, identity};
  if (auto it = jobs_.find(key); it != jobs_.end()) {
    // A background job of a server that was ejected meanwhile: replaced.
    it->second->finished = true;
    finished_.push_back(std::move(it->second));
    jobs_.erase(it);
    free_finished_.fire_soon();
  }
  const Pool* p = nullptr;
  const ServerInfo* info = find_server(key, &p);
  RepairLog& log = RepairLog::of(pool, identity);
  if (info == nullptr || (log.keys() == 0 && !log.flush_owed())) return done(true);
  std::unique_ptr<Job> job = make_job(key, *p, *info, log);
  job->readmission = true;
  job->done = std::move(done);
  log_notice(
      "pool '%s': server %s answered a probe; repairing %llu key(s) recorded for it%s "
      "before it is re-admitted",
      pool.c_str(), identity.c_str(), static_cast<unsigned long long>(log.keys()),
      log.flush_owed() ? " and flushing it" : "");
  Job* j = job.get();
  jobs_[key] = std::move(job);
  j->step();
}

void Repairer::tick() {
  for (RepairLog* log : RepairLog::all()) {
    if (log->keys() == 0 && !log->flush_owed()) continue;
    if (log->out()) continue;  // repaired whole before its re-admission
    if (jobs_.contains(Key{log->pool(), log->identity()})) continue;
    start_background(*log);
  }
}

void Repairer::start_background(RepairLog& log) {
  const Key key{log.pool(), log.identity()};
  const Pool* p = nullptr;
  const ServerInfo* info = find_server(key, &p);
  if (info == nullptr) return;  // not in the config: nothing reaches it, nothing to repair
  const bool release = !pool_has_ejections || !pool_has_ejections(log.pool());
  std::vector<RepairLog::Item> items;
  const uint64_t now = monotonic_usec();
  log.take(kBatch * 5, 0, now > kRepairDelayUsec ? now - kRepairDelayUsec : 0, release, items);
  if (items.empty() && !log.flush_owed()) return;
  std::unique_ptr<Job> job = make_job(key, *p, *info, log);
  job->items = std::move(items);
  Job* j = job.get();
  jobs_[key] = std::move(job);
  j->step();
}

void Repairer::job_done(const Key& key, bool ok) {
  auto it = jobs_.find(key);
  if (it == jobs_.end()) return;
  std::unique_ptr<Job> job = std::move(it->second);
  jobs_.erase(it);
  if (job->readmission) {
    if (ok) {
      log_notice("pool '%s': server %s repaired (%d pass(es)); %llu key(s) still recorded",
                 key.first.c_str(), key.second.c_str(), job->passes,
                 static_cast<unsigned long long>(job->log->keys()));
    } else {
      log_warn("pool '%s': server %s failed during its repair; it stays out", key.first.c_str(),
               key.second.c_str());
    }
  }
  std::function<void(bool)> done = std::move(job->done);
  finished_.push_back(std::move(job));
  free_finished_.fire_soon();
  if (done) done(ok);
}

}  // namespace memshard::proxy
