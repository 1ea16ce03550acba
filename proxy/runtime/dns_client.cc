#include "proxy/runtime/dns_client.h"

#include <ares_dns.h>
#include <arpa/inet.h>
#include <netdb.h>
#include <poll.h>

#include <cstring>
#include <mutex>
#include <stdexcept>

#include "proxy/support/clock.h"

namespace memshard::proxy {

namespace {

// One try waits this long, and a lookup tries twice per server: a lookup
// ends within a few seconds, whatever the DNS server does.
constexpr int kTimeoutMs = 1000;
constexpr int kTries = 2;

void init_library() {
  static std::once_flag once;
  std::call_once(once, [] {
    const int status = ares_library_init(ARES_LIB_INIT_ALL);
    if (status != ARES_SUCCESS)
      throw std::runtime_error(std::string("c-ares: ") + ares_strerror(status));
  });
}

// "HOST:PORT" as c-ares' list wants it ("[V6]:PORT" for IPv6), or why not.
std::string server_csv_entry(const std::string& text, std::string& why) {
  std::string host = text;
  std::string port = "53";
  if (!text.empty() && text.front() == '[') {
    const size_t close = text.find(']');
    if (close == std::string::npos) {
      why = "expected [IPv6]:PORT";
      return {};
    }
    host = text.substr(1, close - 1);
    if (close + 1 < text.size()) {
      if (text[close + 1] != ':') {
        why = "expected [IPv6]:PORT";
        return {};
      }
      port = text.substr(close + 2);
    }
  } else if (const size_t colon = text.rfind(':'); colon != std::string::npos) {
    if (text.find(':') != colon) {
      why = "an IPv6 address goes in brackets: [::1]:53";
      return {};
    }
    host = text.substr(0, colon);
    port = text.substr(colon + 1);
  }
  unsigned char buf[sizeof(in6_addr)];
  const bool v6 = inet_pton(AF_INET6, host.c_str(), buf) == 1;
  if (!v6 && inet_pton(AF_INET, host.c_str(), buf) != 1) {
    why = "expected an IP address (the DNS server is not looked up by name)";
    return {};
  }
  if (port.empty() || port.size() > 5 ||
      port.find_first_not_of("0123456789") != std::string::npos || std::stoi(port) < 1 ||
      std::stoi(port) > 65535) {
    why = "expected a port from 1 to 65535";
    return {};
  }
  return (v6 ? "[" + host + "]" : host) + ":" + port;
}

struct SrvQuery {
  DnsClient::SrvDone done;
  int* pending;
};

struct AddressQuery {
  DnsClient::AddressesDone done;
  uint16_t port;
  int* pending;
};

void on_srv(void* arg, int status, int, unsigned char* abuf, int alen) {
  std::unique_ptr<SrvQuery> q(static_cast<SrvQuery*>(arg));
  --*q->pending;
  if (status == ARES_EDESTRUCTION || status == ARES_ECANCELLED) return;
  if (status == ARES_ENODATA) return q->done(std::vector<SrvRecord>{}, "no SRV records");
  if (status != ARES_SUCCESS) return q->done(std::nullopt, ares_strerror(status));
  ares_srv_reply* reply = nullptr;
  const int parsed = ares_parse_srv_reply(abuf, alen, &reply);
  if (parsed == ARES_ENODATA) return q->done(std::vector<SrvRecord>{}, "no SRV records");
  if (parsed != ARES_SUCCESS) return q->done(std::nullopt, ares_strerror(parsed));
  std::vector<SrvRecord> out;
  for (ares_srv_reply* r = reply; r != nullptr; r = r->next) {
    std::string target = r->host != nullptr ? r->host : "";
    if (!target.empty() && target.back() == '.') target.pop_back();
    out.push_back(SrvRecord{std::move(target), r->port, r->priority, r->weight});
  }
  ares_free_data(reply);
  q->done(std::move(out), {});
}

void on_addresses(void* arg, int status, int, ares_addrinfo* res) {
  std::unique_ptr<AddressQuery> q(static_cast<AddressQuery*>(arg));
  --*q->pending;
  if (status == ARES_EDESTRUCTION || status == ARES_ECANCELLED) {
    if (res != nullptr) ares_freeaddrinfo(res);
    return;
  }
  if (status == ARES_ENODATA) return q->done(AddressList{}, "no A or AAAA records");
  if (status != ARES_SUCCESS) return q->done(std::nullopt, ares_strerror(status));
  AddressList out;
  for (ares_addrinfo_node* n = res != nullptr ? res->nodes : nullptr; n != nullptr;
       n = n->ai_next) {
    if (n->ai_addr == nullptr || n->ai_addrlen > sizeof(sockaddr_storage)) continue;
    if (n->ai_family != AF_INET && n->ai_family != AF_INET6) continue;
    SocketAddress a;
    memcpy(&a.storage, n->ai_addr, n->ai_addrlen);
    a.length = static_cast<socklen_t>(n->ai_addrlen);
    if (n->ai_family == AF_INET) {
      reinterpret_cast<sockaddr_in*>(&a.storage)->sin_port = htons(q->port);
    } else {
      reinterpret_cast<sockaddr_in6*>(&a.storage)->sin6_port = htons(q->port);
    }
    bool seen = false;
    for (const SocketAddress& o : out) seen = seen || o == a;
    if (!seen) out.push_back(a);
  }
  if (res != nullptr) ares_freeaddrinfo(res);
  if (out.empty()) return q->done(AddressList{}, "no A or AAAA records");
  q->done(std::move(out), {});
}

}  // namespace

std::string check_dns_server(const std::string& text) {
  std::string why;
  server_csv_entry(text, why);
  return why;
}

DnsClient::DnsClient(event_base* base, const std::vector<std::string>& servers) : base_(base) {
  init_library();
  ares_options options{};
  int mask = ARES_OPT_TIMEOUTMS | ARES_OPT_TRIES;
  options.timeout = kTimeoutMs;
  options.tries = kTries;
  if (base_ != nullptr) {
    options.sock_state_cb = &DnsClient::on_socket_state;
    options.sock_state_cb_data = this;
    mask |= ARES_OPT_SOCK_STATE_CB;
  }
  std::string lookups = "b";  // DNS only: the given servers are the ones asked
  if (!servers.empty()) {
    options.lookups = lookups.data();
    mask |= ARES_OPT_LOOKUPS;
  }
  int status = ares_init_options(&channel_, &options, mask);
  if (status != ARES_SUCCESS)
    throw std::runtime_error(std::string("c-ares: ") + ares_strerror(status));
  if (servers.empty()) {
    servers_text_ = "/etc/resolv.conf";
  } else {
    std::string csv;
    for (const std::string& s : servers) {
      std::string why;
      const std::string entry = server_csv_entry(s, why);
      if (entry.empty()) {
        ares_destroy(channel_);
        throw std::runtime_error("--dns-server " + s + ": " + why);
      }
      csv += (csv.empty() ? "" : ",") + entry;
    }
    status = ares_set_servers_ports_csv(channel_, csv.c_str());
    if (status != ARES_SUCCESS) {
      ares_destroy(channel_);
      throw std::runtime_error("--dns-server " + csv + ": " + ares_strerror(status));
    }
    servers_text_ = csv;
  }
  if (base_ != nullptr)
    timer_ = std::make_unique<Timer>(base_, [this] {
      ares_process_fd(channel_, ARES_SOCKET_BAD, ARES_SOCKET_BAD);
      arm_timeout();
    });
}

DnsClient::~DnsClient() {
  ares_destroy(channel_);  // in-flight callbacks see ARES_EDESTRUCTION
  for (auto& [fd, ev] : events_) event_free(ev);
}

void DnsClient::srv(const std::string& name, SrvDone done) {
  ++pending_;
  ares_search(channel_, name.c_str(), 1 /* C_IN */, 33 /* T_SRV */, &on_srv,
              new SrvQuery{std::move(done), &pending_});
  arm_timeout();
}

void DnsClient::addresses(const std::string& name, uint16_t port, AddressesDone done) {
  ++pending_;
  ares_addrinfo_hints hints{};
  hints.ai_family = AF_UNSPEC;
  hints.ai_socktype = SOCK_STREAM;
  hints.ai_flags = ARES_AI_NOSORT;
  ares_getaddrinfo(channel_, name.c_str(), nullptr, &hints, &on_addresses,
                   new AddressQuery{std::move(done), port, &pending_});
  arm_timeout();
}

void DnsClient::arm_timeout() {
  if (timer_ == nullptr) return;
  timeval max{};
  max.tv_sec = 1;
  timeval tv{};
  if (ares_timeout(channel_, &max, &tv) == nullptr || pending_ == 0) {
    timer_->cancel();
    return;
  }
  timer_->arm_usec(static_cast<uint64_t>(tv.tv_sec) * 1000000 + static_cast<uint64_t>(tv.tv_usec));
}

void DnsClient::on_socket_state(void* arg, ares_socket_t fd, int readable, int writable) {
  auto* self = static_cast<DnsClient*>(arg);
  auto it = self->events_.find(fd);
  if (it != self->events_.end()) {
    event_free(it->second);
    self->events_.erase(it);
  }
  if (!readable && !writable) return;
  const short what =
      static_cast<short>(EV_PERSIST | (readable ? EV_READ : 0) | (writable ? EV_WRITE : 0));
  event* ev = event_new(self->base_, fd, what, &DnsClient::on_socket_event, self);
  event_add(ev, nullptr);
  self->events_[fd] = ev;
}

void DnsClient::on_socket_event(evutil_socket_t fd, short what, void* arg) {
  auto* self = static_cast<DnsClient*>(arg);
  ares_process_fd(self->channel_, (what & EV_READ) ? fd : ARES_SOCKET_BAD,
                  (what & EV_WRITE) ? fd : ARES_SOCKET_BAD);
  self->arm_timeout();
}

void DnsClient::run(int timeout_ms) {
  const uint64_t deadline = monotonic_ms() + static_cast<uint64_t>(timeout_ms);
  while (pending_ > 0) {
    const uint64_t now = monotonic_ms();
    if (now >= deadline) {
      ares_cancel(channel_);
      return;
    }
    ares_socket_t socks[ARES_GETSOCK_MAXNUM];
    const int bits = ares_getsock(channel_, socks, ARES_GETSOCK_MAXNUM);
    std::vector<pollfd> fds;
    for (int i = 0; i < ARES_GETSOCK_MAXNUM; ++i) {
      short events = 0;
      if (ARES_GETSOCK_READABLE(bits, i)) events |= POLLIN;
      if (ARES_GETSOCK_WRITABLE(bits, i)) events |= POLLOUT;
      if (events == 0) continue;
      fds.push_back(pollfd{socks[i], events, 0});
    }
    timeval max{};
    max.tv_sec = 0;
    max.tv_usec = 100000;
    timeval tv{};
    ares_timeout(channel_, &max, &tv);
    int wait = static_cast<int>(tv.tv_sec * 1000 + tv.tv_usec / 1000) + 1;
    wait = std::min<int>(wait, static_cast<int>(deadline - now));
    const int n = poll(fds.data(), fds.size(), wait);
    if (n <= 0) {
      ares_process_fd(channel_, ARES_SOCKET_BAD, ARES_SOCKET_BAD);
      continue;
    }
    for (const pollfd& p : fds) {
      if (p.revents == 0) continue;
      const bool r = (p.revents & (POLLIN | POLLERR | POLLHUP)) != 0;
      const bool w = (p.revents & POLLOUT) != 0;
      ares_process_fd(channel_, r ? p.fd : ARES_SOCKET_BAD, w ? p.fd : ARES_SOCKET_BAD);
    }
  }
}

}  // namespace memshard::proxy
