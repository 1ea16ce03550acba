#include "proxy/admin/stats_server.h"

#include <event2/buffer.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <stdexcept>
#include <string_view>

#include "proxy/admin/stats_render.h"
#include "proxy/transport/lines.h"
#include "proxy/transport/socket_address.h"

namespace memshard::proxy {

namespace {
// A client silent for this long is a twemproxy-style reader.
constexpr timeval kWaitForRequest{0, 150'000};
// An HTTP request head larger than this is not one we serve.
constexpr size_t kMaxRequestHead = 8192;
}  // namespace

// One reader of the stats port, on a Stream like every other socket of
// the proxy: read what it asks (or notice it asks nothing), answer, and go
// once the answer is written.
struct StatsServer::Session {
  StatsServer& server;
  Stream stream;
  event* timer = nullptr;  // a reader silent this long gets the JSON
  bool responded = false;
  bool head_only = false;  // HEAD: the headers of what GET would send

  Session(StatsServer& s, int fd)
      : server(s),
        stream(s.streams_, fd, &Session::on_stream, this, kMaxRequestHead + 1,
               Stream::Reads::compact) {
    stream.set_input_limit(kMaxRequestHead + 1);
    timer = evtimer_new(s.streams_.base(), &Session::on_timeout, this);
    evtimer_add(timer, &kWaitForRequest);
  }
  ~Session() { event_free(timer); }
  Session(const Session&) = delete;
  Session& operator=(const Session&) = delete;

  static void on_stream(void* arg, Stream::Happened what) {
    auto* s = static_cast<Session*>(arg);
    switch (what) {
      case Stream::Happened::input:
        if (!s->responded) s->read_request();
        return;
      case Stream::Happened::eof:
        // Closed its side without a word: the nutcracker way.
        if (!s->responded) s->respond_json();
        return;
      case Stream::Happened::written:
        if (s->stream.output_length() == 0) s->finish();
        return;
      case Stream::Happened::error:
        s->finish();
        return;
      case Stream::Happened::connected:
      case Stream::Happened::flushing:
        return;
    }
  }

  static void on_timeout(evutil_socket_t, short, void* arg) {
    auto* s = static_cast<Session*>(arg);
    if (!s->responded) s->respond_json();
  }

  void read_request() {
    evbuffer* in = stream.input();
    size_t len = evbuffer_get_length(in);
    char head[5] = {};
    evbuffer_copyout(in, head, std::min<size_t>(len, 4));
    std::string_view h(head);
    bool http = false;
    for (std::string_view method : {"GET ", "HEAD", "POST", "PUT ", "DELE", "PATC", "OPTI"}) {
      http = http || h == method;
    }
    if (!http) {
      if (len >= 4 || find_line(in, LineEnd::lf).whole()) {
        respond_json();  // `echo stats | nc host 22222` and the like
      }
      return;
    }
    evbuffer_ptr end = evbuffer_search(in, "\r\n\r\n", 4, nullptr);
    if (end.pos < 0) end = evbuffer_search(in, "\n\n", 2, nullptr);
    if (end.pos < 0) {
      if (len > kMaxRequestHead)
        respond_http("431 Request Header Fields Too Large", "text/plain", "");
      return;
    }
    std::string request_line(find_line(in, LineEnd::lf).length, '\0');
    evbuffer_copyout(in, request_line.data(), request_line.size());
    if (!request_line.empty() && request_line.back() == '\r') request_line.pop_back();
    std::string_view rl = request_line;
    size_t sp1 = rl.find(' ');
    size_t sp2 = rl.find(' ', sp1 + 1);
    std::string_view path =
        rl.substr(sp1 + 1, sp2 == std::string_view::npos ? rl.npos : sp2 - sp1 - 1);
    if (size_t q = path.find('?'); q != path.npos) path = path.substr(0, q);
    std::string body;
    head_only = rl.starts_with("HEAD ");
    if (!rl.starts_with("GET ") && !head_only) {
      respond_http("405 Method Not Allowed", "text/plain", "only GET is served here\n");
    } else if (path == "/metrics") {
      render_prometheus(server.proxy_, body);
      respond_http("200 OK", "text/plain; version=0.0.4; charset=utf-8", body);
    } else if (path == "/" || path == "/stats" || path == "/stats.json") {
      render_twemproxy_json(server.proxy_, body);
      respond_http("200 OK", "application/json", body);
    } else {
      respond_http("404 Not Found", "text/plain", "try /metrics or /stats\n");
    }
  }

  void respond_json() {
    std::string body;
    render_twemproxy_json(server.proxy_, body);
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
    evtimer_del(timer);
    stream.set_reading(false);
    evbuffer_add(stream.output(), bytes.data(), bytes.size());
    stream.watch_writes(true);  // finish once it has all gone
    stream.mark_dirty();
  }

  void finish() {
    server.sessions_.erase(this);
    delete this;
  }
};

StatsServer::StatsServer(StreamLoop& streams, const StatsView& proxy, DescriptorReserve& reserve,
                         const std::string& address, uint16_t port)
    : base_(streams.base()), streams_(streams), proxy_(proxy) {
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
  for (Session* s : sessions_) delete s;
}

void StatsServer::on_accept(evconnlistener*, evutil_socket_t fd, sockaddr*, int, void* arg) {
  auto* self = static_cast<StatsServer*>(arg);
  self->sessions_.insert(new Session(*self, fd));
}

}  // namespace memshard::proxy
