// The stats port's HTTP head parser: complete, partial, oversized and
// malformed heads, and telling HTTP from a twemproxy-style reader.
#include "proxy/admin/http_request.h"

#include <gtest/gtest.h>

#include <string>

namespace memshard::proxy {
namespace {

TEST(HttpHead, ParsesRequestLinePathQueryAndHeaders) {
  HttpRequest r;
  ASSERT_EQ(parse_http_head("GET /status.json?x=1&y HTTP/1.1\r\nHost: h\r\nACCEPT:  text/html \r\n"
                            "Authorization: Bearer abc\r\n\r\n",
                            8192, r),
            HeadStatus::complete);
  EXPECT_EQ(r.method, "GET");
  EXPECT_EQ(r.path, "/status.json");
  EXPECT_EQ(r.query, "x=1&y");
  EXPECT_EQ(r.header("accept"), "text/html");
  EXPECT_EQ(r.header("authorization"), "Bearer abc");
  EXPECT_EQ(r.header("host"), "h");
  EXPECT_EQ(r.header("cookie"), "");
}

TEST(HttpHead, LenientLineEndsAreAccepted) {
  HttpRequest r;
  ASSERT_EQ(parse_http_head("HEAD / HTTP/1.0\nAccept: */*\n\n", 8192, r), HeadStatus::complete);
  EXPECT_EQ(r.method, "HEAD");
  EXPECT_EQ(r.path, "/");
  EXPECT_EQ(r.header("accept"), "*/*");
}

TEST(HttpHead, WaitsForTheBlankLine) {
  HttpRequest r;
  EXPECT_EQ(parse_http_head("GET / HTTP/1.1\r\nHost: h\r\n", 8192, r), HeadStatus::incomplete);
  EXPECT_EQ(parse_http_head("GET / HTT", 8192, r), HeadStatus::incomplete);
}

TEST(HttpHead, AHeadPastTheBoundIsTooLarge) {
  HttpRequest r;
  std::string head = "GET / HTTP/1.1\r\nX-Filler: " + std::string(9000, 'a');
  EXPECT_EQ(parse_http_head(head, 8192, r), HeadStatus::too_large);
  // Complete, but longer than the bound: still refused.
  EXPECT_EQ(parse_http_head(head + "\r\n\r\n", 8192, r), HeadStatus::too_large);
  // Just within it: served.
  std::string fits = "GET / HTTP/1.1\r\nX: " + std::string(100, 'a') + "\r\n\r\n";
  EXPECT_EQ(parse_http_head(fits, fits.size(), r), HeadStatus::complete);
}

TEST(HttpHead, MalformedHeadsAreSaidSo) {
  HttpRequest r;
  for (const char* bad :
       {"GET /\r\n\r\n", "GET  HTTP/1.1\r\n\r\n", "GET / SPDY/3\r\n\r\n",
        "GET / HTTP/1.1\r\nno colon here\r\n\r\n", "GET / HTTP/1.1\r\n folded: x\r\n\r\n",
        "G(T / HTTP/1.1\r\n\r\n", "GET /a\x01 HTTP/1.1\r\n\r\n", "\r\n\r\n"}) {
    EXPECT_EQ(parse_http_head(bad, 8192, r), HeadStatus::malformed) << bad;
  }
}

TEST(HttpHead, TellsHttpFromARawReader) {
  EXPECT_EQ(looks_like_http("GET / HTTP/1.1"), LooksLike::http);
  EXPECT_EQ(looks_like_http("DELETE /x"), LooksLike::http);
  EXPECT_EQ(looks_like_http("GE"), LooksLike::undecided);
  EXPECT_EQ(looks_like_http("OPTIONS"), LooksLike::undecided);
  EXPECT_EQ(looks_like_http(""), LooksLike::undecided);
  EXPECT_EQ(looks_like_http("stats\r\n"), LooksLike::not_http);
  EXPECT_EQ(looks_like_http("GETX"), LooksLike::not_http);
  EXPECT_EQ(looks_like_http("get / HTTP/1.1"), LooksLike::not_http);
}

}  // namespace
}  // namespace memshard::proxy
