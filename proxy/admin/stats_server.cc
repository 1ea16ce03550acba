#include "proxy/admin/stats_server.h"

#include <arpa/inet.h>
#include <event2/buffer.h>
#include <netinet/in.h>
#include <sys/socket.h>

#include <algorithm>
#include <cctype>
#include <cerrno>
#include <cstring>
#include <stdexcept>
#include <string_view>

#include "proxy/admin/http_request.h"
#include "proxy/admin/stats_routes.h"
#include "proxy/transport/socket_address.h"

namespace memshard::proxy {

namespace {
// A client silent for this long is a twemproxy-style reader. Long enough
// for a browser on a loaded host: its fetch connects, and may send its
// request only a few hundred ms later (a page's poll, starved of CPU, got
// the JSON without HTTP headers after 150 ms: ERR_INVALID_HTTP_RESPONSE).
constexpr uint64_t kWaitForRequestMs = 1000;
// An HTTP client gets this long to send its whole request head.
constexpr uint64_t kWaitForHeadMs = 5000;
// An HTTP request head larger than this is not one we serve.
constexpr size_t kMaxRequestHead = 8192;
// Once answered, what a reader still sends is read and dropped until it
// closes, for this long and this much at most: closing a socket with
// unread bytes resets it, and a reset can destroy the answer before the
// reader has read it (a 431 to a head still arriving).
constexpr uint64_t kLingerMs = 1000;
constexpr size_t kMaxDropped = 1 << 20;

// Whether the reader connected from this host (127.0.0.0/8, ::1, or
// 127.x as an IPv4-mapped IPv6 address).
bool is_loopback(const sockaddr* addr) {
  if (addr == nullptr) return false;
  if (addr->sa_family == AF_INET) {
    const auto* in = reinterpret_cast<const sockaddr_in*>(addr);
    return (ntohl(in->sin_addr.s_addr) >> 24) == 127;
  }
  if (addr->sa_family == AF_INET6) {
    const auto* in6 = reinterpret_cast<const sockaddr_in6*>(addr);
    if (IN6_IS_ADDR_LOOPBACK(&in6->sin6_addr)) return true;
    return IN6_IS_ADDR_V4MAPPED(&in6->sin6_addr) && in6->sin6_addr.s6_addr[12] == 127;
  }
  return false;
}
}  // namespace

// One reader of the stats port, on a Stream like every other socket of
// the proxy: read what it asks (or notice it asks nothing), answer, and go
// once the answer is written.
struct StatsServer::Session {
  StatsServer& server;
  Stream stream;
  Timer timer;  // a reader silent this long gets the JSON
  const bool loopback;
  bool http = false;  // its first bytes began an HTTP request
  // Answered and kept open for its next request (HTTP/1.1 keep-alive): a
  // page polling every second reuses one connection. Had each poll a new
  // one, a browser would open the next ahead of time and leave it silent,
  // and a silent connection here gets the raw reader's JSON, which the
  // browser then took for its next answer (ERR_INVALID_HTTP_RESPONSE).
  bool kept_alive = false;
  bool responded = false;
  bool answer_sent = false;  // all of it written; lingering until the reader closes
  bool reader_closed = false;
  bool done = false;
  size_t dropped = 0;

  Session(StatsServer& s, int fd, bool from_loopback)
      : server(s),
        stream(s.streams_, fd, &Session::on_stream, this, kMaxRequestHead + 1,
               Stream::Reads::compact),
        timer(s.streams_.base(), [this] { on_timeout(); }),
        loopback(from_loopback) {
    stream.set_input_limit(kMaxRequestHead + 1);
    timer.arm_ms(kWaitForRequestMs);
  }
  Session(const Session&) = delete;
  Session& operator=(const Session&) = delete;

  StatsAccess access() const { return StatsAccess{server.token_, loopback}; }

  static void on_stream(void* arg, Stream::Happened what) {
    auto* s = static_cast<Session*>(arg);
    if (s->done) return;
    switch (what) {
      case Stream::Happened::input:
        if (!s->responded) {
          s->read_request();
        } else {
          s->drop_input();
        }
        return;
      case Stream::Happened::eof:
        if (s->kept_alive && !s->http) {
          s->finish();  // closed between two requests: nothing owed
          return;
        }
        if (s->responded) {
          s->reader_closed = true;
          if (s->answer_sent) s->finish();
          return;
        }
        // Closed its side without a word: the nutcracker way. An HTTP
        // client that stopped mid-head gets told so.
        if (s->http) {
          s->send(serialize_answer(answer_bad_head(HeadStatus::malformed), false));
        } else {
          s->send(answer_raw_reader(s->server.proxy_, s->access()));
        }
        return;
      case Stream::Happened::written:
        if (s->responded && s->stream.output_length() == 0 && !s->answer_sent) {
          s->answer_written();
        }
        return;
      case Stream::Happened::error:
        s->finish();
        return;
      case Stream::Happened::connected:
      case Stream::Happened::flushing:
        return;
    }
  }

  void on_timeout() {
    Session* s = this;
    if (s->done) return;
    if (s->responded || (s->kept_alive && evbuffer_get_length(s->stream.input()) == 0)) {
      s->finish();  // lingered long enough, or idle between requests
      return;
    }
    if (s->http) {
      s->send(serialize_answer(answer_bad_head(HeadStatus::malformed), false));
    } else {
      s->send(answer_raw_reader(s->server.proxy_, s->access()));
    }
  }

