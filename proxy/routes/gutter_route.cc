#include "proxy/routes/gutter_route.h"

#include <ctime>
#include <optional>
#include <string>

#include "proxy/protocol/request_kind.h"
#include "proxy/routes/grouped_get.h"
#include "proxy/routes/key_route.h"

namespace memshard::proxy {

namespace {

void count_gutter(const proto::Request& r, PoolStats& stats) {
  stats.gutter_requests.add();
  if (proto::is_storage(r.command)) stats.gutter_sets.add();
}

}  // namespace

size_t GutterPlacement::place(std::string_view key) const {
  const size_t i = ring_.lookup(key);
  if (i == npos) return npos;
  if ((!live_.empty() && !live_[i]) || servers_[i]->down()) return npos;
  return i;
}

Work GutterKeyRoute::via_server(RouteRequest& req, ReplySlot& client, Server& server) const {
  HeldRequest held(req);  // req is not touched past this point
  ServerRoute own(server);
  Reply reply = co_await Call(held, own);
  if (!reply.failed()) {
    reply.pass_to(client);
    co_return;
  }
  count_gutter(held.request(), held.pool_stats());
  held.set_home(server.repairs());  // the gutter takes it in the server's place
  Reply second = co_await Call(held, gutter_.key);
  second.pass_to(client);
}

void GutterKeyRoute::send(RouteRequest& req, ReplySlot& slot) {
  const size_t server = placement_.place(req.request.keys[0]);
  if (server == Placement::npos) {
    count_gutter(req.request, req.pool_stats);
    // The gutter takes it in the home's place (repair_log.h).
    const size_t home = placement_.home(req.request.keys[0]);
    RepairLog* const outer = req.home;
    if (home != Placement::npos) req.home = placement_.server(home).repairs();
    gutter_.key.send(req, slot);
    req.home = outer;
    return;
  }
  slot.add_fragment();
  via_server(req, slot, placement_.server(server)).start(slot, life_);
}

void GutterKeyRoute::invalidate(RouteRequest& req, ReplySlot& slot) {
  const size_t server = placement_.place(req.request.keys[0]);
  if (server == Placement::npos) {
    const size_t home = placement_.home(req.request.keys[0]);
    RepairLog* const outer = req.home;
    if (home != Placement::npos) req.home = placement_.server(home).repairs();
    gutter_.key.invalidate(req, slot);
    req.home = outer;
    return;
  }
  send_delete(placement_.server(server), req, slot);
}

Work GutterFallbackGet::attempt(RouteRequest& req, ReplySlot& client) const {
  HeldRequest held(req);  // req is not touched past this point
  Reply reply = co_await Call(held, split_);
  if (!reply.failed()) {
    reply.pass_to(client);
    co_return;
  }
  held.pool_stats().gutter_requests.add(held.request().keys.size());
  Reply second = co_await Call(held, gutter_.multi_get);
  second.pass_to(client);
}

void GutterFallbackGet::send(RouteRequest& req, ReplySlot& slot) {
  slot.add_fragment();
  attempt(req, slot).start(slot, life_);
}

// Grouped by server, so that one server's failure sends only its own keys
// to the gutter; the gutter is the group after the servers'.
void GutterGetRoute::send(RouteRequest& req, ReplySlot& slot) {
  const auto& keys = req.request.keys;
  const size_t servers = placement_.size();
  std::vector<uint32_t> group_of(keys.size());
  size_t in_gutter = 0;
  for (size_t i = 0; i < keys.size(); ++i) {
    const size_t server = placement_.place(keys[i]);
    group_of[i] = static_cast<uint32_t>(server == Placement::npos ? servers : server);
    in_gutter += server == Placement::npos;
  }
  if (in_gutter != 0) req.pool_stats.gutter_requests.add(in_gutter);
  std::vector<Route*> routes(servers + 1, &fallback_);
  routes[servers] = &gutter_.multi_get;
  send_grouped(req, slot, routes, group_of, {}, life_);
}

}  // namespace memshard::proxy
