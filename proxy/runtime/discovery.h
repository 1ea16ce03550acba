// Pools whose servers come from DNS (servers_srv, servers_dns;
// docs/discovery.md). The main thread looks each pool's name up every
// discovery_refresh ms through c-ares (dns_client.h), on a grid of the wall
// clock that every instance shares (at each multiple of the period since
// the epoch), so instances that see the same records see them at the same
// moments. What a lookup found goes through the pool's damping
// (discovery_membership.h); a step it decides is handed to the proxy,
// which applies it as a reload of the config in force with the pool's new
// servers (and, with reload_warmup, a fleet switch at the step's moment).
// A member's new addresses (a pod that came back elsewhere under its name)
// are handed over at once: its place on the ring does not change.
//
// Identity: an SRV target and port ("memcached-0.memcached.cache.svc:11211"),
// whose addresses may change; for servers_dns each address and the port.
// Weights: SRV weight; only the records of the lowest priority number take
// part; a record of weight 0 is left out, unless every record has weight 0
// (then each counts as 1).
#pragma once

#include <event2/event.h>

#include <atomic>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

#include "conf/config.h"
#include "proxy/admin/stats_view.h"
#include "proxy/runtime/discovery_membership.h"
#include "proxy/runtime/dns_client.h"
#include "proxy/support/timer.h"
#include "proxy/transport/socket_address.h"

namespace memshard::proxy {

// What one lookup of a pool's name found.
struct DiscoveryAnswer {
  std::optional<Members> members;  // none: the lookup failed; empty: no records
  // By ServerEntry::address() ("host:port"): each member's addresses.
  std::map<std::string, AddressList> addresses;
  std::string error;               // why it failed or found nothing
  std::vector<std::string> notes;  // targets left out, and why
};

// The members an SRV answer makes (lowest priority number, weights as
// above), sorted; pure, for the tests.
Members srv_members(const std::vector<SrvRecord>& records, std::vector<std::string>* notes);

// "host:port" as conf's ServerEntry::address() writes it.
std::string entry_address(const DiscoveredMember& m);

class Discovery {
 public:
  struct Hooks {
    // A step to apply to `pool`: the proxy reloads the config in force with
    // fill()'s servers. False when the reload was refused.
    std::function<bool(const std::string& pool)> apply_step;
    // Members of `pool` whose addresses changed (no key moves).
    std::function<void(const std::string& pool)> addresses_changed;
  };
  // `dns_servers`: --dns-server values (empty: /etc/resolv.conf).
  Discovery(event_base* base, std::vector<std::string> dns_servers, Hooks hooks);
  ~Discovery();
  Discovery(const Discovery&) = delete;
  Discovery& operator=(const Discovery&) = delete;

  // At start and at every reload, on the main thread: gives each discovery
  // pool of `config` its servers (the members in force; a pool whose name
  // is new is looked up now, blocking for a few seconds at most) and puts
  // their addresses in `known`. Nothing is kept until commit(). False, with
  // `error`, when a new name has no usable answer.
  bool fill(conf::Config& config, std::map<std::string, AddressList>& known, std::string& error);
  // The config `fill` filled is in force: keeps what it looked up, drops
  // the pools it no longer has, and sets the lookup timers.
  void commit(const conf::Config& config);

  // The addresses of `pool`'s members, by ServerEntry::address(); null
  // when it is not a discovery pool.
  const std::map<std::string, AddressList>* addresses(const std::string& pool) const {
    auto it = pools_.find(pool);
    return it == pools_.end() ? nullptr : &it->second->addresses;
  }
  // Per discovery pool, for the stats (any thread).
  std::map<std::string, DiscoveryStatus> status() const;
  const std::string& servers_text() const { return client_->servers_text(); }

 private:
  struct PoolState {
    conf::DiscoveryConfig source;
    std::unique_ptr<DiscoveryMembership> membership;
    std::map<std::string, AddressList> addresses;  // of members, by entry_address
    int64_t switch_at_ms = 0;                      // the last step's fleet switch (0: none)
    int64_t lead_ms = 0, hold_ms = 0, window_ms = 0;
    double max_change = 0;
    std::unique_ptr<Timer> timer;
    int64_t next_ms = 0;  // the grid moment the timer is for
    bool in_flight = false;
    bool failing = false;    // the last lookup failed: said once a streak
    std::string last_error;  // why it failed
    uint64_t lookups = 0, failures = 0, changes = 0, held = 0;
    int64_t last_change_ms = 0;    // wall clock of the last applied change
    int64_t pending_since_ms = 0;  // a change waits since (0: none)
    std::string pending_text;
  };

  // Looks `source` up through `client`; `done` gets the answer.
  void lookup(DnsClient& client, const conf::DiscoveryConfig& source,
              std::function<void(DiscoveryAnswer)> done);
  // Sets the pool's timer for the next multiple of its period on the wall
  // clock (`fired`: from the timer's own callback).
  void arm(const std::string& pool, PoolState& s, bool fired = false);
  void on_tick(const std::string& pool);
  void on_answer(const std::string& pool, int64_t at_ms, DiscoveryAnswer answer);
  // The membership decided a step (from `before`): the proxy applies it.
  void apply(const std::string& pool, PoolState& s, const Members& before);
  void publish(const std::string& pool, const PoolState& s);
  // The settings of `pc`'s damping.
  static DiscoveryMembership::Settings settings_of(const conf::PoolConfig& pc);

  event_base* base_;
  std::vector<std::string> dns_servers_;
  Hooks hooks_;
  std::unique_ptr<DnsClient> client_;
  std::map<std::string, std::unique_ptr<PoolState>> pools_;
  std::map<std::string, std::unique_ptr<PoolState>> staged_;  // fill() -> commit()
  mutable std::mutex status_mu_;
  std::map<std::string, DiscoveryStatus> status_;
};

}  // namespace memshard::proxy
