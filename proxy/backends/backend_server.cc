// BackendServer: one server as one worker sees it, its connections and
// its health (reconnect back-off, failures in a row, retired addresses).
#include <algorithm>
#include <utility>

#include "proxy/backends/backend.h"
#include "proxy/backends/repair_log.h"
#include "proxy/protocol/replies.h"

namespace memshard::proxy {

namespace {

// A server that refuses connections is not asked again for a while; the
// requests meanwhile fail at once instead of queueing behind connects.
constexpr uint64_t kFirstBackoffUsec = 20'000;
constexpr uint64_t kMaxBackoffUsec = 1'000'000;

}  // namespace

BackendServer::BackendServer(BackendContext& context, std::string identity, AddressList addresses,
                             ServerSettings settings, std::shared_ptr<ServerStats> stats,
                             std::shared_ptr<PoolStats> pool_stats)
    : context_(context),
      identity_(std::move(identity)),
      addresses_(std::move(addresses)),
      settings_(std::move(settings)),
      stats_(std::move(stats)),
      pool_stats_(std::move(pool_stats)),
      repairs_(&RepairLog::of(settings_.pool, identity_)) {
  repairs_->set_limit(settings_.repair_limit_bytes);
}

BackendServer::~BackendServer() = default;

void BackendServer::update_settings(ServerSettings s, std::shared_ptr<PoolStats> pool_stats) {
  bool new_timeout = s.timeout_ms != settings_.timeout_ms;
  settings_ = std::move(s);
  repairs_->set_limit(settings_.repair_limit_bytes);
  if (new_timeout) {
    for (auto& c : conns_) c->rearm_timer();
  }
  pool_stats_ = std::move(pool_stats);
  // Extra connections beyond the new count are dropped only once idle.
  while (conns_.size() > std::max<uint32_t>(1, settings_.connections) &&
         conns_.back()->in_flight() == 0) {
    conns_.pop_back();
  }
}

void BackendServer::update_addresses(const AddressList& addresses) {
  if (addresses == addresses_) return;
  const SocketAddress* preferred =
      preferred_ < addresses_.size() ? &addresses_[preferred_] : nullptr;
  auto it = preferred ? std::find(addresses.begin(), addresses.end(), *preferred) : addresses.end();
  preferred_ = it == addresses.end() ? 0 : static_cast<size_t>(it - addresses.begin());
  // A connection's peer is a copy held by its stream: it stays valid
  // while addresses_ changes.
  // A fresh connection takes a retired one's place, so that the clients
  // mapped to the others keep theirs.
  for (auto& c : conns_) {
    const SocketAddress* peer = c->peer();
    if (peer == nullptr || std::find(addresses.begin(), addresses.end(), *peer) != addresses.end())
      continue;
    retired_.push_back(std::move(c));
    c = std::make_unique<BackendConn>(*this);
  }
  addresses_ = addresses;
  close_retired();
}

void BackendServer::close_retired() {
  std::erase_if(retired_, [](const auto& c) { return c->in_flight() == 0; });
}

BackendConn* BackendServer::connection_for(uint64_t affinity) {
  if (retry_after_usec_ != 0 && context_.now_usec() < retry_after_usec_) return nullptr;
  size_t want = std::max<uint32_t>(1, settings_.connections);
  while (conns_.size() < want) conns_.push_back(std::make_unique<BackendConn>(*this));
  return conns_[affinity % want].get();
}

Outbox* BackendServer::outbox(uint64_t affinity) {
  BackendConn* conn = connection_for(affinity);
  if (conn == nullptr) {
    refusal_ = proto::reply::own::kBackendUnavailable;
    return nullptr;
  }
  // Load shedding: a server whose connection has this many requests
  // waiting has stopped answering; what would queue behind them is
  // answered at once, so it costs neither memory nor a timeout each.
  if (settings_.queue_limit != 0 && conn->in_flight() >= settings_.queue_limit) {
    stats_->requests_shed.add();
    refusal_ = proto::reply::own::kBackendQueueFull;
    return nullptr;
  }
  return conn;
}

void BackendServer::on_connect_failed() {
  // A server listed by name may have moved: its name is looked up again.
  context_.server_unreachable(settings_.pool, identity_);
  backoff_usec_ =
      backoff_usec_ == 0 ? kFirstBackoffUsec : std::min(backoff_usec_ * 2, kMaxBackoffUsec);
  retry_after_usec_ = context_.now_usec() + backoff_usec_;
}

void BackendServer::on_failure() {
  ++failures_in_a_row_;
  if (settings_.failure_limit != 0 && failures_in_a_row_ >= settings_.failure_limit) {
    // A new streak starts: a server re-admitted and failing again is
    // reported again after another `failure_limit` failures.
    failures_in_a_row_ = 0;
    context_.server_failing(settings_.pool, identity_);
  }
}

void BackendServer::on_connected(size_t index) {
  if (index < addresses_.size()) preferred_ = index;
  backoff_usec_ = 0;
  retry_after_usec_ = 0;
}

bool BackendServer::idle() const {
  auto owes_nothing = [](const auto& c) { return c->in_flight() == 0; };
  return std::all_of(conns_.begin(), conns_.end(), owes_nothing) &&
         std::all_of(retired_.begin(), retired_.end(), owes_nothing);
}

}  // namespace memshard::proxy
