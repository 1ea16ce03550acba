#include "proxy/routes/prefix_route.h"

#include <algorithm>

#include "proxy/protocol/replies.h"
#include "proxy/routes/grouped_get.h"

namespace memshard::proxy {

namespace {

void no_route(RouteRequest& req, ReplySlot& slot) {
  evbuffer_drain(req.in, req.bytes());
  req.worker_stats.client_errors.add();
  // noreply asked for silence even about errors, as memcached keeps it.
  if (req.request.noreply) return slot.answer({}, proto::ReplyStatus::client_error);
  answer(slot, proto::reply::own::kNoRoute);
}

}  // namespace

PrefixTable::PrefixTable(const std::vector<std::string>& prefixes, size_t default_route)
    : default_route_(default_route) {
  for (size_t i = 0; i < prefixes.size(); ++i) {
    if (i != default_route) longest_first_.emplace_back(prefixes[i], i);
  }
  std::stable_sort(longest_first_.begin(), longest_first_.end(),
                   [](const auto& a, const auto& b) { return a.first.size() > b.first.size(); });
}

size_t PrefixTable::find(std::string_view key) const {
  for (const auto& [prefix, route] : longest_first_) {
    if (key.starts_with(prefix)) return route;
  }
  return default_route_;
}

void PrefixKeyRoute::send(RouteRequest& req, ReplySlot& slot) {
  const size_t route = table_.find(req.request.keys[0]);
  if (route == PrefixTable::npos) return no_route(req, slot);
  const RouteTarget& t = targets_[route];
  t.counters->requests.add();
  if (t.shadow != nullptr) t.shadow->copy(req);
  slot.route_stats = t.counters;
  t.key->send(req, slot);
}

void PrefixKeyRoute::invalidate(RouteRequest& req, ReplySlot& slot) {
  const size_t route = table_.find(req.request.keys[0]);
  if (route != PrefixTable::npos) targets_[route].key->invalidate(req, slot);
}

void PrefixGetRoute::send(RouteRequest& req, ReplySlot& slot) {
  const auto& keys = req.request.keys;
  RequestScratch& scratch = req.scratch;
  std::vector<uint32_t>& route_of = scratch.route_of_key;
  route_of.resize(keys.size());
  bool one_route = true;
  for (size_t i = 0; i < keys.size(); ++i) {
    const size_t r = table_.find(keys[i]);
    if (r == PrefixTable::npos) return no_route(req, slot);
    route_of[i] = static_cast<uint32_t>(r);
    one_route = one_route && r == route_of[0];
  }
  if (one_route) {
    const RouteTarget& t = targets_[route_of[0]];
    t.counters->requests.add();
    if (t.shadow != nullptr) t.shadow->copy_retrieval(req, keys);
    slot.route_stats = t.counters;
    return t.multi_get->send(req, slot);
  }
  std::vector<Route*> routes(targets_.size());
  std::vector<RouteStats*> counters(targets_.size());
  std::vector<bool> counted(targets_.size());
  for (size_t r = 0; r < targets_.size(); ++r) {
    routes[r] = targets_[r].multi_get;
    counters[r] = targets_[r].counters;
  }
  for (size_t i = 0; i < keys.size(); ++i) {
    const RouteTarget& t = targets_[route_of[i]];
    if (counted[route_of[i]]) continue;
    counted[route_of[i]] = true;
    t.counters->requests.add();
    if (t.shadow == nullptr) continue;
    std::vector<std::string_view> own;
    for (size_t j = i; j < keys.size(); ++j) {
      if (route_of[j] == route_of[i]) own.push_back(keys[j]);
    }
    t.shadow->copy_retrieval(req, own);
  }
  // The route_of scratch is the worker's: send_grouped reads it before any
  // other request can use it.
  send_grouped(req, slot, routes, route_of, counters, life_);
}

}  // namespace memshard::proxy
