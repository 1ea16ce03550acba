#include "proxy/routes/shadow.h"

#include <string>
#include <vector>

#include "ketama/hash.h"
#include "proxy/protocol/request_parser.h"

namespace memshard::proxy {

namespace {

// A hash of the key that has nothing to do with where any ring places it:
// the shadow pool's own ring must spread the copied keys over all its
// servers, which a share chosen by the ring's own hash would not.
uint32_t share_hash(std::string_view key) {
  uint32_t h = ketama::hash(ketama::HashFunction::fnv1a_32, key) ^ 0x9e3779b9u;
  // murmur3's finaliser: every input bit moves every output bit.
  h ^= h >> 16;
  h *= 0x85ebca6bu;
  h ^= h >> 13;
  h *= 0xc2b2ae35u;
  h ^= h >> 16;
  return h;
}

uint64_t threshold_of(double share) {
  return static_cast<uint64_t>(share * 4294967296.0);
}

}  // namespace

bool shadow_takes(std::string_view key, double share) {
  return share_hash(key) < threshold_of(share);
}

Shadow::Shadow(const PoolRoutes& pool, double share, RouteStats& counters, RouteLife* life)
    : key_(pool, PoolEntry::Part::key),
      multi_get_(pool, PoolEntry::Part::multi_get),
      threshold_(threshold_of(share)),
      counters_(counters),
      life_(life) {}

bool Shadow::takes(std::string_view key) const {
  return share_hash(key) < threshold_;
}

void Shadow::copy(const RouteRequest& req) {
  if (!takes(req.request.keys[0])) return;
  std::string bytes(req.bytes(), '\0');
  evbuffer_copyout(req.in, bytes.data(), bytes.size());
  send(req, std::move(bytes), req.header_bytes, key_);
}

void Shadow::copy_retrieval(const RouteRequest& req, std::span<const std::string_view> all) {
  std::vector<std::string_view> keys;
  for (std::string_view k : all) {
    if (takes(k)) keys.push_back(k);
  }
  if (keys.empty()) return;
  if (keys.size() == req.request.keys.size()) {
    std::string bytes(req.header_bytes, '\0');
    evbuffer_copyout(req.in, bytes.data(), bytes.size());
    return send(req, std::move(bytes), req.header_bytes, multi_get_);
  }
  std::string line;
  proto::append_retrieval_line(req.request, keys, line);
  const size_t header = line.size();
  send(req, std::move(line), header, multi_get_);
}

void Shadow::send(const RouteRequest& req, std::string bytes, size_t header, Route& route) {
  if (in_flight_ >= kMaxInFlight) return counters_.shadow_dropped.add();
  counters_.shadow_sent.add();
  copy_work(req, std::move(bytes), header, route).start_unanswered(life_);
}

Work Shadow::copy_work(const RouteRequest& req, std::string bytes, size_t header, Route& route) {
  HeldRequest held(req, std::move(bytes), header);  // req is not touched past this point
  ++in_flight_;
  Reply reply = co_await Call(held, route);
  --in_flight_;
  if (reply.failed()) counters_.shadow_failed.add();
}

}  // namespace memshard::proxy
