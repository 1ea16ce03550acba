// Requests whose expiry a pool rewrites (proto::ExpiryRule,
// protocol/expiry_cap.h): a gutter's gutter_ttl cap, a pool's ttl_max
// (mcrouter's ModifyExptimeRoute, action min) and ttl_set (action set).
// A request that sets an expiry (a classic storage command, touch, gat,
// gats, meta T and N, an ms without T) goes on with it rewritten; every
// other request goes on as the client wrote it.
#pragma once

#include "proxy/protocol/expiry_cap.h"
#include "proxy/routes/route.h"

namespace memshard::proxy {

class ExpiryRoute final : public SingleKeyRoute {
 public:
  // `inner`: where requests go on; `inner_key`: the same as a single-key
  // route, for invalidate() (null for a retrieval route, which has none).
  // Everything must outlive the route.
  ExpiryRoute(Route& inner, SingleKeyRoute* inner_key, proto::ExpiryRule rule, RouteLife* life)
      : inner_(inner), inner_key_(inner_key), rule_(rule), life_(life) {}
  void send(RouteRequest& req, ReplySlot& slot) override;
  void invalidate(RouteRequest& req, ReplySlot& slot) override {
    if (inner_key_ != nullptr) inner_key_->invalidate(req, slot);
  }

 private:
  Route& inner_;
  SingleKeyRoute* inner_key_;
  proto::ExpiryRule rule_;
  RouteLife* life_;
};

// The rule of a pool's own ttl_max or ttl_set (none when neither is set).
proto::ExpiryRule pool_expiry_rule(uint32_t ttl_max_s, const std::optional<uint32_t>& ttl_set_s);

}  // namespace memshard::proxy
