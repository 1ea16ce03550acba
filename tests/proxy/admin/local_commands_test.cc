// The `stats` replies memshard gives itself (admin/local_commands.h), read
// through a fake StatsView: plain `stats` (process, config and every
// counter, per pool too), `stats servers` (every server's counters and
// state), `stats hotkeys`, and memcached's ERROR for anything else.
#include "proxy/admin/local_commands.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <ctime>
#include <map>
#include <string>
#include <utility>
#include <vector>

#include "fake_stats_view.h"
#include "proxy/admin/hot_keys_render.h"
#include "proxy/support/stats.h"
#include "version_text.h"

namespace memshard::proxy {
namespace {

using testing::alpha_fleet;
using testing::FakeStatsView;
using testing::memshard_version;

struct StatReply {
  std::vector<std::pair<std::string, std::string>> stats;  // in order
  bool ended = false;                                      // END came last
  std::vector<std::string> malformed;

  std::map<std::string, std::string> by_name() const {
    std::map<std::string, std::string> m;
    for (const auto& [n, v] : stats) m.emplace(n, v);
    return m;
  }
};

// Reads "STAT <name> <value>\r\n" lines then "END\r\n", as a memcached
// client does: the name is one token, the value the rest of the line.
StatReply read_stats(const std::string& text) {
  StatReply r;
  size_t at = 0;
  while (at < text.size()) {
    const size_t eol = text.find("\r\n", at);
    if (eol == std::string::npos) {
      r.malformed.push_back(text.substr(at));
      break;
    }
    const std::string line = text.substr(at, eol - at);
    at = eol + 2;
    if (r.ended) r.malformed.push_back("after END: " + line);
    if (line == "END") {
      r.ended = true;
      continue;
    }
    const size_t sp = line.find(' ', 5);
    if (!line.starts_with("STAT ") || sp == std::string::npos || sp == 5 || sp + 1 == line.size()) {
      r.malformed.push_back(line);
      continue;
    }
    r.stats.emplace_back(line.substr(5, sp - 5), line.substr(sp + 1));
  }
  return r;
}

StatReply stats(const StatsView& v, std::vector<std::string_view> args) {
  std::string out;
  append_stats_reply(v, args, out);
  StatReply r = read_stats(out);
  for (const std::string& m : r.malformed) ADD_FAILURE() << "malformed line: " << m;
  EXPECT_TRUE(r.ended) << out;
  return r;
}

TEST(LocalStats, ProcessConfigAndWorkerCounters) {
  FakeStatsView v = alpha_fleet();
  v.connections = 17;
  v.client_errors = 4;
  const uint64_t before = static_cast<uint64_t>(time(nullptr));
  const StatReply r = stats(v, {});
  const uint64_t after = static_cast<uint64_t>(time(nullptr));
  std::map<std::string, std::string> m = r.by_name();
  EXPECT_EQ(m.size(), r.stats.size()) << "a name given twice";
  EXPECT_EQ(m["pid"], std::to_string(getpid()));
  EXPECT_EQ(m["uptime"], std::to_string(v.uptime_seconds()));
  const uint64_t now = std::stoull(m["time"]);
  EXPECT_GE(now, before);
  EXPECT_LE(now, after);
  EXPECT_EQ(m["version"], memshard_version());
  EXPECT_EQ(m["threads"], std::to_string(v.thread_count()));
  EXPECT_EQ(m["active_threads"], std::to_string(v.active_threads()));
  EXPECT_EQ(m["config_generation"], std::to_string(v.generation()));
  EXPECT_EQ(m["config_reloads"], std::to_string(v.reloads()));
  EXPECT_EQ(m["config_reload_failures"], std::to_string(v.reload_failures()));
  for (const auto& [name, value] : v.counter_totals()) {
    EXPECT_EQ(m[std::string(name)], std::to_string(value)) << name;
  }
  EXPECT_EQ(m["max_connections"], std::to_string(v.max_connections()));
  EXPECT_EQ(m["rejected_connections"], std::to_string(v.rejected_connections()));
  EXPECT_EQ(m["server_ejects"], std::to_string(v.ejections()));
  EXPECT_EQ(m["server_readmissions"], std::to_string(v.readmissions()));
  EXPECT_EQ(m["dns_address_changes"], std::to_string(v.dns_address_changes()));
  EXPECT_EQ(m["dns_failures"], std::to_string(v.dns_failures()));
}

TEST(LocalStats, EveryPoolCounterOfEveryPool) {
  FakeStatsView v = alpha_fleet();
  v.pool_counter("beta", "requests", 5);
  v.pool_counter("beta", "tls_fail_timeout", 2);
  std::map<std::string, std::string> m = stats(v, {}).by_name();
  const StatsSnapshot snap = v.snapshot();
  for (const auto& [pool, totals] : snap.pools) {
    for (size_t i = 0; i < std::size(kPoolCounterNames); ++i) {
      const std::string name = pool + ":" + std::string(kPoolCounterNames[i]);
      ASSERT_TRUE(m.count(name)) << name;
      EXPECT_EQ(m[name], std::to_string(totals.counters[i])) << name;
    }
    EXPECT_EQ(m[pool + ":server_ejects"], std::to_string(v.pool_ejections(pool)));
    EXPECT_EQ(m.count(pool + ":migrate_running"), 0u) << "no migration, no migration lines";
  }
  EXPECT_EQ(m["beta:requests"], "5");
  EXPECT_EQ(m["beta:tls_fail_timeout"], "2");
}

TEST(LocalStats, APoolsMigrationIsShownWhileItHasOne) {
  FakeStatsView v = alpha_fleet();
  MigrationStatus mig;
  mig.running = true;
  mig.seen = 100;
  mig.moved = 60;
  mig.skipped = 30;
  mig.failed = 2;
  mig.pending = 8;
  mig.seconds_left = 12;
  v.migration["alpha"] = mig;
  std::map<std::string, std::string> m = stats(v, {}).by_name();
  EXPECT_EQ(m["alpha:migrate_running"], "1");
  EXPECT_EQ(m["alpha:migrate_seen"], std::to_string(mig.seen));
  EXPECT_EQ(m["alpha:migrate_moved"], std::to_string(mig.moved));
  EXPECT_EQ(m["alpha:migrate_skipped"], std::to_string(mig.skipped));
  EXPECT_EQ(m["alpha:migrate_failed"], std::to_string(mig.failed));
  EXPECT_EQ(m["alpha:migrate_pending"], std::to_string(mig.pending));
  EXPECT_EQ(m["alpha:migrate_seconds_left"], std::to_string(mig.seconds_left));
}

TEST(LocalStats, APoolsSwitchAndWhoWalksEachOldServer) {
  FakeStatsView v = alpha_fleet();
  v.switch_status["alpha"] = SwitchStatus{true, 4'000'000'000'000, 2000, 5, 1, 0};
  MigrationStatus mig;
  mig.running = true;
  mig.instance = "here:1";
  mig.walks.push_back({"10.0.0.1:11211", "here:1", "walking", 40, 10});
  mig.walks.push_back({"10.0.0.2:11211", "there:2", "done", 70, 30});
  mig.walks.push_back({"10.0.0.3:11211", "", "waiting", 0, 0});
  v.migration["alpha"] = mig;
  std::map<std::string, std::string> m = stats(v, {}).by_name();
  EXPECT_EQ(m["alpha:switch_pending"], "1");
  EXPECT_EQ(m["alpha:switch_at"], "4000000000");
  EXPECT_EQ(m["alpha:switch_window_ms"], "2000");
  EXPECT_EQ(m["alpha:switch_generation"], "5");
  EXPECT_EQ(m["alpha:switches"], "1");
  EXPECT_EQ(m["alpha:switch_late_ms"], "0");
  EXPECT_EQ(m["alpha:migrate_walk:10.0.0.1:11211:walker"], "here:1");
  EXPECT_EQ(m["alpha:migrate_walk:10.0.0.1:11211:here"], "1");
  EXPECT_EQ(m["alpha:migrate_walk:10.0.0.1:11211:state"], "walking");
  EXPECT_EQ(m["alpha:migrate_walk:10.0.0.1:11211:seen"], "40");
  EXPECT_EQ(m["alpha:migrate_walk:10.0.0.1:11211:moved"], "10");
  EXPECT_EQ(m["alpha:migrate_walk:10.0.0.2:11211:walker"], "there:2");
  EXPECT_EQ(m["alpha:migrate_walk:10.0.0.2:11211:here"], "0");
  EXPECT_EQ(m["alpha:migrate_walk:10.0.0.2:11211:state"], "done");
  EXPECT_EQ(m["alpha:migrate_walk:10.0.0.2:11211:moved"], "30");
  EXPECT_EQ(m["alpha:migrate_walk:10.0.0.3:11211:walker"], "-") << "nobody known yet";
  EXPECT_EQ(m["alpha:migrate_walk:10.0.0.3:11211:here"], "0");
  std::map<std::string, std::string> none = stats(alpha_fleet(), {}).by_name();
  EXPECT_EQ(none.count("alpha:switch_pending"), 0u) << "a pool without a switch shows none";
}

TEST(LocalStats, ServersGiveAddressStateAndEveryCounter) {
  FakeStatsView v = alpha_fleet();
  // The ejected server has counters too, so `stats servers` lists it.
  v.server_counter("alpha", "10.0.0.3:11211", "10.0.0.3:11211", "server_eof", 3);
  const StatReply r = stats(v, {"servers"});
  std::map<std::string, std::string> m = r.by_name();
  EXPECT_EQ(m.size(), r.stats.size()) << "a name given twice";
  const StatsSnapshot snap = v.snapshot();
  size_t expected_lines = 0;
  for (const auto& [pool, totals] : snap.pools) {
    for (const auto& [name, server] : totals.servers) {
      const std::string prefix = pool + ":" + name + ":";
      EXPECT_EQ(m[prefix + "address"], server.identity);
      EXPECT_EQ(m[prefix + "state"], v.ejected_at(pool, server.identity) ? "ejected" : "live");
      for (size_t i = 0; i < std::size(kServerCounterNames); ++i) {
        const std::string key = prefix + std::string(kServerCounterNames[i]);
        EXPECT_EQ(m[key], std::to_string(server.counters[i])) << key;
      }
      // What it may hold stale (docs/failures.md): five lines.
      EXPECT_EQ(m[prefix + "repair_keys"], "0");
      EXPECT_EQ(m[prefix + "repairs"], "0");
      EXPECT_EQ(m[prefix + "repair_overflow_flushes"], "0");
      expected_lines += 2 + 5 + std::size(kServerCounterNames);
    }
  }
  EXPECT_EQ(r.stats.size(), expected_lines) << "nothing but the servers' groups";
  EXPECT_EQ(m["alpha:10.0.0.3:11211:state"], "ejected");
  EXPECT_EQ(m["alpha:beta:state"], "live");
  EXPECT_EQ(m["alpha:beta:address"], "10.0.0.2:11211");
}

TEST(LocalStats, HotkeysIsTheHotKeyReport) {
  FakeStatsView v = alpha_fleet();
  std::string out, want;
  append_stats_reply(v, {"hotkeys"}, out);
  render_stat_hot_keys(v.snapshot(), want);
  EXPECT_EQ(out, want);
  EXPECT_NE(out.find("STAT alpha:hot_key:0:key " + escaped_hot_key("user:\"hot\"") + "\r\n"),
            std::string::npos)
      << out;
}

TEST(LocalStats, AnyOtherSubcommandIsMemcachedsError) {
  FakeStatsView v = alpha_fleet();
  for (const std::vector<std::string_view>& args :
       {std::vector<std::string_view>{"items"}, std::vector<std::string_view>{"slabs"},
        std::vector<std::string_view>{"servers", "extra"},
        std::vector<std::string_view>{"hotkeys", "10"}}) {
    std::string out;
    append_stats_reply(v, args, out);
    EXPECT_EQ(out, "ERROR\r\n") << args[0] << " (" << args.size() << " arguments)";
  }
}

TEST(LocalStats, AppendsToWhatTheReplyHoldsAlready) {
  FakeStatsView v = alpha_fleet();
  std::string out = "VERSION x\r\n";
  append_stats_reply(v, {}, out);
  EXPECT_TRUE(out.starts_with("VERSION x\r\nSTAT pid ")) << out.substr(0, 40);
}

}  // namespace
}  // namespace memshard::proxy