  void read_request() {
    evbuffer* in = stream.input();
    const size_t len = std::min(evbuffer_get_length(in), kMaxRequestHead + 1);
    std::string bytes(len, '\0');
    evbuffer_copyout(in, bytes.data(), len);
    if (!http) {
      switch (looks_like_http(bytes)) {
        case LooksLike::not_http:
          if (kept_alive) {  // after an HTTP answer, only HTTP
            send(serialize_answer(answer_bad_head(HeadStatus::malformed), false));
            return;
          }
          // `echo stats | nc host 22222` and the like
          send(answer_raw_reader(server.proxy_, access()));
          return;
        case LooksLike::undecided:
          return;
        case LooksLike::http:
          http = true;
          timer.arm_ms(kWaitForHeadMs);  // replaces the raw reader's wait
          break;
      }
    }
    HttpRequest request;
    const HeadStatus status = parse_http_head(bytes, kMaxRequestHead, request);
    if (status == HeadStatus::incomplete) return;
    if (status != HeadStatus::complete) {
      send(serialize_answer(answer_bad_head(status), false));
      return;
    }
    const HttpAnswer answer = answer_stats_request(request, server.proxy_, access());
    if (!wants_keep_alive(bytes, request)) {
      send(serialize_answer(answer, request.method == "HEAD"));
      return;
    }
    // Answered, and ready for the next request: its bytes (if already
    // here) are read once this answer is on its way.
    const std::string reply = serialize_answer(answer, request.method == "HEAD", true);
    evbuffer_drain(stream.input(), head_length(bytes));
    evbuffer_add(stream.output(), reply.data(), reply.size());
    stream.mark_dirty();
    kept_alive = true;
    http = false;
    timer.arm_ms(kWaitForHeadMs);
    if (evbuffer_get_length(stream.input()) > 0) read_request();
  }

  // HTTP/1.1 without "Connection: close" (an HTTP/1.0 client expects the
  // close that ends its answer).
  static bool wants_keep_alive(std::string_view bytes, const HttpRequest& request) {
    const std::string_view line = bytes.substr(0, bytes.find('\n'));
    const bool http11 = line.find(" HTTP/1.1") != std::string_view::npos;
    std::string connection(request.header("connection"));
    for (char& c : connection) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
    return http11 && connection != "close";
  }

  // The bytes of the head parsed from `bytes` (up to its blank line).
  static size_t head_length(std::string_view bytes) {
    const size_t crlf = bytes.find("\r\n\r\n");
    const size_t lf = bytes.find("\n\n");
    if (crlf != std::string_view::npos && (lf == std::string_view::npos || crlf < lf))
      return crlf + 4;
    return lf == std::string_view::npos ? bytes.size() : lf + 2;
  }

  void send(const std::string& bytes) {
    responded = true;
    timer.cancel();
    drop_input();
    evbuffer_add(stream.output(), bytes.data(), bytes.size());
    stream.watch_writes(true);  // finish once it has all gone
    stream.mark_dirty();
  }

  void drop_input() {
    const size_t len = evbuffer_get_length(stream.input());
    evbuffer_drain(stream.input(), len);
    dropped += len;
    if (dropped > kMaxDropped) finish();
  }

  // The answer is out: say so (EOF) and wait for the reader to close.
  void answer_written() {
    answer_sent = true;
    if (reader_closed) {
      finish();
      return;
    }
    shutdown(stream.fd(), SHUT_WR);
    timer.arm_ms(kLingerMs);
  }

  void finish() {
    done = true;
    timer.cancel();
    stream.set_reading(false);
    server.finished(this);
  }
};

StatsServer::StatsServer(StreamLoop& streams, const StatsView& proxy, DescriptorReserve& reserve,
                         const std::string& address, uint16_t port, std::string token)
    : base_(streams.base()), streams_(streams), proxy_(proxy), token_(std::move(token)) {
  SocketAddress a = resolve_address(address, port, false);
  listener_ =
      evconnlistener_new_bind(base_, &StatsServer::on_accept, this,
                              LEV_OPT_CLOSE_ON_FREE | LEV_OPT_REUSEABLE | LEV_OPT_CLOSE_ON_EXEC, 64,
                              a.get(), static_cast<int>(a.length));
  if (listener_ == nullptr) {
    throw std::runtime_error("cannot listen on " + address + ":" + std::to_string(port) + ": " +
                             strerror(errno));
  }
  sweep_ = std::make_unique<Timer>(base_, [this] { done_.clear(); });
  guard_ = std::make_unique<AcceptGuard>(base_, listener_, &StatsServer::on_accept, this, reserve,
                                         "stats port", [] {});
}

StatsServer::~StatsServer() {
  guard_.reset();
  evconnlistener_free(listener_);
  sessions_.clear();
  done_.clear();
}

void StatsServer::on_accept(evconnlistener*, evutil_socket_t fd, sockaddr* addr, int, void* arg) {
  auto* self = static_cast<StatsServer*>(arg);
  auto session = std::make_unique<Session>(*self, fd, is_loopback(addr));
  Session* key = session.get();
  self->sessions_.emplace(key, std::move(session));
}

void StatsServer::finished(Session* s) {
  auto it = sessions_.find(s);
  if (it == sessions_.end()) return;
  done_.push_back(std::move(it->second));
  sessions_.erase(it);
  sweep_->arm_usec(0);
}

}  // namespace memshard::proxy
