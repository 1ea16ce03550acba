// `memshard top`'s frames: documents rendered by the admin layer from a
// fake view, read back as top reads them, then shown; rates between two of
// them, quantiles from the histogram, alerts, and no colour off a terminal.
#include "proxy/cli/top_frame.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <string>
#include <vector>

#include "../admin/fake_stats_view.h"
#include "proxy/admin/status_json.h"
#include "proxy/cli/status_sample.h"

namespace memshard::proxy {
namespace {

using testing::alpha_fleet;
using testing::FakeStatsView;

StatusSample sample_of(const FakeStatsView& v, uint64_t clock_ms) {
  std::string json, error;
  render_status_json(v, true, json);
  std::optional<StatusSample> s = parse_status_sample(json, error);
  EXPECT_TRUE(s) << error;
  s->clock_ms = clock_ms;  // the real clock moves too little between two renders
  return *s;
}

TEST(TopSample, ReadsWhatThePageReads) {
  StatusSample s = sample_of(alpha_fleet(), 1000);
  EXPECT_EQ(s.generation, 2u);
  EXPECT_EQ(s.reload_failures, 1u);
  EXPECT_FALSE(s.switch_pending);
  ASSERT_EQ(s.pools.size(), 1u);
  EXPECT_EQ(s.pools[0].requests, 1000u);
  ASSERT_EQ(s.pools[0].servers.size(), 4u);
  EXPECT_EQ(s.pools[0].servers[2].state, "ejected");
  EXPECT_DOUBLE_EQ(s.pools[0].servers[1].share, 0.75);
  ASSERT_EQ(s.history.size(), 3u);
  EXPECT_EQ(s.history.back().reason, "memshard.yml:3: listen: bad port");
}

// A pool whose servers come from DNS: /status.json's config.discovery,
// read back by top, in the pool's title, and lookups that fail an alert.
TEST(TopFrame, APoolsDiscoveryNameAndLastChangeInItsTitle) {
  FakeStatsView v = alpha_fleet();
  DiscoveryStatus d;
  d.source = "servers_srv _memcache._tcp.mc.test";
  d.servers = 4;
  d.last_change_ms = 1'700'000'000'000;
  d.pending_since_ms = 1'700'000'060'000;
  d.pending = "joined: mc-4.mc.test:11211";
  d.failing = true;
  v.discovery["alpha"] = d;
  const StatusSample s = sample_of(v, 1000);
  ASSERT_EQ(s.pools.size(), 1u);
  EXPECT_EQ(s.pools[0].discovery, d.source);
  EXPECT_EQ(s.pools[0].discovery_last_change, 1'700'000'000);
  EXPECT_EQ(s.pools[0].discovery_pending, d.pending);
  EXPECT_TRUE(s.pools[0].discovery_failing);
  const std::string frame = render_top_frame(s, nullptr, TopStyle{false, 120});
  EXPECT_NE(frame.find("servers_srv _memcache._tcp.mc.test, servers changed "), std::string::npos)
      << frame;
  EXPECT_NE(frame.find("(waiting: joined: mc-4.mc.test:11211)"), std::string::npos) << frame;
  EXPECT_NE(frame.find("! pool alpha: servers_srv _memcache._tcp.mc.test lookups fail"),
            std::string::npos)
      << frame;
  const StatusSample plain = sample_of(alpha_fleet(), 1000);
  EXPECT_TRUE(plain.pools[0].discovery.empty());
  EXPECT_EQ(render_top_frame(plain, nullptr, TopStyle{false, 120}).find("servers changed"),
            std::string::npos);
}

TEST(TopSample, RefusesWhatIsNotAStatusDocument) {
  std::string error;
  EXPECT_FALSE(parse_status_sample("{\"service\":\"other\"}", error));
  EXPECT_FALSE(parse_status_sample("<html>", error));
  EXPECT_FALSE(parse_status_sample("{\"service\":\"memshard\", \"pools\": [", error));
  EXPECT_NE(error, "");
}

TEST(TopFrame, RatesAreTakenBetweenTwoDocuments) {
  FakeStatsView v = alpha_fleet();
  StatusSample before = sample_of(v, 10'000);
  v.pool_counter("alpha", "requests", 3000);  // +2000 in 2 s
  v.pool_counter("alpha", "forward_error", 7);
  v.pool_counter("alpha", "client_connections", 3);
  v.server_counter("alpha", "beta", "10.0.0.2:11211", "requests", 1600);  // +1000
  StatusSample now = sample_of(v, 12'000);
  const std::string frame = render_top_frame(now, &before, TopStyle{false, 120});
  EXPECT_NE(frame.find(" 1000 "), std::string::npos) << frame;  // pool: 2000 in 2 s
  EXPECT_NE(frame.find(" 500 "), std::string::npos) << frame;   // beta: 1000 in 2 s
  EXPECT_NE(frame.find("127.0.0.1:22122"), std::string::npos);
  EXPECT_NE(frame.find("75.0%"), std::string::npos) << frame;
  EXPECT_EQ(frame.find("(rates from the next refresh on)"), std::string::npos);
  EXPECT_EQ(frame.find('\x1b'), std::string::npos) << "escapes off a terminal";
}

TEST(TopFrame, TheFirstFrameSaysRatesComeNext) {
  StatusSample now = sample_of(alpha_fleet(), 1000);
  const std::string frame = render_top_frame(now, nullptr, TopStyle{true, 100});
  EXPECT_NE(frame.find("(rates from the next refresh on)"), std::string::npos);
  EXPECT_NE(frame.find("\x1b[31;1m"), std::string::npos) << "the ejected server in red";
}

TEST(TopFrame, EjectedServersAndARefusedReloadStandOut) {
  StatusSample now = sample_of(alpha_fleet(), 1000);
  const std::vector<std::string> alerts = top_alerts(now, nullptr);
  ASSERT_EQ(alerts.size(), 2u);
  EXPECT_EQ(alerts[0], "pool alpha: server 10.0.0.3:11211 ejected");
  EXPECT_TRUE(alerts[1].starts_with("reload refused at ")) << alerts[1];
  EXPECT_TRUE(alerts[1].ends_with(": memshard.yml:3: listen: bad port")) << alerts[1];
}

TEST(TopFrame, ErrorsInTheIntervalAreAnAlert) {
  FakeStatsView v = alpha_fleet();
  StatusSample before = sample_of(v, 1000);
  v.pool_counter("alpha", "forward_error", 17);
  StatusSample now = sample_of(v, 2000);
  const std::vector<std::string> alerts = top_alerts(now, &before);
  EXPECT_NE(std::find(alerts.begin(), alerts.end(), "pool alpha: 10.0 errors/s"), alerts.end());
}

TEST(TopSample, ReadsRequestsShed) {
  FakeStatsView v = alpha_fleet();
  v.server_counter("alpha", "beta", "10.0.0.2:11211", "requests_shed", 42);
  StatusSample s = sample_of(v, 1000);
  ASSERT_NE(s.pools[0].server("10.0.0.2:11211"), nullptr);
  EXPECT_EQ(s.pools[0].server("10.0.0.2:11211")->requests_shed, 42u);
  EXPECT_EQ(s.pools[0].server("10.0.0.1:11211")->requests_shed, 0u);
  EXPECT_EQ(s.pools[0].server("10.0.0.7:11211"), nullptr);
}

TEST(TopFrame, RequestsShedPerServerInTheirColumn) {
  FakeStatsView v = alpha_fleet();
  v.server_counter("alpha", "beta", "10.0.0.2:11211", "requests_shed", 4321);
  StatusSample now = sample_of(v, 1000);
  const std::string frame = render_top_frame(now, nullptr, TopStyle{false, 120});
  // The header's SHED over each server's count, right-aligned alike.
  const size_t head = frame.find("SHED");
  ASSERT_NE(head, std::string::npos) << frame;
  const size_t head_line = frame.rfind('\n', head) + 1;
  auto column_end = [&](const std::string& row_start, const std::string& value) {
    const size_t row = frame.find(row_start);
    EXPECT_NE(row, std::string::npos) << frame;
    const size_t at = frame.find(" " + value + "  [", row);
    EXPECT_NE(at, std::string::npos) << row_start << " " << value << "\n" << frame;
    return at + 1 + value.size() - row;
  };
  EXPECT_EQ(column_end("  10.0.0.2:11211", "4321"), head + 4 - head_line);
  EXPECT_EQ(column_end("  10.0.0.1:11211", "0"), head + 4 - head_line);
}

TEST(TopFrame, ServersSheddingInTheIntervalAreAnAlertInRed) {
  FakeStatsView v = alpha_fleet();
  v.server_counter("alpha", "beta", "10.0.0.2:11211", "requests_shed", 100);
  StatusSample before = sample_of(v, 1000);
  // The same count again: shed before, not now; no alert.
  StatusSample same = sample_of(v, 2000);
  for (const std::string& a : top_alerts(same, &before)) EXPECT_EQ(a.find("shedding"), a.npos);
  v.server_counter("alpha", "beta", "10.0.0.2:11211", "requests_shed", 150);  // +50 in 2 s
  StatusSample now = sample_of(v, 3000);
  const std::vector<std::string> alerts = top_alerts(now, &before);
  EXPECT_NE(std::find(alerts.begin(), alerts.end(),
                      "pool alpha: server 10.0.0.2:11211 shedding 25.0 requests/s "
                      "(server_queue_limit reached)"),
            alerts.end());
  const std::string frame = render_top_frame(now, &before, TopStyle{true, 120});
  EXPECT_NE(frame.find("\x1b[31;1m     150\x1b[0m"), std::string::npos) << frame;
  EXPECT_EQ(render_top_frame(same, &before, TopStyle{true, 120}).find("\x1b[31;1m     100"),
            std::string::npos);
}

TEST(LatencyQuantile, LinearWithinTheBucketItFallsIn) {
  const std::vector<uint64_t> bounds = {100, 200, 400};
  // 10 requests in (100, 200], 10 in (200, 400]: the median is 200 us.
  EXPECT_DOUBLE_EQ(*latency_quantile(0.5, bounds, {5, 10, 10, 0}, {5, 0, 0, 0}), 200.0);
  // p99 of those 20: 19.8 of them, 9.8 into the second bucket of 10.
  EXPECT_DOUBLE_EQ(*latency_quantile(0.99, bounds, {5, 10, 10, 0}, {5, 0, 0, 0}), 396.0);
  // In the unbounded bucket: its lower bound.
  EXPECT_DOUBLE_EQ(*latency_quantile(0.5, bounds, {0, 0, 0, 4}, {0, 0, 0, 0}), 400.0);
  // Nothing answered, or the counters went back (a restart): no figure.
  EXPECT_FALSE(latency_quantile(0.5, bounds, {1, 2, 3, 4}, {1, 2, 3, 4}));
  EXPECT_FALSE(latency_quantile(0.5, bounds, {0, 2, 3, 4}, {1, 2, 3, 4}));
}

}  // namespace
}  // namespace memshard::proxy
