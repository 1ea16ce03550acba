// A pool of the routing view (topology.h) as values: its config, ring and
// servers, the rings of past configs a reload's warm-up still looks keys up
// in, and a scheduled switch's waiting placement. Immutable once in a
// topology.
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "conf/config.h"
#include "ketama/ring.h"
#include "proxy/routes/warm_guard.h"
#include "proxy/transport/socket_address.h"
#include "proxy/transport/tls_context.h"

namespace memshard::proxy {

struct ServerInfo {
  // Backend identity: "host:port" or the socket path. Two configs naming
  // the same identity share backend connections across a reload.
  std::string identity;
  // How stats name the server: twemproxy's server name (its ring name in
  // twemproxy mode), else the explicit name or the address.
  std::string stats_name;
  AddressList addresses;  // never empty
  // The host is a DNS name (not an IP literal or a socket path), so its
  // addresses can change while memshard runs and are looked up again.
  bool named = false;
  std::string host;
  uint16_t port = 0;
};

// A ring the pool had before a reload, kept while its reload_warmup window
// lasts: a key that moved is looked for where this ring put it.
struct PastRing {
  ketama::Ring ring;                // every server of that config
  std::vector<ServerInfo> servers;  // same order as ring.servers()
  std::vector<bool> live;           // per server, false while ejected (empty: all)
  uint64_t until_usec = 0;          // monotonic clock: the window ends then
  uint64_t generation = 0;          // the config it was
  size_t replicas = 1;              // copies per key in that config
  // reload_switch_at: the placement a scheduled switch waits for, shown to
  // the routes of the placement in force as a ring to look keys up on and
  // delete them from, never to copy them from (it is not past, it is next).
  bool future = false;
  // The ring a scheduled switch replaced (its reads count as fallbacks).
  bool scheduled = false;
};

// reload_switch_at: a reload's placement that waits for its moment. Until
// then the pool routes by the placement in force; a key switches at
// at_usec + its moment in the window (switch_moment.h), the same on every
// instance; once the window ends the pool takes this placement and the one
// it had becomes a past ring (pool_carry.h).
struct PendingSwitch {
  conf::PoolConfig config;          // the config that waits, whole
  ketama::Ring ring;                // its ring, over its servers
  std::vector<ServerInfo> servers;  // same order as config.servers
  std::vector<bool> live;           // replicated: false while ejected (empty: all)
  uint64_t generation = 0;          // the config generation that waits
  uint64_t at_usec = 0;             // monotonic: reload_switch_at
  uint64_t window_usec = 0;         // reload_switch_window
  int64_t at_unix_ms = 0;           // reload_switch_at as configured
  uint64_t ends_usec() const { return at_usec + window_usec; }
};

// The most past rings a pool keeps: each costs a read of a moved key one
// more round trip at most.
inline constexpr size_t kMaxPastRings = 4;

struct Pool {
  conf::PoolConfig config;
  ketama::Ring ring;
  std::vector<ServerInfo> servers;  // same order as config.servers and ring.servers()
  SocketAddress listen;
  // Replicated pools (replicas > 1): per server, false while ejected
  // (empty: all live). Their ring keeps every server (ReplicaPlacement);
  // an unreplicated pool's ring is rebuilt without the ejected ones instead.
  std::vector<bool> live;
  // reload_warmup: the rings of the configs still inside their window,
  // newest first, and what orders fallback reads after writes (shared by
  // every worker's routes and the migration, kept across the window).
  std::vector<PastRing> past;
  std::shared_ptr<WarmGuard> guard;
  // TLS for the pool's clients (tls_cert_file) and for its servers
  // (server_tls); null when off. Loaded anew by every build, so a reload
  // rotates certificates (pool_tls.cc).
  std::shared_ptr<const TlsContext> client_tls, server_tls;
  // reload_switch_at: the placement waiting for its moment, if any. While
  // it waits, `config` holds the new config's settings with the servers,
  // ring options and replicas of the placement in force (`ring`).
  std::optional<PendingSwitch> pending{};
  // An unreplicated pool with servers ejected: the ring of every server,
  // where each key's home is (`ring` leaves the ejected out). Writes that
  // land elsewhere are recorded for their home (repair_log.h). Null when
  // none is ejected.
  std::shared_ptr<const ketama::Ring> home_ring{};
};

}  // namespace memshard::proxy
