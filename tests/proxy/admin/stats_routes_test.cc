// What the stats port answers each request (stats_routes.h): the page at
// /status and at / for a browser, JSON at / for everything else, the
// page's JSON, the token on every path, and proper answers to the rest.
#include "proxy/admin/stats_routes.h"

#include <gtest/gtest.h>

#include <string>

#include "fake_stats_view.h"
#include "proxy/protocol/base64.h"

namespace memshard::proxy {
namespace {

using testing::alpha_fleet;
using testing::FakeStatsView;

HttpRequest get(const std::string& path, const std::string& accept = "",
                const std::string& authorization = "") {
  HttpRequest r;
  r.method = "GET";
  r.path = path;
  if (!accept.empty()) r.headers.emplace_back("accept", accept);
  if (!authorization.empty()) r.headers.emplace_back("authorization", authorization);
  return r;
}

std::string header(const HttpAnswer& a, const std::string& name) {
  for (const auto& [n, v] : a.headers) {
    if (n == name) return v;
  }
  return "";
}

constexpr const char* kBrowserAccept =
    "text/html,application/xhtml+xml,application/xml;q=0.9,image/avif,*/*;q=0.8";

TEST(StatsRoutes, StatusIsThePage) {
  FakeStatsView v = alpha_fleet();
  HttpAnswer a = answer_stats_request(get("/status"), v, {"", true});
  EXPECT_EQ(a.status, 200);
  EXPECT_EQ(a.content_type, "text/html; charset=utf-8");
  EXPECT_TRUE(a.body.starts_with("<!DOCTYPE html>")) << a.body.substr(0, 40);
  EXPECT_NE(a.body.find("/status.json"), std::string::npos);
  // It may load nothing from elsewhere.
  EXPECT_NE(header(a, "Content-Security-Policy").find("default-src 'none'"), std::string::npos);
  EXPECT_NE(header(a, "Content-Security-Policy").find("connect-src 'self'"), std::string::npos);
}

TEST(StatsRoutes, RootIsThePageForABrowserOnly) {
  FakeStatsView v = alpha_fleet();
  HttpAnswer browser = answer_stats_request(get("/", kBrowserAccept), v, {"", true});
  EXPECT_EQ(browser.content_type, "text/html; charset=utf-8");
  EXPECT_EQ(header(browser, "Vary"), "Accept");
  for (const std::string& accept :
       {std::string(""), std::string("*/*"), std::string("application/json")}) {
    HttpAnswer other = answer_stats_request(get("/", accept), v, {"", true});
    EXPECT_EQ(other.status, 200);
    EXPECT_EQ(other.content_type, "application/json") << accept;
    EXPECT_TRUE(other.body.starts_with("{\"service\":\"memshard\"")) << other.body.substr(0, 40);
    EXPECT_EQ(header(other, "Vary"), "Accept");
  }
}

TEST(StatsRoutes, StatsPathsKeepTheirAnswers) {
  FakeStatsView v = alpha_fleet();
  EXPECT_EQ(answer_stats_request(get("/stats"), v, {}).content_type, "application/json");
  EXPECT_EQ(answer_stats_request(get("/stats.json"), v, {}).content_type, "application/json");
  HttpAnswer m = answer_stats_request(get("/metrics"), v, {});
  EXPECT_EQ(m.content_type, "text/plain; version=0.0.4; charset=utf-8");
  EXPECT_NE(m.body.find("memshard_pool_requests_total{pool=\"alpha\"} 1000"), std::string::npos);
}

TEST(StatsRoutes, HotKeysReachThePageJsonOnlyOnLoopbackOrWithTheToken) {
  FakeStatsView v = alpha_fleet();
  HttpAnswer local = answer_stats_request(get("/status.json"), v, {"", true});
  EXPECT_EQ(local.content_type, "application/json");
  EXPECT_NE(local.body.find("user:%22hot%22"), std::string::npos);
  EXPECT_NE(local.body.find("\"hot_keys_hidden\": false"), std::string::npos);

  HttpAnswer remote = answer_stats_request(get("/status.json"), v, {"", false});
  EXPECT_EQ(remote.status, 200);
  EXPECT_EQ(remote.body.find("hot%22"), std::string::npos) << "a key reached a remote reader";
  EXPECT_NE(remote.body.find("\"hot_keys_hidden\": true"), std::string::npos);
  EXPECT_NE(remote.body.find("\"hot_keys\": null"), std::string::npos);

  HttpAnswer with_token =
      answer_stats_request(get("/status.json", "", "Bearer tok"), v, {"tok", false});
  EXPECT_NE(with_token.body.find("user:%22hot%22"), std::string::npos);
}

TEST(StatsRoutes, WithATokenEveryPathNeedsIt) {
  FakeStatsView v = alpha_fleet();
  const StatsAccess access{"s3cret", true};  // loopback does not spare it
  for (const char* path : {"/", "/status", "/status.json", "/stats", "/metrics", "/nope"}) {
    HttpAnswer refused = answer_stats_request(get(path, kBrowserAccept), v, access);
    EXPECT_EQ(refused.status, 401) << path;
    EXPECT_EQ(refused.body.find("memshard_"), std::string::npos) << path;
    EXPECT_EQ(refused.body.find("alpha"), std::string::npos) << path;
    EXPECT_NE(header(refused, "WWW-Authenticate").find("Basic realm="), std::string::npos);
    EXPECT_EQ(answer_stats_request(get(path, "", "Bearer wrong"), v, access).status, 401) << path;
  }
  EXPECT_EQ(answer_stats_request(get("/metrics", "", "Bearer s3cret"), v, access).status, 200);
  std::string basic = "Basic ";
  proto::base64_encode("me:s3cret", basic);
  EXPECT_EQ(answer_stats_request(get("/status", kBrowserAccept, basic), v, access).status, 200);
  EXPECT_EQ(answer_stats_request(get("/nope", "", "Bearer s3cret"), v, access).status, 404);
}

TEST(StatsRoutes, ARawReaderGetsNoStatsWhenATokenIsSet) {
  FakeStatsView v = alpha_fleet();
  std::string open = answer_raw_reader(v, {"", false});
  EXPECT_TRUE(open.starts_with("{\"service\":\"memshard\"")) << open.substr(0, 40);
  EXPECT_NE(open.find("\"alpha\""), std::string::npos);
  std::string closed = answer_raw_reader(v, {"s3cret", true});
  EXPECT_NE(closed.find("\"error\""), std::string::npos);
  EXPECT_EQ(closed.find("alpha"), std::string::npos);
}

TEST(StatsRoutes, OnlyGetAndHeadAreServed) {
  FakeStatsView v = alpha_fleet();
  for (const char* method : {"POST", "PUT", "DELETE", "PATCH", "OPTIONS"}) {
    HttpRequest r = get("/status");
    r.method = method;
    HttpAnswer a = answer_stats_request(r, v, {});
    EXPECT_EQ(a.status, 405) << method;
    EXPECT_EQ(header(a, "Allow"), "GET, HEAD");
  }
}

TEST(StatsRoutes, UnknownPathsAndBadHeadsGetProperAnswers) {
  FakeStatsView v = alpha_fleet();
  HttpAnswer missing = answer_stats_request(get("/../etc/passwd"), v, {});
  EXPECT_EQ(missing.status, 404);
  EXPECT_TRUE(serialize_answer(missing, false).starts_with("HTTP/1.1 404 Not Found\r\n"));
  EXPECT_TRUE(serialize_answer(answer_bad_head(HeadStatus::too_large), false)
                  .starts_with("HTTP/1.1 431 Request Header Fields Too Large\r\n"));
  EXPECT_TRUE(serialize_answer(answer_bad_head(HeadStatus::malformed), false)
                  .starts_with("HTTP/1.1 400 Bad Request\r\n"));
}

TEST(StatsRoutes, HeadSendsTheHeadersOfGetWithoutTheBody) {
  FakeStatsView v = alpha_fleet();
  HttpAnswer a = answer_stats_request(get("/status"), v, {});
  const std::string full = serialize_answer(a, false), head = serialize_answer(a, true);
  EXPECT_EQ(full, head + a.body);
  EXPECT_NE(head.find("Content-Length: " + std::to_string(a.body.size()) + "\r\n"),
            std::string::npos);
  EXPECT_NE(head.find("Cache-Control: no-store\r\n"), std::string::npos);
  EXPECT_TRUE(head.ends_with("Connection: close\r\n\r\n"));
}

}  // namespace
}  // namespace memshard::proxy
