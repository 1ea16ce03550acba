// A pool with a gutter (conf: gutter, gutter_ttl; docs/failures.md,
// "Gutter"): the keys of a server that is down go to a small spare pool for
// a short while, instead of to the ring's next server, which would be cold
// for them, loaded with them, and left holding stale copies once the
// server is back.
//   - Down when sent: ejected (auto_eject_hosts; the ring of a pool with a
//     gutter keeps every server, and Pool::live says which are out), or
//     refusing connections (Server::down). The request goes straight to
//     the gutter.
//   - Failed on the way (timed out, connection lost): tried again on the
//     gutter, so the client sees the gutter's answer, not the failure.
// Whatever a request sets an item's expiry to is capped at gutter_ttl in
// the gutter (a set with exptime 0 gets gutter_ttl). Keys of live servers
// never touch the gutter; once a server is back, its keys go to it again.
#pragma once

#include <cstdint>
#include <vector>

#include "ketama/ring.h"
#include "proxy/routes/expiry_route.h"
#include "proxy/routes/placement.h"
#include "proxy/routes/pool_entry.h"
#include "proxy/routes/work.h"

namespace memshard::proxy {

// The pool's ring over every one of its servers: a key whose server is
// down has none (npos), and belongs to the gutter meanwhile.
class GutterPlacement final : public Placement {
 public:
  // `live` (per server, false while ejected; empty: all), the ring and the
  // servers must outlive the placement.
  GutterPlacement(const ketama::Ring& ring, const std::vector<bool>& live,
                  std::vector<Server*> servers)
      : ring_(ring), live_(live), servers_(std::move(servers)) {}
  size_t place(std::string_view key) const override;
  size_t size() const override { return servers_.size(); }
  Server& server(size_t index) const override { return *servers_[index]; }
  // Every key's home is on the ring, live or not (place() gives npos
  // while it is down, and its requests go to the gutter).
  size_t home(std::string_view key) const override { return ring_.lookup(key); }

 private:
  const ketama::Ring& ring_;
  const std::vector<bool>& live_;
  std::vector<Server*> servers_;
};

// One of the gutter pool's routes, entered with every expiry a request
// sets capped at gutter_ttl (expiry_route.h, as a pool's ttl_max).
class GutterEntry final : public SingleKeyRoute {
 public:
  GutterEntry(const PoolRoutes& gutter, PoolEntry::Part part, uint32_t ttl_s, RouteLife* life)
      : entry_(gutter, part), capped_(entry_, &entry_, proto::ExpiryRule::cap_at(ttl_s), life) {}
  GutterEntry(const GutterEntry&) = delete;
  GutterEntry& operator=(const GutterEntry&) = delete;
  void send(RouteRequest& req, ReplySlot& slot) override { capped_.send(req, slot); }
  void invalidate(RouteRequest& req, ReplySlot& slot) override { entry_.invalidate(req, slot); }

 private:
  PoolEntry entry_;
  ExpiryRoute capped_;
};

struct Gutter {
  GutterEntry key;        // single-key requests
  GutterEntry multi_get;  // retrievals
};

class GutterKeyRoute final : public SingleKeyRoute {
 public:
  // All must outlive the route (built with it).
  GutterKeyRoute(const GutterPlacement& placement, Gutter& gutter, RouteLife* life)
      : placement_(placement), gutter_(gutter), life_(life) {}
  void send(RouteRequest& req, ReplySlot& slot) override;
  void invalidate(RouteRequest& req, ReplySlot& slot) override;

 private:
  Work via_server(RouteRequest& req, ReplySlot& client, Server& server) const;
  const GutterPlacement& placement_;
  Gutter& gutter_;
  RouteLife* life_;
};

// One live server's share of a retrieval: the server's answer, or, when
// the request fails on its way (timed out, connection lost), the gutter's,
// as GutterKeyRoute does for one key.
class GutterFallbackGet final : public Route {
 public:
  GutterFallbackGet(Route& split, Gutter& gutter, RouteLife* life)
      : split_(split), gutter_(gutter), life_(life) {}
  void send(RouteRequest& req, ReplySlot& slot) override;

 private:
  Work attempt(RouteRequest& req, ReplySlot& client) const;
  Route& split_;
  Gutter& gutter_;
  RouteLife* life_;
};

// Retrievals: the keys of servers that are down go to the gutter; each live
// server's keys go to it, falling back on the gutter when it fails.
class GutterGetRoute final : public Route {
 public:
  // `split`: the pool's own retrieval route over `placement`.
  GutterGetRoute(const GutterPlacement& placement, Route& split, Gutter& gutter, RouteLife* life)
      : placement_(placement), fallback_(split, gutter, life), gutter_(gutter), life_(life) {}
  void send(RouteRequest& req, ReplySlot& slot) override;

 private:
  const GutterPlacement& placement_;
  GutterFallbackGet fallback_;
  Gutter& gutter_;
  RouteLife* life_;
};

}  // namespace memshard::proxy
