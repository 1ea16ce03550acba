// Logs: -o FILE, timestamps on every line, nothing per request at the
// default level, SIGHUP reopening the file after logrotate moved it,
// SIGTTIN/SIGTTOU changing the level (with an effect one can see), and the
// stats port's own log lines.
#include <gtest/gtest.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <csignal>
#include <cstdio>
#include <regex>
#include <thread>

#include "ops_util.h"

namespace memshard::testing::ops {
namespace {

class Logs : public ::testing::Test {
 protected:
  void start(std::vector<std::string> extra) {
    fleet_ = std::make_unique<Fleet>(2);
    port_ = free_port();
    log_ = dir_.path() + "/memshard.log";
    PoolSpec pool{"alpha", "127.0.0.1:" + std::to_string(port_), {}, fleet_->server_lines()};
    extra.insert(extra.begin(), {"-o", log_});
    proxy_ = start_proxy(dir_, config_yaml({pool}), port_, extra);
  }

  std::string log() const { return read_file(log_); }

  // Sends `sig` and waits until the log holds one more `line` than before.
  bool signal_and_see(int sig, const std::string& line) {
    size_t before = count_of(log(), line);
    proxy_->process().signal(sig);
    return wait_until([&] { return count_of(log(), line) > before; });
  }

  uint64_t reloads() {
    std::optional<Json> j = fetch_stats_json(proxy_->stats_port);
    const Json* r = j ? j->get("config_reloads") : nullptr;
    return r != nullptr ? r->u64().value_or(0) : 0;
  }

