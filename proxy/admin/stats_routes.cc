#include "proxy/admin/stats_routes.h"

#include "proxy/admin/stats_render.h"
#include "proxy/admin/stats_token.h"
#include "proxy/admin/status_json.h"
#include "proxy/admin/status_page.h"

namespace memshard::proxy {

namespace {

// The page loads nothing from anywhere but its own inline script and
// style and this port's JSON: a browser refuses anything else, so a page
// that tried to reach a CDN would show an error, not quietly work online.
constexpr std::string_view kPagePolicy =
    "default-src 'none'; script-src 'unsafe-inline'; style-src 'unsafe-inline'; "
    "img-src data:; connect-src 'self'; base-uri 'none'; form-action 'none'; "
    "frame-ancestors 'none'";

std::string_view reason_of(int status) {
  switch (status) {
    case 200:
      return "OK";
    case 400:
      return "Bad Request";
    case 401:
      return "Unauthorized";
    case 404:
      return "Not Found";
    case 405:
      return "Method Not Allowed";
    case 431:
      return "Request Header Fields Too Large";
    default:
      return "Error";
  }
}

HttpAnswer text(int status, std::string body) {
  HttpAnswer a;
  a.status = status;
  a.body = std::move(body);
  return a;
}

HttpAnswer page() {
  HttpAnswer a;
  a.content_type = "text/html; charset=utf-8";
  a.body.assign(status_page_html());
  a.headers.emplace_back("Content-Security-Policy", kPagePolicy);
  a.headers.emplace_back("Referrer-Policy", "no-referrer");
  return a;
}

HttpAnswer twemproxy_json(const StatsView& view) {
  HttpAnswer a;
  a.content_type = "application/json";
  render_twemproxy_json(view, a.body);
  return a;
}

// Whether an Accept header asks for HTML first or at all (a browser's
// navigation sends "text/html,application/xhtml+xml,..."; curl sends */*).
bool wants_html(std::string_view accept) {
  return accept.find("text/html") != std::string_view::npos;
}

}  // namespace

HttpAnswer answer_stats_request(const HttpRequest& r, const StatsView& view,
                                const StatsAccess& access) {
  if (r.method != "GET" && r.method != "HEAD") {
    HttpAnswer a = text(405,
                        "only GET and HEAD are served here: nothing on this port changes "
                        "anything\n");
    a.headers.emplace_back("Allow", "GET, HEAD");
    return a;
  }
  if (!access.token.empty() && !authorization_carries(r.header("authorization"), access.token)) {
    HttpAnswer a = text(401, "this stats port needs its token: Authorization: Bearer TOKEN\n");
    // A browser asks for it with its own prompt (any user name).
    a.headers.emplace_back("WWW-Authenticate", "Basic realm=\"memshard stats\", charset=\"UTF-8\"");
    return a;
  }
  if (r.path == "/metrics") {
    HttpAnswer a;
    a.content_type = "text/plain; version=0.0.4; charset=utf-8";
    render_prometheus(view, a.body);
    return a;
  }
  if (r.path == "/status") return page();
  if (r.path == "/") {
    HttpAnswer a = wants_html(r.header("accept")) ? page() : twemproxy_json(view);
    a.headers.emplace_back("Vary", "Accept");
    return a;
  }
  if (r.path == "/status.json") {
    HttpAnswer a;
    a.content_type = "application/json";
    // Past the token check, a token-protected port's reader has it.
    render_status_json(view, access.loopback || !access.token.empty(), a.body);
    return a;
  }
  if (r.path == "/stats" || r.path == "/stats.json") return twemproxy_json(view);
  return text(404, "try /status, /status.json, /metrics or /stats\n");
}

HttpAnswer answer_bad_head(HeadStatus status) {
  if (status == HeadStatus::too_large) return text(431, "request head too large\n");
  return text(400, "not an HTTP request head\n");
}

std::string serialize_answer(const HttpAnswer& a, bool head_only, bool keep_alive) {
  std::string out;
  out.append("HTTP/1.1 ").append(std::to_string(a.status)).append(" ");
  out.append(reason_of(a.status)).append("\r\nContent-Type: ").append(a.content_type);
  out.append("\r\nContent-Length: ").append(std::to_string(a.body.size()));
  // Every answer is of this moment: a cached one would show a stale state.
  out.append("\r\nCache-Control: no-store\r\nX-Content-Type-Options: nosniff");
  for (const auto& [name, value] : a.headers)
    out.append("\r\n").append(name).append(": ").append(value);
  out.append(keep_alive ? "\r\nConnection: keep-alive\r\n\r\n" : "\r\nConnection: close\r\n\r\n");
  if (!head_only) out.append(a.body);
  return out;
}

std::string answer_raw_reader(const StatsView& view, const StatsAccess& access) {
  std::string out;
  if (!access.token.empty()) {
    out.append(
        "{\"service\":\"memshard\", \"error\":\"this stats port needs its token: ask over "
        "HTTP with Authorization: Bearer TOKEN\"}\n");
    return out;
  }
  render_twemproxy_json(view, out);
  return out;
}

}  // namespace memshard::proxy
