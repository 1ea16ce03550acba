#include "proxy/admin/stats_server.h"

#include <event2/buffer.h>
#include <event2/bufferevent.h>

#include <cerrno>
#include <cstring>
#include <stdexcept>
#include <string_view>

#include "proxy/admin/stats_render.h"
#include "proxy/transport/socket_address.h"

namespace memshard::proxy {

namespace {
// A client silent for this long is a twemproxy-style reader.
constexpr timeval kWaitForRequest{0, 150'000};
// An HTTP request head larger than this is not one we serve.
constexpr size_t kMaxRequestHead = 8192;
}  // namespace

struct StatsServer::Session {
  const StatsView& proxy;
  bufferevent* bev;
  bool responded = false;
  bool head_only = false;  // HEAD: the headers of what GET would send

  static void on_read(bufferevent* bev, void* arg) {
    auto* s = static_cast<Session*>(arg);
    evbuffer* in = bufferevent_get_input(bev);
    size_t len = evbuffer_get_length(in);
    char head[5] = {};
    evbuffer_copyout(in, head, std::min<size_t>(len, 4));
    std::string_view h(head);
    bool http = false;
    for (std::string_view method : {"GET ", "HEAD", "POST", "PUT ", "DELE", "PATC", "OPTI"}) {
      http = http || h == method;
    }
    if (!http) {
      if (len >= 4 || evbuffer_search_eol(in, nullptr, nullptr, EVBUFFER_EOL_LF).pos >= 0) {
        s->respond_json();  // `echo stats | nc host 22222` and the like
      }
      return;
    }
    evbuffer_ptr end = evbuffer_search(in, "\r\n\r\n", 4, nullptr);
    if (end.pos < 0) end = evbuffer_search(in, "\n\n", 2, nullptr);
    if (end.pos < 0) {
      if (len > kMaxRequestHead)
        s->respond_http("431 Request Header Fields Too Large", "text/plain", "");
      return;
    }
    size_t n = 0;
    char* line = evbuffer_readln(in, &n, EVBUFFER_EOL_CRLF);
    std::string request_line(line != nullptr ? line : "", n);
    free(line);
    std::string_view rl = request_line;
    size_t sp1 = rl.find(' ');
    size_t sp2 = rl.find(' ', sp1 + 1);
    std::string_view path =
        rl.substr(sp1 + 1, sp2 == std::string_view::npos ? rl.npos : sp2 - sp1 - 1);
    if (size_t q = path.find('?'); q != path.npos) path = path.substr(0, q);
    std::string body;
    s->head_only = rl.starts_with("HEAD ");
    if (!rl.starts_with("GET ") && !s->head_only) {
      s->respond_http("405 Method Not Allowed", "text/plain", "only GET is served here\n");
    } else if (path == "/metrics") {
      render_prometheus(s->proxy, body);
      s->respond_http("200 OK", "text/plain; version=0.0.4; charset=utf-8", body);
    } else if (path == "/" || path == "/stats" || path == "/stats.json") {
      render_twemproxy_json(s->proxy, body);
      s->respond_http("200 OK", "application/json", body);
    } else {
      s->respond_http("404 Not Found", "text/plain", "try /metrics or /stats\n");
    }
  }

  static void on_event(bufferevent*, short what, void* arg) {
    auto* s = static_cast<Session*>(arg);
    // Silent, or closed its side without a word: the nutcracker way.
    bool silent = (what & BEV_EVENT_TIMEOUT) || (what & BEV_EVENT_EOF);
    if (silent && (what & BEV_EVENT_READING) && !s->responded) {
      s->respond_json();
      return;
    }
    s->finish();
  }

  static void on_written(bufferevent* bev, void* arg) {
    if (evbuffer_get_length(bufferevent_get_output(bev)) == 0) static_cast<Session*>(arg)->finish();
  }

  void respond_json() {
    std::string body;
    render_twemproxy_json(proxy, body);
    send(body);
  }

  void respond_http(std::string_view status, std::string_view type, const std::string& body) {
    std::string r;
    r.append("HTTP/1.1 ").append(status).append("\r\nContent-Type: ").append(type);
    r.append("\r\nContent-Length: ").append(std::to_string(body.size()));
    r.append("\r\nConnection: close\r\n\r\n");
    if (!head_only) r.append(body);
    send(r);
  }

  void send(const std::string& bytes) {
    responded = true;
    bufferevent_disable(bev, EV_READ);
    bufferevent_setcb(bev, nullptr, &Session::on_written, &Session::on_event, this);
    bufferevent_write(bev, bytes.data(), bytes.size());
  }

  void finish() {
    bufferevent_free(bev);
    delete this;
  }
};

StatsServer::StatsServer(event_base* base, const StatsView& proxy, DescriptorReserve& reserve,
                         const std::string& address, uint16_t port)
    : base_(base), proxy_(proxy) {
  SocketAddress a = resolve_address(address, port, false);
  listener_ =
      evconnlistener_new_bind(base_, &StatsServer::on_accept, this,
                              LEV_OPT_CLOSE_ON_FREE | LEV_OPT_REUSEABLE | LEV_OPT_CLOSE_ON_EXEC, 64,
                              a.get(), static_cast<int>(a.length));
  if (listener_ == nullptr) {
    throw std::runtime_error("cannot listen on " + address + ":" + std::to_string(port) + ": " +
                             strerror(errno));
  }
  guard_ = std::make_unique<AcceptGuard>(base_, listener_, &StatsServer::on_accept, this, reserve,
                                         "stats port", [] {});
}

StatsServer::~StatsServer() {
  guard_.reset();
  evconnlistener_free(listener_);
}

void StatsServer::on_accept(evconnlistener*, evutil_socket_t fd, sockaddr*, int, void* arg) {
  auto* self = static_cast<StatsServer*>(arg);
  bufferevent* bev = bufferevent_socket_new(self->base_, fd, BEV_OPT_CLOSE_ON_FREE);
  auto* s = new Session{self->proxy_, bev};
  bufferevent_setcb(bev, &Session::on_read, nullptr, &Session::on_event, s);
  bufferevent_set_timeouts(bev, &kWaitForRequest, nullptr);
  bufferevent_setwatermark(bev, EV_READ, 0, kMaxRequestHead + 1);
  bufferevent_enable(bev, EV_READ | EV_WRITE);
}

}  // namespace memshard::proxy
