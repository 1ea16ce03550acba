// Server and listen strings, read from the right as twemproxy reads them.
#include "conf/values.h"

#include <gtest/gtest.h>

#include "conf_test_util.h"

namespace memshard::conf {
namespace {

using detail::parse_listen;
using detail::parse_number;
using detail::parse_server;
using detail::parse_switch_time;
using detail::twemproxy_ring_name;

ketama::ServerEntry server(const std::string& text) {
  auto parsed = parse_server(text);
  EXPECT_TRUE(parsed.value) << text << ": " << parsed.error;
  return parsed.value.value_or(ketama::ServerEntry{});
}

// Writes an entry back in nutcracker's syntax.
std::string format(const ketama::ServerEntry& e) {
  std::string out = e.is_unix ? e.host : e.host + ":" + std::to_string(e.port);
  out += ":" + std::to_string(e.weight);
  if (!e.name.empty()) out += " " + e.name;
  return out;
}

TEST(ConfValues, HostPortWeight) {
  const ketama::ServerEntry e = server("10.0.0.1:11212:3");
  EXPECT_EQ(e.host, "10.0.0.1");
  EXPECT_EQ(e.port, 11212);
  EXPECT_EQ(e.weight, 3u);
  EXPECT_EQ(e.name, "");
  EXPECT_FALSE(e.is_unix);
}

TEST(ConfValues, ExplicitNameAfterTheLastSpace) {
  const ketama::ServerEntry e = server("cache-1.example.net:11211:100 shard-7");
  EXPECT_EQ(e.host, "cache-1.example.net");
  EXPECT_EQ(e.port, 11211);
  EXPECT_EQ(e.weight, 100u);
  EXPECT_EQ(e.name, "shard-7");
}

TEST(ConfValues, UnixSocketServer) {
  const ketama::ServerEntry e = server("/var/run/memcached.sock:2 local");
  EXPECT_TRUE(e.is_unix);
  EXPECT_EQ(e.host, "/var/run/memcached.sock");
  EXPECT_EQ(e.port, 0);
  EXPECT_EQ(e.weight, 2u);
  EXPECT_EQ(e.name, "local");
}

TEST(ConfValues, Ipv6WithoutBracketsAsTwemproxy) {
  // Port before the last ':', host is everything before that.
  const ketama::ServerEntry e = server("fe80::1:11211:1");
  EXPECT_EQ(e.host, "fe80::1");
  EXPECT_EQ(e.port, 11211);
  EXPECT_FALSE(parse_server("[::1]:11211:1").value);
}

TEST(ConfValues, TwemproxyRingNames) {
  EXPECT_EQ(twemproxy_ring_name(server("10.0.0.1:11211:1")), "10.0.0.1");
  EXPECT_EQ(twemproxy_ring_name(server("10.0.0.1:11212:1")), "10.0.0.1:11212");
  EXPECT_EQ(twemproxy_ring_name(server("10.0.0.1:11212:1 web")), "web");
  EXPECT_EQ(twemproxy_ring_name(server("/tmp/mc.sock:1")), "/tmp/mc.sock:");
  // The weight is never part of the name.
  EXPECT_EQ(twemproxy_ring_name(server("10.0.0.1:11211:9")), "10.0.0.1");
}

TEST(ConfValues, RoundTripThroughTheWholeParser) {
  const std::vector<std::string> lines = {
      "127.0.0.1:11211:1",        "127.0.0.1:11212:10 ten",    "/tmp/a.sock:1",
      "/tmp/b.sock:3 sockb",      "cache.example.net:11311:2", "::1:11213:1",
      "10.1.2.3:65535:2147483647"};
  std::string servers;
  for (const std::string& l : lines) servers += "   - " + l + "\n";
  const PoolConfig p = testing::only_pool(testing::pool("", servers));
  ASSERT_EQ(p.servers.size(), lines.size());
  for (size_t i = 0; i < lines.size(); ++i) {
    EXPECT_EQ(p.servers[i].text, lines[i]);
    EXPECT_EQ(format(p.servers[i].entry), lines[i]);
    EXPECT_EQ(p.servers[i].line, static_cast<int>(4 + i));
  }
}

TEST(ConfValues, ListenForms) {
  auto tcp = parse_listen("127.0.0.1:22121");
  ASSERT_TRUE(tcp.value);
  EXPECT_EQ(tcp.value->host, "127.0.0.1");
  EXPECT_EQ(tcp.value->port, 22121);

  auto sock = parse_listen("/run/m.sock 0600");
  ASSERT_TRUE(sock.value);
  EXPECT_EQ(sock.value->path, "/run/m.sock");
  EXPECT_EQ(sock.value->perm, 0600u);

  EXPECT_FALSE(parse_listen("/run/m.sock 0999").value);  // nutcracker takes it as 0
  EXPECT_FALSE(parse_listen("/run/m.sock 1777").value);
  EXPECT_FALSE(parse_listen(":22121").value);
  EXPECT_FALSE(parse_listen("127.0.0.1").value);
  EXPECT_FALSE(parse_listen("/" + std::string(107, 'x')).value);  // sun_path is 108 bytes
  EXPECT_TRUE(parse_listen("/" + std::string(106, 'x')).value);
}

TEST(ConfValues, SwitchTimesAreUnixSecondsOrRfc3339InUtc) {
  constexpr int64_t k2026 = int64_t{1767225600} * 1000;  // 2026-01-01T00:00:00Z
  EXPECT_EQ(parse_switch_time("1767225600").value, k2026);
  EXPECT_EQ(parse_switch_time("2026-01-01T00:00:00Z").value, k2026);
  EXPECT_EQ(parse_switch_time("2026-01-01t00:00:00z").value, k2026);
  EXPECT_EQ(parse_switch_time("2026-01-01 00:00:00+00:00").value, k2026);
  EXPECT_EQ(parse_switch_time("2025-12-31T23:59:59.250Z").value, k2026 - 750);
  EXPECT_EQ(parse_switch_time("2024-02-29T12:00:00Z").value, int64_t{1709208000} * 1000);
  EXPECT_EQ(parse_switch_time("1970-01-01T00:00:01Z").value, 1000);
  for (const char* bad : {"", "0", "-5", "1.5", "2026-02-29T00:00:00Z", "2026-13-01T00:00:00Z",
                          "2026-01-01T24:00:00Z", "2026-01-01T00:00:00", "2026-01-01",
                          "2026-01-01T00:00:00.Z", "999999999999999", "tomorrow"}) {
    EXPECT_FALSE(parse_switch_time(bad).value) << bad;
  }
  const auto local = parse_switch_time("2026-01-01T01:00:00+01:00");
  EXPECT_FALSE(local.value);
  EXPECT_NE(local.error.find("in UTC"), std::string::npos) << local.error;
}

TEST(ConfValues, NumbersAreDigitsOnly) {
  EXPECT_EQ(parse_number("0").value, 0);
  EXPECT_EQ(parse_number("0400").value, 400);  // decimal, as nc_atoi
  EXPECT_EQ(parse_number("2147483647").value, 2147483647);
  for (const char* bad : {"", "-1", "+1", "0x10", "1e3", "1.5", " 1", "2147483648"}) {
    EXPECT_FALSE(parse_number(bad).value) << bad;
  }
}

}  // namespace
}  // namespace memshard::conf