  TempDir dir_;
  std::unique_ptr<Fleet> fleet_;
  uint16_t port_ = 0;
  std::string log_;
  std::unique_ptr<Proxy> proxy_;
};

// "[2026-11-30 00:16:01.641] NOTICE message"
const std::regex kLine(
    R"(^\[\d{4}-\d{2}-\d{2} \d{2}:\d{2}:\d{2}\.\d{3}\] (ERROR|WARN|NOTICE|INFO|DEBUG) +\S.*$)");

TEST_F(Logs, EveryLineHasATimestampAndRequestsLogNothing) {
  start({});
  ASSERT_TRUE(wait_until([&] { return log().find(" started: ") != std::string::npos; })) << log();
  const std::string at_start = log();
  for (const std::string& line : lines_of(at_start)) {
    if (line.empty()) continue;
    EXPECT_TRUE(std::regex_match(line, kLine)) << "line without timestamp or level: " << line;
  }
  EXPECT_NE(at_start.find("listening on 127.0.0.1:" + std::to_string(port_)), std::string::npos)
      << at_start;
  EXPECT_NE(at_start.find("stats on 127.0.0.1:" + std::to_string(proxy_->stats_port)),
            std::string::npos)
      << at_start;

  {
    RawClient c(port_);
    for (int i = 0; i < 50; ++i) {
      std::string key = "ops-log-" + std::to_string(i);
      ASSERT_EQ(c.roundtrip(set_command(key, "v")), "STORED\r\n");
      ASSERT_EQ(c.roundtrip("get " + key + " missing-" + key + "\r\n", "END\r\n"),
                "VALUE " + key + " 0 1\r\nv\r\nEND\r\n");
    }
    c.roundtrip("nonsense\r\n");
  }
  std::this_thread::sleep_for(300ms);
  EXPECT_EQ(log(), at_start) << "requests and connections wrote log lines at the default level";
}

TEST_F(Logs, SighupReopensTheLogFileAfterRotation) {
  start({});
  ASSERT_TRUE(wait_until([&] { return log().find(" started: ") != std::string::npos; })) << log();

  for (int round = 1; round <= 2; ++round) {
    const std::string rotated = log_ + "." + std::to_string(round);
    ASSERT_EQ(std::rename(log_.c_str(), rotated.c_str()), 0);  // logrotate's default: move away
    ASSERT_FALSE(file_exists(log_));
    proxy_->process().signal(SIGHUP);
    const std::string in_force =
        "configuration generation " + std::to_string(round + 1) + " in force";
    ASSERT_TRUE(wait_until([&] { return log().find(in_force) != std::string::npos; }))
        << "round " << round << ": no '" << in_force << "' in a new " << log_ << "; it holds:\n"
        << log() << "\nthe moved file holds:\n"
        << read_file(rotated);
    const std::string fresh = log();
    EXPECT_NE(fresh.find("reloading configuration from " + proxy_->config_path), std::string::npos)
        << fresh;
    for (const std::string& line : lines_of(fresh)) {
      if (!line.empty()) {
        EXPECT_TRUE(std::regex_match(line, kLine)) << line;
      }
    }
    // The moved file got nothing of this reload: the reopen came first.
    EXPECT_EQ(read_file(rotated).find(in_force), std::string::npos) << "round " << round << ":\n"
                                                                    << read_file(rotated);
    EXPECT_EQ(count_of(fresh, "reloading configuration"), 1u) << fresh;
  }
  EXPECT_NE(read_file(log_ + ".1").find(" started: "), std::string::npos);

  // Still serving.
  RawClient c(port_);
  EXPECT_EQ(c.roundtrip(set_command("after-rotation", "v")), "STORED\r\n");
}

TEST_F(Logs, SigttinRaisesAndSigttouLowersTheLevel) {
  start({"-v", "5"});
  ASSERT_TRUE(wait_until([&] { return log().find(" started: ") != std::string::npos; })) << log();

  // Down to ERROR (and no lower).
  ASSERT_TRUE(signal_and_see(SIGTTOU, "log level is now WARN")) << log();
  ASSERT_TRUE(signal_and_see(SIGTTOU, "log level is now ERROR")) << log();
  ASSERT_TRUE(signal_and_see(SIGTTOU, "log level is now ERROR")) << log();

  // At ERROR a reload's notices are not written.
  proxy_->process().signal(SIGHUP);
  ASSERT_TRUE(wait_until([&] { return reloads() == 1; })) << "the reload did not happen";
  std::this_thread::sleep_for(200ms);
  EXPECT_EQ(log().find("reloading configuration"), std::string::npos)
      << "a NOTICE line was written at level ERROR:\n"
      << log();

  // Back up to NOTICE: the next reload is in the log.
  ASSERT_TRUE(signal_and_see(SIGTTIN, "log level is now WARN")) << log();
  ASSERT_TRUE(signal_and_see(SIGTTIN, "log level is now NOTICE")) << log();
  proxy_->process().signal(SIGHUP);
  EXPECT_TRUE(wait_until([&] {
    return log().find("configuration generation 3 in force") != std::string::npos;
  })) << log();
  EXPECT_EQ(count_of(log(), "reloading configuration"), 1u) << log();

  // Up to DEBUG (and no higher).
  ASSERT_TRUE(signal_and_see(SIGTTIN, "log level is now INFO")) << log();
  ASSERT_TRUE(signal_and_see(SIGTTIN, "log level is now DEBUG")) << log();
  ASSERT_TRUE(signal_and_see(SIGTTIN, "log level is now DEBUG")) << log();
  EXPECT_EQ(count_of(log(), "log level is now"), 8u) << log();

  // Still serving.
  RawClient c(port_);
  EXPECT_EQ(c.roundtrip(set_command("after-levels", "v")), "STORED\r\n");
}

TEST_F(Logs, VerbosityFourHidesNotices) {
  start({"-v", "4"});
  // Signals are handled by the running loop, so once this line is there
  // the start is over: its NOTICE lines would be there too.
  ASSERT_TRUE(signal_and_see(SIGTTIN, "log level is now NOTICE")) << log();
  EXPECT_EQ(log().find(" started: "), std::string::npos) << log();
  // The one NOTICE line is the level change the operator asked for, which
  // is written whatever the level.
  EXPECT_EQ(count_of(log(), "NOTICE "), 1u) << log();
}

TEST(LogFile, UnwritableLogFileIsAnErrorAtStart) {
  TempDir dir;
  Memcached mc;
  PoolSpec pool{"alpha", "127.0.0.1:" + std::to_string(free_port()), {}, {mc.address() + ":1"}};
  std::string config = dir.write("memshard.yml", config_yaml({pool}));
  CommandResult r = run_command(
      {memshard_binary(), "-c", config, "-s", "0", "-o", dir.path() + "/no/such/dir/memshard.log"},
      {}, 10s);
  EXPECT_FALSE(r.timed_out);
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_NE(r.err.find("cannot open log file"), std::string::npos) << r.err;
}

// The stats port is optional: busy, memshard warns and serves; -s 0, no
// stats listener at all.
TEST(StatsPortLog, BusyStatsPortIsAWarningNotAFailure) {
  int holder = socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  socklen_t len = sizeof(a);
  ASSERT_EQ(bind(holder, reinterpret_cast<sockaddr*>(&a), sizeof(a)), 0);
  ASSERT_EQ(listen(holder, 1), 0);
  getsockname(holder, reinterpret_cast<sockaddr*>(&a), &len);
  const uint16_t busy = ntohs(a.sin_port);

  TempDir dir;
  Memcached mc;
  const uint16_t port = free_port();
  PoolSpec pool{"alpha", "127.0.0.1:" + std::to_string(port), {}, {mc.address() + ":1"}};
  std::string config = dir.write("memshard.yml", config_yaml({pool}));
  const std::string log = dir.path() + "/memshard.log";
  Memshard ms(config, {"-s", std::to_string(busy), "-a", "127.0.0.1", "-o", log}, port);
  RawClient c(port);
  EXPECT_EQ(c.roundtrip(set_command("k", "v")), "STORED\r\n");
  EXPECT_TRUE(wait_until([&] { return read_file(log).find(" started: ") != std::string::npos; }));
  const std::string text = read_file(log);
  EXPECT_NE(text.find("WARN   no stats port"), std::string::npos) << text;
  EXPECT_EQ(text.find("stats on"), std::string::npos) << text;
  close(holder);
}

TEST(StatsPortLog, StatsPortZeroMeansNone) {
  TempDir dir;
  Memcached mc;
  const uint16_t port = free_port();
  PoolSpec pool{"alpha", "127.0.0.1:" + std::to_string(port), {}, {mc.address() + ":1"}};
  std::string config = dir.write("memshard.yml", config_yaml({pool}));
  const std::string log = dir.path() + "/memshard.log";
  Memshard ms(config, {"-s", "0", "-o", log}, port);
  EXPECT_TRUE(wait_until([&] { return read_file(log).find(" started: ") != std::string::npos; }));
  const std::string text = read_file(log);
  EXPECT_EQ(text.find("stats on"), std::string::npos) << text;
  EXPECT_EQ(text.find("no stats port"), std::string::npos) << text;
  // memshard listens on the pool's port and nothing else.
  EXPECT_EQ(listening_tcp_ports(ms.process().pid()), std::vector<uint16_t>{port});
  RawClient c(port);
  EXPECT_EQ(c.roundtrip(set_command("k", "v")), "STORED\r\n");
}

}  // namespace
}  // namespace memshard::testing::ops
