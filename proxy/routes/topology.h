// The routing view of one loaded config: per pool its ring, its settings and
// its servers' socket addresses. Immutable once built; each worker holds it
// through a shared_ptr, so a reload builds a new one off the request path
// and workers switch between two requests.
#pragma once

#include <cstdint>
#include <memory>
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
};

// Gives `next` the rings `old` (the same pool in the config in force) had
// and still has inside the window at `now_usec`: old's own ring first,
// when next's differs and next has reload_warmup. Nothing when off.
void carry_past(const Pool& old, uint64_t old_generation, Pool& next, uint64_t now_usec);
// Drops past rings whose window ended by `now_usec`; true if any went.
bool drop_expired(Pool& pool, uint64_t now_usec);

struct Topology {
  uint64_t generation = 0;
  std::vector<Pool> pools;

  const Pool* find_pool(const std::string& name) const;
};

// Resolves every address (getaddrinfo: blocking, so never call it on a
// worker). Throws std::runtime_error naming the address that failed.
// Loads the pool's TLS contexts; throws std::runtime_error naming the file,
// line and directive of what does not load.
void load_pool_tls(const std::string& file, Pool& pool);

// `previous`: the topology in force, whose pools hand their rings on to
// the pools of the same name (carry_past) at `now_usec`.
std::shared_ptr<const Topology> build_topology(const conf::Config& config, uint64_t generation,
                                               const Topology* previous = nullptr,
                                               uint64_t now_usec = 0);
// The earliest end of a warm-up window in `t`, 0 when none is open.
uint64_t next_window_end(const Topology& t);

}  // namespace memshard::proxy
