// The fixture of the routing tests (docs/routing.md): a
// memcached per pool of the example, a listener `front` routing
// over them, and reads straight from each server, so every placement is
// checked on the servers themselves.
#pragma once

#include <gtest/gtest.h>

#include <chrono>
#include <memory>
#include <optional>
#include <regex>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include "harness.h"
#include "reload_util.h"

namespace memshard::testing::routes {

using namespace std::chrono_literals;
using Clock = std::chrono::steady_clock;
using reload::Conn;
using reload::Hit;

// The servers behind the listener, by role.
enum Server : size_t {
  kMainA,
  kMainB,
  kSessions,
  kFeeds,
  kFeedsNext,
  kZoneA,
  kZoneB,
  kSpare,
  kServers
};

// What one server holds for a key, read with a meta get: the value and its
// remaining TTL (-1: none).
struct Held {
  std::string value;
  long ttl = -1;
};
inline std::optional<Held> held_on(uint16_t port, const std::string& key) {
  RawClient c(port);
  const std::string reply = c.roundtrip("mg " + key + " v t\r\nmn\r\n", "MN\r\n");
  if (reply.rfind("VA ", 0) != 0) return std::nullopt;
  const size_t eol = reply.find("\r\n");
  const std::string head = reply.substr(0, eol);
  Held h;
  const size_t t = head.find(" t");
  if (t != std::string::npos) h.ttl = std::stol(head.substr(t + 2));
  h.value = reply.substr(eol + 2, std::stoul(head.substr(3)));
  return h;
}

class Routes : public ::testing::Test {
 protected:
  void SetUp() override { port_ = free_port(); }

  uint16_t server(Server s) { return fleet_[s].port(); }
  std::string line(Server s) { return "   - " + fleet_[s].address() + ":1\n"; }

  // The listener `front` over the pools of the example; `routes`
  // is the YAML list under `routes:`, `main_extra` directives for main,
  // `front_extra` for front (write_policy, read_failover_on_miss).
  std::string config(const std::string& routes, const std::string& main_extra = "",
                     const std::string& front_extra = "") {
    std::string y = "front:\n  listen: 127.0.0.1:" + std::to_string(port_) + "\n" + front_extra +
                    "  routes:\n" + routes;
    if (routes.find("pool: main") != std::string::npos) {
      y += "main:\n  hash: fnv1a_64\n  distribution: ketama\n" + main_extra + "  servers:\n" +
           line(kMainA) + line(kMainB);
    }
    const std::pair<const char*, Server> single[] = {
        {"sessions", kSessions},  {"feeds", kFeeds},        {"feeds_next", kFeedsNext},
        {"users_zone_a", kZoneA}, {"users_zone_b", kZoneB}, {"spare", kSpare}};
    // Only the pools something reaches: a pool no route or gutter reaches
    // and without a listen address is refused.
    for (const auto& [name, s] : single) {
      const std::regex named("\\b" + std::string(name) + "\\b");
      if (!std::regex_search(routes + main_extra, named)) continue;
      y += std::string(name) + ":\n";
      if (s == kFeedsNext) y += shadow_extra_;
      y += "  servers:\n" + line(s);
    }
    return y;
  }
  static std::string standard_routes(const std::string& shadow_share = "100%") {
    return "    - prefix: \"sess:\"\n      pool: sessions\n"
           "    - prefix: \"feed:\"\n      pool: feeds\n      shadow: feeds_next\n"
           "      shadow_share: " +
           shadow_share +
           "\n"
           "    - prefix: \"user:\"\n      pools: [users_zone_a, users_zone_b]\n"
           "    - pool: main\n";
  }

  // `args`: memshard's arguments after "-c file" (default: no stats port).
  void start(const std::string& yaml,
             const std::vector<std::string>& args = reload::memshard_args({})) {
    config_ = dir_.write("memshard.yml", yaml);
    log_ = dir_.path() + "/memshard.log";
    try {
      proxy_ = std::make_unique<Memshard>(config_, args, port_, log_);
    } catch (const std::exception& e) {
      FAIL() << e.what() << "\n" << log_tail() << "\n" << yaml;
    }
    ASSERT_TRUE(reload::wait_ready(port_)) << log_tail();
  }
  // As start, with the stats port (JSON, /metrics) on stats_port_.
  void start_with_stats_port(const std::string& yaml) {
    stats_port_ = free_port();
    start(yaml, {"-s", std::to_string(stats_port_), "-a", "127.0.0.1"});
    ASSERT_TRUE(wait_listening(stats_port_)) << log_tail();
  }
  std::string log_tail() {
    const auto r = run_command({"tail", "-c", "3000", log_});
    return r.out;
  }

  // Which of the servers hold `key` (read directly).
  std::set<Server> holders(const std::string& key) {
    std::set<Server> out;
    for (size_t s = 0; s < kServers; ++s) {
      if (held_on(fleet_[s].port(), key)) out.insert(static_cast<Server>(s));
    }
    return out;
  }
  bool on_main(const std::string& key) {
    const auto h = holders(key);
    return h.size() == 1 && (h.count(kMainA) == 1 || h.count(kMainB) == 1);
  }
  uint64_t route_stat(const std::string& name) {
    RawClient c(port_);
    const std::string reply = c.roundtrip("stats routes\r\n", "END\r\n");
    const auto v = stat_value(reply, name);
    return v ? std::stoull(*v) : 0;
  }

  Fleet fleet_{kServers};
  TempDir dir_;
  uint16_t port_ = 0, stats_port_ = 0;
  std::string config_, log_;
  // The shadow pool's directives (feeds_next): a short timeout, so copies
  // to a frozen shadow end.
  std::string shadow_extra_ = "  timeout: 200\n";
  std::unique_ptr<Memshard> proxy_;
};

}  // namespace memshard::testing::routes
