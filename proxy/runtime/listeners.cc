#include "proxy/runtime/listeners.h"

#include <netinet/in.h>
#include <netinet/tcp.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <set>
#include <stdexcept>

#include "proxy/protocol/replies.h"
#include "proxy/runtime/descriptor_budget.h"
#include "proxy/support/log.h"
#include "proxy/transport/socket_address.h"

namespace memshard::proxy {

namespace {
// Two listen directives that name the same socket: the same path, or the
// same host and port (permissions and spelling aside). Such a socket is
// kept, never bound again: rebinding a unix path would unlink the live one.
bool same_socket(const conf::ListenAddress& a, const conf::ListenAddress& b) {
  if (a.is_unix != b.is_unix) return false;
  return a.is_unix ? a.path == b.path : a.host == b.host && a.port == b.port;
}
}  // namespace

Listeners::Listeners(event_base* base, Adopt adopt)
    : base_(base),
      adopt_(std::move(adopt)),
      reserve_(std::string(proto::reply::kTooManyConnections)),
      over_budget_warning_(base, [this] {
        const std::string_view said = proto::reply::kTooManyConnections;
        log_warn(
            "%llu client(s) refused with \"%.*s\": %u client connections open, all the "
            "descriptor limit leaves room for (see \"descriptor limit\" above; raise it with "
            "ulimit -n or LimitNOFILE=)",
            static_cast<unsigned long long>(refused_over_budget_),
            static_cast<int>(said.size() - 2), said.data(), open_when_refused_);
        refused_over_budget_ = 0;
      }) {}

Listeners::~Listeners() {
  close_all();
}

void Listeners::open(const Topology& topology) {
  for (const Pool& pool : topology.pools) {
    if (!pool.config.has_listen()) continue;  // reached only by routes
    std::unique_ptr<Socket> s = bind(pool);
    if (!s) {
      throw std::runtime_error("pool '" + pool.config.name + "': cannot listen on " +
                               pool.config.listen.text + ": " + strerror(errno));
    }
    sockets_.push_back(std::move(s));
  }
}

bool Listeners::swap(const Topology& next, std::string& why) {
  std::vector<Socket*> reuse(next.pools.size(), nullptr);
  std::vector<std::unique_ptr<Socket>> opened;
  std::set<Socket*> taken;
  for (size_t i = 0; i < next.pools.size(); ++i) {
    const Pool& pool = next.pools[i];
    if (!pool.config.has_listen()) continue;  // reached only by routes
    for (auto& s : sockets_) {
      if (same_socket(s->address, pool.config.listen) && !taken.contains(s.get())) {
        reuse[i] = s.get();
        taken.insert(s.get());
        break;
      }
    }
    if (reuse[i] != nullptr) continue;
    std::unique_ptr<Socket> s = bind(pool);
    if (!s) {
      why = "pool '" + pool.config.name + "' cannot listen on " + pool.config.listen.text + ": " +
            strerror(errno);
      log_error("reload refused: %s", why.c_str());
      for (auto& o : opened) close(*o);
      return false;
    }
    opened.push_back(std::move(s));
  }
  std::vector<std::unique_ptr<Socket>> kept;
  for (auto& s : sockets_) {
    if (taken.contains(s.get())) {
      kept.push_back(std::move(s));
      continue;
    }
    log_notice("no longer listening on %s", s->address.text.c_str());
    close(*s);
  }
  // A kept socket may now belong to another pool, with other limits.
  for (size_t i = 0; i < next.pools.size(); ++i) {
    if (reuse[i] == nullptr) continue;
    const conf::PoolConfig& pc = next.pools[i].config;
    reuse[i]->pool = pc.name;
    reuse[i]->client_limit = pc.client_connections;
    if (pc.listen.is_unix && pc.listen.perm && pc.listen.perm != reuse[i]->address.perm) {
      chmod(pc.listen.path.c_str(), static_cast<mode_t>(*pc.listen.perm));
    }
    reuse[i]->address = pc.listen;
  }
  for (auto& o : opened) kept.push_back(std::move(o));
  sockets_ = std::move(kept);
  return true;
}

void Listeners::close_all() {
  for (auto& s : sockets_) close(*s);
}

void Listeners::set_budget(const Topology& topology, uint64_t workers, bool starting) {
  if (starting) {
    // Nothing but the proxy's own descriptors is open yet: servers are
    // connected on first use.
    own_descriptors_ = open_descriptors();
    sockets_at_start_ = sockets_.size();
  }
  DescriptorBudget budget;
  budget.limit = descriptor_limit();
  // Since then, the proxy's own descriptors change only by the sockets
  // that reloads bound or closed.
  const uint64_t own = own_descriptors_ + sockets_.size();
  budget.own = own > sockets_at_start_ ? own - sockets_at_start_ : 0;
  budget.servers = server_connections_at_most(topology, workers);
  const uint64_t room = budget.clients();
  if (starting && room == 0) {
    throw std::runtime_error("descriptor " + budget.describe() +
                             ": raise the limit (ulimit -n; LimitNOFILE= under systemd)");
  }
  const uint64_t was = max_clients_.exchange(room, std::memory_order_relaxed);
  if (room == was) return;
  log_notice("descriptor %s", budget.describe().c_str());
  const uint32_t open = open_clients_->load(std::memory_order_relaxed);
  if (open > room) {
    log_warn(
        "%u client connections are open, more than there is now room for: new clients are "
        "refused until they are fewer",
        open);
  }
}

std::unique_ptr<Listeners::Socket> Listeners::bind(const Pool& pool) {
  auto s = std::make_unique<Socket>();
  s->owner = this;
  s->pool = pool.config.name;
  s->client_limit = pool.config.client_connections;
  s->clients = std::make_shared<ClientCount>(open_clients_);
  s->address = pool.config.listen;
  if (s->address.is_unix) unlink(s->address.path.c_str());  // a stale socket from a past run
  const unsigned flags = LEV_OPT_CLOSE_ON_FREE | LEV_OPT_REUSEABLE | LEV_OPT_CLOSE_ON_EXEC;
  s->listener =
      evconnlistener_new_bind(base_, &Listeners::on_accept, s.get(), flags, pool.config.backlog,
                              pool.listen.get(), static_cast<int>(pool.listen.length));
  if (s->listener == nullptr) return nullptr;
  s->guard = std::make_unique<AcceptGuard>(
      base_, s->listener, &Listeners::on_accept, s.get(), reserve_, "pool '" + s->pool + "'",
      [this] { rejected_.fetch_add(1, std::memory_order_relaxed); });
  if (s->address.is_unix && s->address.perm) {
    chmod(s->address.path.c_str(), static_cast<mode_t>(*s->address.perm));
  }
  log_notice("pool '%s' listening on %s%s", pool.config.name.c_str(),
             pool.config.listen.text.c_str(),
             pool.client_tls ? " (TLS: OpenSSL records, written in the io_uring batches)" : "");
  return s;
}

void Listeners::on_accept(evconnlistener*, evutil_socket_t fd, sockaddr* addr, int, void* arg) {
  auto* s = static_cast<Socket*>(arg);
  Listeners& self = *s->owner;
  if (addr->sa_family != AF_UNIX) {
    int one = 1;
    setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
  }
  evutil_make_socket_nonblocking(fd);
  const uint32_t open = self.open_clients_->load(std::memory_order_relaxed);
  if (open >= self.max_clients_.load(std::memory_order_relaxed)) {
    self.refuse_over_budget(fd, open);
    return;
  }
  if (s->client_limit != 0 && s->clients->open() >= s->client_limit) {
    // As memcached does when out of connections. Counted first: the client
    // may ask another connection for the stats as soon as it reads this.
    self.rejected_.fetch_add(1, std::memory_order_relaxed);
    refuse_client(fd, proto::reply::kTooManyConnections);
    return;
  }
  s->clients->add();
  self.adopt_(fd, s->pool, s->clients, addr->sa_family == AF_UNIX ? -1 : incoming_cpu(fd));
}

void Listeners::close(Socket& s) {
  if (s.listener == nullptr) return;
  s.guard.reset();
  evconnlistener_free(s.listener);
  s.listener = nullptr;
  if (s.address.is_unix) unlink(s.address.path.c_str());
}

void Listeners::refuse_over_budget(int fd, uint32_t open) {
  rejected_.fetch_add(1, std::memory_order_relaxed);  // before the client can see it
  refuse_client(fd, proto::reply::kTooManyConnections);
  ++refused_over_budget_;
  open_when_refused_ = open;
  over_budget_warning_.note();
}

}  // namespace memshard::proxy
