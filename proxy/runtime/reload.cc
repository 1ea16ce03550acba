// Reloading the configuration while serving: the new config is loaded,
// resolved and its listeners bound off the request path; only when all of
// that succeeded do the workers switch, each between two requests.

#include <set>
#include <stdexcept>

#include "ketama/analysis.h"
#include "proxy/routes/pool_carry.h"
#include "proxy/runtime/proxy.h"
#include "proxy/runtime/ring_warnings.h"
#include "proxy/support/clock.h"
#include "proxy/support/log.h"

namespace memshard::proxy {

bool Proxy::reload() {
  log_notice("reloading configuration from %s", options_.config_file.c_str());
  conf::LoadResult loaded = conf::load_config_file(options_.config_file, options_.load);
  if (!loaded.errors.empty()) {
    for (const auto& e : loaded.errors) log_error("reload refused: %s", e.to_string().c_str());
    std::string why = loaded.errors.front().to_string();
    if (loaded.errors.size() > 1)
      why += " (and " + std::to_string(loaded.errors.size() - 1) + " more error(s))";
    return refuse_reload(std::move(why));
  }
  return apply_config(*loaded.config);
}

bool Proxy::apply_discovery(const std::string& pool) {
  if (drain_timer_ != nullptr) {
    // Exiting: the listeners are closed, and a reload would open them.
    log_notice("pool '%s': draining; DNS discovery's change is not applied", pool.c_str());
    return false;
  }
  log_notice("reloading configuration: DNS discovery changes the servers of pool '%s'",
             pool.c_str());
  if (!config_) return false;
  return apply_config(*config_);
}

// The path of every reload, from SIGHUP, --watch or DNS discovery: `file`
// is the config file as loaded, which discovery gives its pools' servers.
bool Proxy::apply_config(const conf::Config& file) {
  conf::Config config = file;
  std::map<std::string, AddressList> known;
  if (std::string why; !discovery_->fill(config, known, why)) {
    log_error("reload refused: %s", why.c_str());
    return refuse_reload(std::move(why));
  }
  std::shared_ptr<const Topology> next;
  std::vector<std::string> notes;
  StatsTokenSource token;
  const uint64_t now = monotonic_usec();
  try {
    token = stats_token_of(config);
    next = build_topology(config, generation() + 1, topology_.get(), now, std::nullopt, &notes,
                          &known);
  } catch (const std::exception& e) {
    log_error("reload refused: %s", e.what());
    return refuse_reload(e.what());
  }
  if (std::string why; !listeners_->swap(*next, why)) return refuse_reload(std::move(why));
  for (const auto& w : ring_warnings(config)) log_warn("%s", w.c_str());
  std::vector<std::pair<std::string, double>> moved = log_changes(*next);
  for (const std::string& n : notes) log_notice("%s", n.c_str());
  discovery_->commit(config);
  if (!config_ || &file != &*config_) config_ = file;
  health_->set_topology(next);
  names_->set_topology(*next);
  const std::shared_ptr<const Topology> before = topology_;
  topology_ = next;
  note_switches(*before, now);
  install_on_workers();
  use_stats_token(std::move(token), false);
  listeners_->set_budget(*topology_, workers_.size(), false);
  generation_.store(next->generation, std::memory_order_relaxed);
  reloads_.fetch_add(1, std::memory_order_relaxed);
  reload_log_.applied(next->generation, std::move(moved));
  arm_warmup_timer();
  start_migrations();
  log_notice("configuration generation %llu in force",
             static_cast<unsigned long long>(next->generation));
  return true;
}

bool Proxy::refuse_reload(std::string why) {
  reload_failures_.fetch_add(1, std::memory_order_relaxed);
  reload_log_.refused(generation(), std::move(why));
  return false;
}

std::vector<std::pair<std::string, double>> Proxy::log_changes(const Topology& next) const {
  std::vector<std::pair<std::string, double>> moved;
  for (const Pool& pool : next.pools) {
    const Pool* old = topology_->find_pool(pool.config.name);
    if (old == nullptr) {
      log_notice("pool '%s' added with %zu server(s)", pool.config.name.c_str(),
                 pool.servers.size());
      continue;
    }
    // A pool that only routes to others places no key of its own: no
    // keyspace to report (its ring is empty on both sides).
    if (old->servers.empty() && pool.servers.empty() && !pool.pending) continue;
    std::set<std::string> before, after_ids;
    // A scheduled switch moves keys at its moment, not now.
    const ketama::Ring& after = pool.pending ? pool.pending->ring : pool.ring;
    if (pool.pending) {
      for (const auto& s : pool.pending->servers) after_ids.insert(s.identity);
    } else {
      for (const auto& s : pool.servers) after_ids.insert(s.identity);
    }
    for (const auto& s : old->servers) before.insert(s.identity);
    std::string came, went;
    for (const auto& s : after_ids) {
      if (!before.contains(s)) came += " " + s;
    }
    for (const auto& s : before) {
      if (!after_ids.contains(s)) went += " " + s;
    }
    ketama::RingDiff d = ketama::diff(old->ring, after);
    moved.emplace_back(pool.config.name, d.moved);
    std::string warmup = " reload_warmup: off";
    if (pool.config.reload_warmup_ms > 0) {
      warmup = " reload_warmup: " + std::to_string(pool.config.reload_warmup_ms) + " ms, " +
               std::to_string(pool.past.size()) + " past config(s) looked up";
      if (pool.config.reload_migrate_rate > 0) {
        warmup += ", migrating at " + std::to_string(pool.config.reload_migrate_rate) + " keys/s";
      }
    }
    const std::string when =
        pool.pending ? " at " + utc_text(pool.pending->at_unix_ms) + " (reload_switch_at)" : "";
    log_notice("pool '%s': %.4f%% of the keyspace changes server%s; added:%s; removed:%s;%s",
               pool.config.name.c_str(), d.moved * 100.0, when.c_str(),
               came.empty() ? " none" : came.c_str(), went.empty() ? " none" : went.c_str(),
               warmup.c_str());
  }
  for (const Pool& pool : topology_->pools) {
    if (next.find_pool(pool.config.name) == nullptr) {
      log_notice("pool '%s' removed; its clients close after their pending replies",
                 pool.config.name.c_str());
    }
  }
  return moved;
}

// A reload ends the walks of the last one (their windows go on, their
// keys are still found by reads) and starts one per pool that moved keys.
void Proxy::start_migrations(const std::set<std::string>* only) {
  const auto chosen = [&](const std::string& pool) {
    return only == nullptr || only->contains(pool);
  };
  std::vector<std::unique_ptr<Migration>> old, kept;
  {
    std::lock_guard<std::mutex> lock(migrations_mu_);
    for (auto& m : migrations_) (chosen(m->pool_name()) ? old : kept).push_back(std::move(m));
    migrations_.clear();
  }
  for (auto& m : old) m->stop();
  old.clear();  // joins: each wait of theirs is bounded (migration.h)
  std::vector<std::unique_ptr<Migration>> started = std::move(kept);
  for (const Pool& pool : topology_->pools) {
    if (!chosen(pool.config.name)) continue;
    if (pool.config.reload_migrate_rate == 0 || pool.past.empty()) continue;
    if (pool.server_tls) {
      // The walk's blocking sockets speak plain text only.
      log_warn(
          "pool '%s': reload_migrate_rate: no background migration to servers over TLS; "
          "reads of moved keys are still looked up where they were",
          pool.config.name.c_str());
      continue;
    }
    started.push_back(std::make_unique<Migration>(pool));
  }
  std::lock_guard<std::mutex> lock(migrations_mu_);
  migrations_ = std::move(started);
}

std::map<std::string, MigrationStatus> Proxy::migrations() const {
  std::lock_guard<std::mutex> lock(migrations_mu_);
  std::map<std::string, MigrationStatus> out;
  for (const auto& m : migrations_) out[m->pool_name()] = m->progress();
  return out;
}

}  // namespace memshard::proxy
