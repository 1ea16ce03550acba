// Routes of a pool whose scheduled switch (reload_switch_at) waits or is
// under way: each request follows, key by key, the placement in force
// (`before`: the pool's routes, whose warm-up sees the waiting placement as
// a future ring, past_placement.h) or the waiting one (`after`: its routes,
// whose warm-up falls back on the placement in force), by the key's moment.
//
// A key's moment is reload_switch_at plus (its hash % reload_switch_window
// ms), where the hash is the first four bytes of the key's MD5 digest read
// as a little-endian number (twemproxy's md5 key hash), of the whole key:
// every instance computes the same moment for the same key, whatever the
// pool's own hash and hash_tag. The routes compare it with the request's
// clock reading, so a key switches at its moment on every worker without a
// topology change; the topology changes once the window has ended
// (pool_carry.h), and routes as these do then.
#pragma once

#include <cstdint>
#include <string_view>
#include <vector>

#include "proxy/routes/past_placement.h"
#include "proxy/routes/placement.h"
#include "proxy/routes/route.h"
#include "proxy/routes/work.h"

namespace memshard::proxy {

// When keys switch: at_usec (monotonic) plus each key's offset in the
// window.
struct SwitchMoment {
  uint64_t at_usec = 0;
  uint64_t window_usec = 0;

  // The key's moment.
  uint64_t of(std::string_view key) const;
  // Whether `key` follows the waiting placement at `now_usec`.
  bool switched(std::string_view key, uint64_t now_usec) const {
    if (now_usec < at_usec) return false;
    if (now_usec >= at_usec + window_usec) return true;
    return now_usec >= of(key);
  }
};

class SwitchKeyRoute final : public SingleKeyRoute {
 public:
  SwitchKeyRoute(SingleKeyRoute& before, SingleKeyRoute& after, SwitchMoment moment)
      : before_(before), after_(after), moment_(moment) {}
  void send(RouteRequest& req, ReplySlot& slot) override;
  void invalidate(RouteRequest& req, ReplySlot& slot) override;

 private:
  SingleKeyRoute& side(const RouteRequest& req) const;
  SingleKeyRoute& before_;
  SingleKeyRoute& after_;
  SwitchMoment moment_;
};

// Retrievals: a request whose moved keys all follow one placement goes to
// its routes whole (keys that do not move are where both say); inside a
// switch window a request may hold keys of both, and is then sent as two,
// one per placement, and answered in the client's key order.
class SwitchGetRoute final : public Route {
 public:
  // `moves`: the routes in force's view of the waiting placement, which
  // says whether a key moves. Everything must outlive this.
  SwitchGetRoute(Route& before, Route& after, SwitchMoment moment, const PastPlacement& moves,
                 RouteLife* life)
      : before_(before), after_(after), moment_(moment), moves_(moves), life_(life) {}
  void send(RouteRequest& req, ReplySlot& slot) override;

 private:
  Work split(RouteRequest& req, ReplySlot& client, std::vector<bool> after) const;
  bool moves(std::string_view key, uint64_t now_usec) const;
  Route& before_;
  Route& after_;
  SwitchMoment moment_;
  const PastPlacement& moves_;
  RouteLife* life_;
};

// Every server of both placements, for flush_all (a server the switch adds
// must not keep what a flush before the switch removed elsewhere).
class ServerList final : public Placement {
 public:
  explicit ServerList(std::vector<Server*> servers) : servers_(std::move(servers)) {}
  size_t place(std::string_view) const override { return npos; }
  size_t size() const override { return servers_.size(); }
  Server& server(size_t index) const override { return *servers_[index]; }

 private:
  std::vector<Server*> servers_;
};

}  // namespace memshard::proxy
