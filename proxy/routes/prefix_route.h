// A routing pool's routes (conf: routes; docs/routing.md):
// each key goes to the route of the longest prefix it starts with, or to
// the route without a prefix, and on into that route's pool (or its zone
// copies), with a shadow copy where the route has one. A key no route
// takes gets CLIENT_ERROR. Each route counts its requests, hits, misses
// and errors.
#pragma once

#include <cstddef>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "proxy/routes/route.h"
#include "proxy/routes/shadow.h"
#include "proxy/support/stats.h"

namespace memshard::proxy {

// Which route a key takes.
class PrefixTable {
 public:
  static constexpr size_t npos = static_cast<size_t>(-1);
  // `prefixes[i]`: route i's; `default_route`: the route of keys no prefix
  // matches (npos: none).
  PrefixTable(const std::vector<std::string>& prefixes, size_t default_route);
  // The route of `key`: the longest prefix it starts with wins.
  size_t find(std::string_view key) const;

 private:
  std::vector<std::pair<std::string, size_t>> longest_first_;
  size_t default_route_;
};

// One route, as a worker sends on it. Everything pointed at lives with the
// routing pool's routes.
struct RouteTarget {
  SingleKeyRoute* key = nullptr;  // into the pool (or its zone copies)
  Route* multi_get = nullptr;
  Shadow* shadow = nullptr;  // null: none
  RouteStats* counters = nullptr;
};

class PrefixKeyRoute final : public SingleKeyRoute {
 public:
  PrefixKeyRoute(const PrefixTable& table, const std::vector<RouteTarget>& targets)
      : table_(table), targets_(targets) {}
  void send(RouteRequest& req, ReplySlot& slot) override;
  void invalidate(RouteRequest& req, ReplySlot& slot) override;

 private:
  const PrefixTable& table_;
  const std::vector<RouteTarget>& targets_;
};

// Retrievals: split by route (send_grouped), answered in the client's key
// order. A request with a key no route takes is refused whole.
class PrefixGetRoute final : public Route {
 public:
  PrefixGetRoute(const PrefixTable& table, const std::vector<RouteTarget>& targets, RouteLife* life)
      : table_(table), targets_(targets), life_(life) {}
  void send(RouteRequest& req, ReplySlot& slot) override;

 private:
  const PrefixTable& table_;
  const std::vector<RouteTarget>& targets_;
  RouteLife* life_;
};

}  // namespace memshard::proxy
