// DNS lookups through c-ares, for the servers of DNS discovery
// (discovery.h): SRV records and a name's A/AAAA addresses, answered by
// callbacks. On the main thread's event loop a lookup never blocks: c-ares'
// sockets are watched by libevent and its timeouts are a Timer. Without a
// loop (null base), run() waits for the lookups in flight with poll(), for
// a start or a reload that cannot go on without their answer.
//
// The DNS servers are the ones given (--dns-server HOST:PORT), else those
// of /etc/resolv.conf (c-ares reads it, with its search list and ndots).
#pragma once

#include <ares.h>
#include <event2/event.h>

#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "proxy/support/timer.h"
#include "proxy/transport/socket_address.h"

namespace memshard::proxy {

struct SrvRecord {
  std::string target;  // without its trailing dot
  uint16_t port = 0;
  uint16_t priority = 0;
  uint16_t weight = 0;
};

class DnsClient {
 public:
  // `servers`: "HOST:PORT" (or "HOST", port 53) each; empty: resolv.conf.
  // Throws std::runtime_error when c-ares cannot start or a server is not
  // an address.
  DnsClient(event_base* base, const std::vector<std::string>& servers);
  ~DnsClient();
  DnsClient(const DnsClient&) = delete;
  DnsClient& operator=(const DnsClient&) = delete;

  // The records, or none and why (an answer without records is an empty
  // list, not a failure).
  using SrvDone = std::function<void(std::optional<std::vector<SrvRecord>>, const std::string&)>;
  using AddressesDone = std::function<void(std::optional<AddressList>, const std::string&)>;
  void srv(const std::string& name, SrvDone done);
  // Every A and AAAA address of `name`, with `port`, duplicates dropped.
  void addresses(const std::string& name, uint16_t port, AddressesDone done);

  // Without a loop: answers what is in flight, waiting up to `timeout_ms`
  // (c-ares' own timeouts end every lookup sooner). Callbacks run here.
  void run(int timeout_ms);

  // "127.0.0.1:5353, ..." or "/etc/resolv.conf": for logs.
  const std::string& servers_text() const { return servers_text_; }

 private:
  static void on_socket_state(void* self, ares_socket_t fd, int readable, int writable);
  static void on_socket_event(evutil_socket_t fd, short what, void* self);
  void arm_timeout();

  event_base* base_;
  ares_channel channel_ = nullptr;
  std::map<ares_socket_t, event*> events_;
  std::unique_ptr<Timer> timer_;
  std::string servers_text_;
  int pending_ = 0;  // lookups in flight
};

// Validates one --dns-server value ("HOST:PORT", "[V6]:PORT" or "HOST");
// empty when fine, else why not.
std::string check_dns_server(const std::string& text);

}  // namespace memshard::proxy
