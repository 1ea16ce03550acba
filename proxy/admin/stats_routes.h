// What the stats port answers, decided without a socket (stats_server.h
// does the reading and writing):
//
//   /status                the status page (HTML, served from memory)
//   /                      the page for a browser (Accept: text/html),
//                          else twemproxy's JSON, as before
//   /status.json           the page's JSON (status_json.h)
//   /stats, /stats.json    twemproxy's JSON
//   /metrics               Prometheus text format
//
// GET and HEAD only: nothing on this port changes anything. With a stats
// token, every HTTP request must carry it (stats_token.h); a reader that
// does not speak HTTP then gets an error document instead of the stats.
#pragma once

#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "proxy/admin/http_request.h"
#include "proxy/admin/stats_view.h"

namespace memshard::proxy {

struct StatsAccess {
  std::string_view token;  // empty: none required
  bool loopback = false;   // the reader connected from this host
};

struct HttpAnswer {
  int status = 200;
  std::string content_type = "text/plain; charset=utf-8";
  std::vector<std::pair<std::string, std::string>> headers;  // beyond the usual ones
  std::string body;
};

HttpAnswer answer_stats_request(const HttpRequest& request, const StatsView& view,
                                const StatsAccess& access);
// A head that is not one (400) or is too large to read (431).
HttpAnswer answer_bad_head(HeadStatus status);
// The bytes of a reply: status line, headers, and the body unless
// `head_only` (HEAD: the headers GET would get, Content-Length included).
// `keep_alive`: the connection stays open for the client's next request
// (stats_server.cc: HTTP/1.1 clients that did not ask to close).
std::string serialize_answer(const HttpAnswer& answer, bool head_only, bool keep_alive = false);
// A reader that does not speak HTTP (twemproxy's way: connect, read).
std::string answer_raw_reader(const StatsView& view, const StatsAccess& access);

}  // namespace memshard::proxy
