// `memshard top` as a function (cli/top.h) against a stats port the test
// plays, serving /status.json documents the admin layer rendered from a
// fake view: --once shows the second document with rates from the first;
// without it, one plain frame per refresh off a terminal until Ctrl-C, a
// failed refresh said and retried; the token file's token is sent; and bad
// arguments or an unreadable first document exit 1.
#include "proxy/cli/top.h"

#include <gtest/gtest.h>
#include <stdlib.h>
#include <unistd.h>

#include <csignal>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <regex>
#include <sstream>
#include <string>

#include "proxy/admin/status_json.h"
#include "proxy/cli/status_sample.h"
#include "proxy/cli/top_frame.h"
#include "tests/proxy/admin/fake_stats_view.h"
#include "tests/proxy/cli/scripted_http_server.h"

namespace memshard::proxy {
namespace {

using testing_cli::ScriptedHttpServer;

// A status document of `v` taken at `clock_ms` (the real clock moves too
// little between two renders to give rates).
std::string document(const testing::FakeStatsView& v, uint64_t clock_ms) {
  std::string json;
  render_status_json(v, true, json);
  return std::regex_replace(json, std::regex("\"clock_ms\": [0-9]+"),
                            "\"clock_ms\": " + std::to_string(clock_ms));
}

StatusSample sample(const std::string& json) {
  std::string error;
  std::optional<StatusSample> s = parse_status_sample(json, error);
  EXPECT_TRUE(s) << error;
  return s ? *s : StatusSample{};
}

struct TopRun {
  int code;
  std::string out, err;
};
TopRun top(const TopOptions& o) {
  std::ostringstream out, err;
  const int code = run_top(o, out, err);
  return {code, out.str(), err.str()};
}

TopOptions options(uint16_t port) {
  TopOptions o;
  o.server = "127.0.0.1:" + std::to_string(port);
  o.interval_s = 0.05;
  return o;
}

// Two documents a refresh apart: 2000 more requests in 2 s.
struct TwoDocuments {
  std::string before, after;
  TwoDocuments() {
    testing::FakeStatsView v = testing::alpha_fleet();
    before = document(v, 10'000);
    v.pool_counter("alpha", "requests", 3000);
    v.server_counter("alpha", "beta", "10.0.0.2:11211", "requests", 1600);
    after = document(v, 12'000);
  }
};

TEST(Top, OnceShowsTheSecondDocumentWithRatesFromTheFirst) {
  const TwoDocuments docs;
  ScriptedHttpServer server(
      {testing_cli::http(200, "OK", docs.before), testing_cli::http(200, "OK", docs.after)});
  TopOptions o = options(server.port());
  o.once = true;
  const TopRun r = top(o);
  ASSERT_EQ(r.code, 0) << r.err;
  const StatusSample before = sample(docs.before);
  EXPECT_EQ(r.out, render_top_frame(sample(docs.after), &before, TopStyle{false, 100}));
  EXPECT_EQ(r.err, "");
  ASSERT_EQ(server.requests().size(), 2u);
  for (const std::string& head : server.requests()) {
    EXPECT_TRUE(head.starts_with("GET /status.json HTTP/1.1\r\n")) << head;
  }
}

TEST(Top, TheTokenFilesTokenIsSentAsABearer) {
  char dir[] = "/tmp/top_test_XXXXXX";
  ASSERT_NE(mkdtemp(dir), nullptr);
  const std::string token_file = std::string(dir) + "/token";
  std::ofstream(token_file) << "t0ken-value\n";
  const TwoDocuments docs;
  ScriptedHttpServer server({testing_cli::http(200, "OK", docs.before)});
  TopOptions o = options(server.port());
  o.once = true;
  o.token_file = token_file;
  const TopRun r = top(o);
  std::filesystem::remove_all(dir);
  EXPECT_EQ(r.code, 0) << r.err;
  ASSERT_EQ(server.requests().size(), 2u);
  for (const std::string& head : server.requests()) {
    EXPECT_NE(head.find("\r\nAuthorization: Bearer t0ken-value\r\n"), std::string::npos) << head;
  }
}

TEST(Top, BadArgumentsExit1BeforeAskingAnything) {
  const TwoDocuments docs;
  ScriptedHttpServer server({testing_cli::http(200, "OK", docs.before)});
  TopOptions bad_server = options(server.port());
  bad_server.server = "127.0.0.1:0";
  const TopRun r1 = top(bad_server);
  EXPECT_EQ(r1.code, 1);
  EXPECT_NE(r1.err.find("-s"), std::string::npos) << r1.err;
  for (double interval : {0.0, 0.01, 3601.0}) {
    TopOptions o = options(server.port());
    o.interval_s = interval;
    const TopRun r = top(o);
    EXPECT_EQ(r.code, 1) << interval;
    EXPECT_NE(r.err.find("--interval"), std::string::npos) << r.err;
  }
  TopOptions no_token = options(server.port());
  no_token.token_file = "/nonexistent/memshard-top-test-token";
  EXPECT_EQ(top(no_token).code, 1);
  EXPECT_TRUE(server.requests().empty());
}

TEST(Top, AFirstDocumentThatCannotBeReadExits1) {
  {
    ScriptedHttpServer server({testing_cli::http(401, "Unauthorized", "token\n", "text/plain")});
    const TopRun r = top(options(server.port()));
    EXPECT_EQ(r.code, 1);
    EXPECT_TRUE(r.err.starts_with("memshard top: ")) << r.err;
    EXPECT_NE(r.err.find("401"), std::string::npos) << r.err;
    EXPECT_EQ(r.out, "");
  }
  {
    ScriptedHttpServer server({testing_cli::http(200, "OK", "{\"service\":\"other\"}")});
    const TopRun r = top(options(server.port()));
    EXPECT_EQ(r.code, 1);
    EXPECT_EQ(r.out, "");
  }
  {
    SocketAddress address;
    test_sockets::Fd closed = test_sockets::tcp_socket(address, false);
    TopOptions o;
    o.server =
        "127.0.0.1:" +
        std::to_string(ntohs(reinterpret_cast<const sockaddr_in*>(&address.storage)->sin_port));
    const TopRun r = top(o);
    EXPECT_EQ(r.code, 1);
    EXPECT_NE(r.err.find("cannot connect"), std::string::npos) << r.err;
  }
}

// Without --once, top runs until Ctrl-C: SIGINT is raised while the third
// document is asked for (top catches it from its first frame on). Run in a
// child process, which the handler top installs and the flag it sets are
// left in: the test process, and any later test of run_top in it, keep
// their own.
TEST(TopDeathTest, OffATerminalOnePlainFramePerRefreshAndAFailedRefreshIsRetried) {
  const TwoDocuments docs;
  const std::string want_out =
      render_top_frame(sample(docs.before), nullptr, TopStyle{false, 100}) + "\n";
  EXPECT_EXIT(
      {
        testing_cli::Step interrupt = testing_cli::http(200, "OK", docs.after);
        interrupt.before = [] { raise(SIGINT); };
        ScriptedHttpServer server({testing_cli::http(200, "OK", docs.before),
                                   testing_cli::http(500, "Error", "busy\n", "text/plain"),
                                   interrupt});
        const TopRun r = top(options(server.port()));
        std::string problems;
        if (r.code != 0) problems += "exit code " + std::to_string(r.code) + "\n";
        // The first frame, plain; the interrupted refresh shows nothing more.
        if (r.out != want_out) problems += "output:\n" + r.out + "\n";
        if (r.err.find("500") == std::string::npos || r.err.find("retrying") == std::string::npos)
          problems += "the failed refresh is not said and retried: " + r.err + "\n";
        if (server.requests().size() != 3)
          problems += "requests: " + std::to_string(server.requests().size()) + "\n";
        fputs(problems.c_str(), stderr);
        _exit(problems.empty() ? 0 : 1);
      },
      ::testing::ExitedWithCode(0), "");
}

}  // namespace
}  // namespace memshard::proxy
