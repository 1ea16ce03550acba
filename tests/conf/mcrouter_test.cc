// mcrouter's JSON config read as memshard's (conf/mcrouter.h): each route
// handle mapped, each refusal said with its JSON path, comments and
// trailing commas, the short forms, and the YAML `convert` prints loading
// back to the same placement.
#include "conf/mcrouter.h"

#include <gtest/gtest.h>

#include <fstream>
#include <sstream>

#include "conf/json.h"
#include "conf_test_util.h"
#include "ketama/ring.h"

namespace memshard::conf {
namespace {

constexpr const char* kJson = "mcrouter.json";

LoadResult load(const std::string& text, const std::string& listen = "") {
  return load_mcrouter(text, kJson, LoadOptions{listen});
}

// Loads text that must map, printing the YAML when it does not load.
Config loaded(const std::string& text, const std::string& listen = "") {
  LoadResult r = load(text, listen);
  for (const ConfigError& e : r.errors) ADD_FAILURE() << e.to_string();
  if (!r.errors.empty()) {
    ADD_FAILURE() << convert_mcrouter(text, kJson, McrouterOptions{listen}).yaml;
  }
  return r.config.value_or(Config{});
}

// The one error a text must give.
ConfigError refused(const std::string& text) {
  LoadResult r = load(text);
  EXPECT_FALSE(r.config.has_value());
  if (r.errors.size() != 1) {
    ADD_FAILURE() << "expected one error, got " << r.errors.size();
    for (const ConfigError& e : r.errors) ADD_FAILURE() << e.to_string();
    return r.errors.empty() ? ConfigError{} : r.errors.front();
  }
  return r.errors.front();
}

const PoolConfig& pool(const Config& c, const std::string& name) {
  static const PoolConfig none;
  const PoolConfig* p = c.find_pool(name);
  if (p == nullptr) {
    ADD_FAILURE() << "no pool " << name;
    return none;
  }
  return *p;
}

std::vector<std::string> addresses(const PoolConfig& p) {
  std::vector<std::string> out;
  for (const ServerConfig& s : p.servers)
    out.push_back(s.entry.host + ":" + std::to_string(s.entry.port));
  return out;
}

const std::string kPools = R"(
  "pools": {
    "A": { "servers": ["127.0.0.1:12001", "127.0.0.1:12002", "127.0.0.1:12003"] },
    "B": { "servers": ["127.0.0.1:12011", "127.0.0.1:12012"] },
    "G": { "servers": ["127.0.0.1:12021"] }
  },)";

std::string with_route(const std::string& route) {
  return "{" + kPools + "\n  \"route\": " + route + "\n}\n";
}

// ---- the JSON itself ----

TEST(McrouterJson, CommentsAndTrailingCommas) {
  const Config c = loaded(R"({
    // a line comment
    "pools": { /* a block comment */
      "A": { "servers": [ "127.0.0.1:12001", "127.0.0.1:12002", ], },
    },
    "route": "PoolRoute|A",
  })");
  EXPECT_EQ(addresses(pool(c, "A")),
            (std::vector<std::string>{"127.0.0.1:12001", "127.0.0.1:12002"}));
}

TEST(McrouterJson, DuplicateKeyRefusedWithItsLine) {
  const ConfigError e = refused("{\n \"route\": \"PoolRoute|A\",\n \"route\": \"PoolRoute|B\"\n}");
  EXPECT_EQ(e.line, 3);
  EXPECT_NE(e.message.find("already given on line 2"), std::string::npos) << e.message;
}

TEST(McrouterJson, MalformedSaysWhere) {
  const ConfigError e = refused("{\n \"pools\": {,\n}");
  EXPECT_EQ(e.line, 2);
  EXPECT_NE(e.message.find("malformed JSON"), std::string::npos) << e.message;
}

TEST(McrouterJson, TreeKeepsLinesAndNumbersAsWritten) {
  const json::ParseResult r = json::parse("{\"a\":\n [0.50, 1e0]}");
  ASSERT_TRUE(r.value);
  const json::Value* a = r.value->get("a");
  ASSERT_NE(a, nullptr);
  EXPECT_EQ(a->line, 2);
  EXPECT_EQ(a->items[0].text, "0.50");
  EXPECT_EQ(a->items[1].text, "1e0");
}

TEST(McrouterJson, DetectedByNameOrFirstCharacter) {
  EXPECT_TRUE(is_mcrouter_config("pools: x", "a.json"));
  EXPECT_TRUE(is_mcrouter_config("  \n{}", "mcrouter.conf"));
  EXPECT_TRUE(is_mcrouter_config("// comment\n{}", "mcrouter.conf"));
  EXPECT_FALSE(is_mcrouter_config("# yaml\nmain:\n", "memshard.yml"));
  EXPECT_FALSE(is_mcrouter_config("main:\n  listen: x\n", "nutcracker.yml"));
}

// ---- pools and their hashes ----

TEST(McrouterPools, PoolRouteIsACh3Pool) {
  const Config c = loaded(with_route("\"PoolRoute|A\""));
  ASSERT_EQ(c.pools.size(), 1u);
  const PoolConfig& a = pool(c, "A");
  EXPECT_EQ(a.ring.distribution, ketama::Distribution::ch3);
  EXPECT_EQ(a.ring.hash_salt, "");
  EXPECT_EQ(a.listen.text, kMcrouterPlaceholderListen);
  EXPECT_EQ(a.timeout_ms, 1000);  // mcrouter's --server-timeout default
  EXPECT_FALSE(a.auto_eject_hosts);
  EXPECT_EQ(addresses(a),
            (std::vector<std::string>{"127.0.0.1:12001", "127.0.0.1:12002", "127.0.0.1:12003"}));
}

TEST(McrouterPools, ListenFromTheCommandLine) {
  const Config c = loaded(with_route("\"PoolRoute|A\""), "127.0.0.1:5111");
  EXPECT_EQ(pool(c, "A").listen.port, 5111);
}

TEST(McrouterPools, ServerForms) {
  const Config c = loaded(R"({"pools": {"A": {"servers": [
      "[::1]:12001", "localhost:12002:ascii", "127.0.0.1:12003:ascii:plain",
      "unix:/tmp/mc.sock"]}}, "route": "PoolRoute|A"})");
  const PoolConfig& a = pool(c, "A");
  ASSERT_EQ(a.servers.size(), 4u);
  EXPECT_EQ(a.servers[0].entry.host, "::1");
  EXPECT_EQ(a.servers[1].entry.host, "localhost");
  EXPECT_EQ(a.servers[2].entry.port, 12003);
  EXPECT_EQ(a.servers[3].entry.host, "/tmp/mc.sock");
  EXPECT_TRUE(a.servers[3].entry.is_unix);
}

TEST(McrouterPools, WeightsMakeWeightedCh3) {
  const Config c = loaded(R"({"pools": {"A": {"servers": ["127.0.0.1:12001", "127.0.0.1:12002"],
      "weights": [1, 0.5]}}, "route": "PoolRoute|A"})");
  const PoolConfig& a = pool(c, "A");
  EXPECT_EQ(a.ring.distribution, ketama::Distribution::wch3);
  ASSERT_EQ(a.servers.size(), 2u);
  EXPECT_DOUBLE_EQ(a.servers[0].entry.fraction, 1.0);
  EXPECT_DOUBLE_EQ(a.servers[1].entry.fraction, 0.5);
}

TEST(McrouterPools, PoolRouteHashOverridesThePools) {
  const std::string pools = R"("pools": {"A": {"servers": ["127.0.0.1:12001", "127.0.0.1:12002"],
      "weights": [1, 0.5]}},)";
  Config c = loaded("{" + pools + R"("route": {"type": "PoolRoute", "pool": "A", "hash": "Ch3"}})");
  EXPECT_EQ(pool(c, "A").ring.distribution, ketama::Distribution::ch3);
  c = loaded("{" + pools +
             R"("route": {"type": "PoolRoute", "pool": "A", "hash": {"salt": "s1"}}})");
  EXPECT_EQ(pool(c, "A").ring.distribution, ketama::Distribution::wch3);
  EXPECT_EQ(pool(c, "A").ring.hash_salt, "s1");
  c = loaded("{" + pools +
             R"("route": {"type": "PoolRoute", "pool": "A", "hash": {"hash_func": "Crc32"}}})");
  EXPECT_EQ(pool(c, "A").ring.distribution, ketama::Distribution::crc32);
}

TEST(McrouterPools, InheritAndTimeout) {
  const Config c = loaded(R"({"pools": {
      "base": {"servers": ["127.0.0.1:12001"], "server_timeout": 250},
      "A": {"inherit": "base", "servers": ["127.0.0.1:12002", "127.0.0.1:12003"]}},
    "route": "PoolRoute|A"})");
  const PoolConfig& a = pool(c, "A");
  EXPECT_EQ(a.timeout_ms, 250);
  EXPECT_EQ(addresses(a), (std::vector<std::string>{"127.0.0.1:12002", "127.0.0.1:12003"}));
}

TEST(McrouterPools, InlinePool) {
  const Config c = loaded(R"({"route": {"type": "PoolRoute",
      "pool": {"name": "X", "servers": ["127.0.0.1:12001", "127.0.0.1:12002"]}}})");
  EXPECT_EQ(pool(c, "X").servers.size(), 2u);
}

TEST(McrouterPools, HashRouteShortFormIsCh3WhateverThePoolsWeights) {
  // mcrouter applies a pool's weights in PoolRoute only.
  const Config c = loaded(R"({"pools": {"A": {"servers": ["127.0.0.1:12001", "127.0.0.1:12002"],
      "weights": [1, 0.5]}}, "route": "HashRoute|Pool|A"})");
  EXPECT_EQ(pool(c, "A").ring.distribution, ketama::Distribution::ch3);
}

TEST(McrouterPools, HashRouteObject) {
  const Config c = loaded(with_route(R"({"type": "HashRoute", "children": "Pool|B",
      "hash_func": "WeightedCh3", "weights": [0.25, 1], "salt": "x"})"));
  const PoolConfig& b = pool(c, "B");
  EXPECT_EQ(b.ring.distribution, ketama::Distribution::wch3);
  EXPECT_EQ(b.ring.hash_salt, "x");
  EXPECT_DOUBLE_EQ(b.servers[0].entry.fraction, 0.25);
}

TEST(McrouterPools, HashRouteOverTwoPoolsHashesTheirServersInOrder) {
  const Config c = loaded(with_route(R"({"type": "HashRoute", "children": ["Pool|A", "Pool|B"]})"));
  const PoolConfig& ab = pool(c, "A+B");
  EXPECT_EQ(ab.servers.size(), 5u);
  EXPECT_EQ(ab.ring.distribution, ketama::Distribution::ch3);
}

// ---- routes ----

TEST(McrouterRoutes, PrefixSelector) {
  const Config c = loaded(with_route(R"({"type": "PrefixSelectorRoute",
      "policies": {"a": "PoolRoute|A", "ab": "PoolRoute|B"}, "wildcard": "PoolRoute|G"})"));
  const PoolConfig& front = pool(c, "mcrouter");
  EXPECT_EQ(front.listen.text, kMcrouterPlaceholderListen);
  ASSERT_EQ(front.routes.size(), 3u);
  EXPECT_EQ(front.routes[0].prefix, "a");
  EXPECT_EQ(front.routes[0].pools, std::vector<std::string>{"A"});
  EXPECT_EQ(front.routes[1].prefix, "ab");
  EXPECT_EQ(front.routes[1].pools, std::vector<std::string>{"B"});
  EXPECT_TRUE(front.routes[2].is_default);
  EXPECT_EQ(front.routes[2].pools, std::vector<std::string>{"G"});
  EXPECT_FALSE(pool(c, "A").has_listen());
}

TEST(McrouterRoutes, ErrorRouteWildcardLeavesOtherKeysWithoutARoute) {
  const Config c = loaded(with_route(R"({"type": "PrefixSelectorRoute",
      "policies": {"a": "PoolRoute|A"}, "wildcard": "ErrorRoute|no such key"})"));
  const PoolConfig& front = pool(c, "mcrouter");
  ASSERT_EQ(front.routes.size(), 1u);
  EXPECT_FALSE(front.routes[0].is_default);
}

TEST(McrouterRoutes, ReplicatedPoolsOfTheWiki) {
  const Config c = loaded(with_route(R"({"type": "OperationSelectorRoute",
      "operation_policies": {"add": "AllSyncRoute|Pool|A", "delete": "AllSyncRoute|Pool|A",
        "get": "LatestRoute|Pool|A", "set": "AllSyncRoute|Pool|A"}})"));
  ASSERT_EQ(c.pools.size(), 1u);
  const PoolConfig& a = pool(c, "A");
  EXPECT_EQ(a.replicas, 3u);
  EXPECT_EQ(a.write_policy, WritePolicy::all);
  EXPECT_TRUE(a.auto_eject_hosts);
  EXPECT_FALSE(a.read_failover_on_miss);
  EXPECT_TRUE(a.has_listen());
}

TEST(McrouterRoutes, AllRoutesOverAPoolAreItsReplicas) {
  const std::pair<const char*, WritePolicy> cases[] = {
      {"AllSyncRoute", WritePolicy::all},          {"AllAsyncRoute", WritePolicy::first},
      {"AllInitialRoute", WritePolicy::first},     {"AllFastestRoute", WritePolicy::first},
      {"AllMajorityRoute", WritePolicy::majority},
  };
  for (const auto& [type, policy] : cases) {
    const Config c = loaded(with_route("\"" + std::string(type) + "|Pool|B\""));
    const PoolConfig& b = pool(c, "B");
    EXPECT_EQ(b.replicas, 2u) << type;
    EXPECT_EQ(b.write_policy, policy) << type;
  }
}

TEST(McrouterRoutes, AllSyncOverPoolRoutesIsZoneCopies) {
  const Config c =
      loaded(with_route(R"({"type": "AllSyncRoute", "children": ["PoolRoute|A", "PoolRoute|B"]})"));
  const PoolConfig& front = pool(c, "mcrouter");
  EXPECT_EQ(front.write_policy, WritePolicy::all);
  ASSERT_EQ(front.routes.size(), 1u);
  EXPECT_EQ(front.routes[0].pools, (std::vector<std::string>{"A", "B"}));
  EXPECT_EQ(pool(c, "A").replicas, 1u);
}

TEST(McrouterRoutes, MissFailoverReadsBesideAllSyncWrites) {
  const Config c = loaded(with_route(R"({"type": "OperationSelectorRoute",
      "operation_policies": {"get": {"type": "MissFailoverRoute",
                                     "children": ["PoolRoute|A", "PoolRoute|B"]}},
      "default_policy": {"type": "AllInitialRoute", "children": ["PoolRoute|A", "PoolRoute|B"]}})"));
  const PoolConfig& front = pool(c, "mcrouter");
  EXPECT_TRUE(front.read_failover_on_miss);
  EXPECT_EQ(front.write_policy, WritePolicy::first);
  EXPECT_EQ(front.routes[0].pools, (std::vector<std::string>{"A", "B"}));
}

TEST(McrouterRoutes, FailoverRouteToAnotherPoolIsItsGutter) {
  const Config c = loaded(with_route(R"({"type": "FailoverRoute",
      "children": ["PoolRoute|A", "PoolRoute|G"]})"));
  const PoolConfig& a = pool(c, "A");
  EXPECT_EQ(a.gutter, "G");
  EXPECT_EQ(a.gutter_ttl_s, 2592000u);  // no cap in mcrouter: memshard's longest
  EXPECT_TRUE(a.auto_eject_hosts);
  EXPECT_TRUE(a.has_listen());
  EXPECT_FALSE(pool(c, "G").has_listen());
}

TEST(McrouterRoutes, FailoverWithExptimeIsAGutterWithItsTtl) {
  Config c = loaded(with_route(R"({"type": "FailoverWithExptimeRoute",
      "normal": "PoolRoute|A", "failover": "PoolRoute|G"})"));
  EXPECT_EQ(pool(c, "A").gutter_ttl_s, 60u);  // mcrouter's default failover_exptime
  c = loaded(with_route(R"({"type": "FailoverWithExptimeRoute",
      "normal": "PoolRoute|A", "failover": ["PoolRoute|G"], "failover_exptime": 15})"));
  EXPECT_EQ(pool(c, "A").gutter_ttl_s, 15u);
}

TEST(McrouterRoutes, ModifyExptimeMinOnAFailoverPool) {
  const Config c = loaded(with_route(R"({"type": "FailoverRoute", "children": ["PoolRoute|A",
      {"type": "ModifyExptimeRoute", "target": "PoolRoute|G", "exptime": 30, "action": "min"}]})"));
  EXPECT_EQ(pool(c, "A").gutter, "G");
  EXPECT_EQ(pool(c, "A").gutter_ttl_s, 30u);
}

// WarmUpRoute: the route's pool is the cold side, warm_from the warm one.
TEST(McrouterRoutes, WarmUpRoute) {
  Config c = loaded(with_route(R"({"type": "WarmUpRoute", "cold": "PoolRoute|A",
      "warm": "PoolRoute|B", "exptime": 600})"));
  const PoolConfig& front = pool(c, "mcrouter");
  ASSERT_EQ(front.routes.size(), 1u);
  EXPECT_EQ(front.routes[0].pools, std::vector<std::string>{"A"});
  EXPECT_EQ(front.routes[0].warm_from, "B");
  EXPECT_EQ(front.routes[0].warm_ttl_s, 600);
  // No exptime (and no metaget, as mcrouter's open-source build): copies
  // that never expire.
  c = loaded(with_route(R"({"type": "WarmUpRoute", "cold": "PoolRoute|A",
      "warm": "PoolRoute|B"})"));
  EXPECT_EQ(pool(c, "mcrouter").routes[0].warm_ttl_s, 0);
  // Under a prefix.
  c = loaded(with_route(R"({"type": "PrefixSelectorRoute", "policies": {"w:": {
      "type": "WarmUpRoute", "cold": "PoolRoute|A", "warm": "PoolRoute|B", "exptime": 5}},
      "wildcard": "PoolRoute|A"})"));
  ASSERT_EQ(pool(c, "mcrouter").routes.size(), 2u);
  EXPECT_EQ(pool(c, "mcrouter").routes[0].warm_from, "B");
  EXPECT_TRUE(pool(c, "mcrouter").routes[1].warm_from.empty());
}

// ModifyExptimeRoute around a pool: its ttl_set (action set, the default)
// or ttl_max (min); the pool used without it too becomes two pools.
TEST(McrouterRoutes, ModifyExptimeOnAPool) {
  Config c = loaded(with_route(R"({"type": "ModifyExptimeRoute", "target": "PoolRoute|A",
      "exptime": 10})"));
  EXPECT_EQ(pool(c, "A").ttl_set_s, std::optional<uint32_t>(10));
  c = loaded(with_route(R"({"type": "ModifyExptimeRoute", "target": "PoolRoute|A",
      "exptime": 10, "action": "min"})"));
  EXPECT_EQ(pool(c, "A").ttl_max_s, 10u);
  EXPECT_FALSE(pool(c, "A").ttl_set_s);
  // min 0 changes nothing, as in mcrouter.
  c = loaded(with_route(R"({"type": "ModifyExptimeRoute", "target": "PoolRoute|A",
      "exptime": 0, "action": "min"})"));
  EXPECT_EQ(pool(c, "A").ttl_max_s, 0u);
  c = loaded(with_route(R"({"type": "PrefixSelectorRoute", "policies": {"x": {
      "type": "ModifyExptimeRoute", "target": "PoolRoute|B", "exptime": 7}},
      "wildcard": "PoolRoute|B"})"));
  EXPECT_EQ(pool(c, "B").ttl_set_s, std::optional<uint32_t>(7));
  EXPECT_FALSE(pool(c, "B_2").ttl_set_s);
  EXPECT_EQ(addresses(pool(c, "B")), addresses(pool(c, "B_2")));
  // Nested: the inner set decides.
  c = loaded(with_route(R"({"type": "ModifyExptimeRoute", "exptime": 100, "action": "min",
      "target": {"type": "ModifyExptimeRoute", "target": "PoolRoute|A", "exptime": 300}})"));
  EXPECT_EQ(pool(c, "A").ttl_set_s, std::optional<uint32_t>(300));
}

// The wiki's two-level caching: reads local first, the shared pool on a
// miss, copied back; writes to both, the local copy with its expiry set.
TEST(McrouterRoutes, TwoLevelCaching) {
  const Config c = loaded(with_route(R"({"type": "OperationSelectorRoute",
      "operation_policies": {"get": {"type": "WarmUpRoute", "cold": "PoolRoute|G",
        "warm": "PoolRoute|B", "exptime": 10}},
      "default_policy": {"type": "AllSyncRoute", "children": ["PoolRoute|B",
        {"type": "ModifyExptimeRoute", "target": "PoolRoute|G", "exptime": 10}]}})"));
  const PoolConfig& front = pool(c, "mcrouter");
  ASSERT_EQ(front.routes.size(), 1u);
  EXPECT_EQ(front.routes[0].pools, (std::vector<std::string>{"G", "B"})) << "the cold pool first";
  EXPECT_EQ(front.routes[0].warm_from, "B");
  EXPECT_EQ(front.routes[0].warm_ttl_s, 10);
  EXPECT_EQ(front.write_policy, WritePolicy::all);
  EXPECT_EQ(pool(c, "G").ttl_set_s, std::optional<uint32_t>(10));
  EXPECT_FALSE(pool(c, "B").ttl_set_s);
}

// NullRoute (and DevNullRoute) as a whole route: a blackhole route.
TEST(McrouterRoutes, NullRouteIsABlackholeRoute) {
  Config c = loaded(with_route(R"({"type": "PrefixSelectorRoute", "policies": {
      "junk:": "NullRoute", "x:": {"type": "DevNullRoute"}}, "wildcard": "PoolRoute|A"})"));
  const PoolConfig& front = pool(c, "mcrouter");
  ASSERT_EQ(front.routes.size(), 3u);
  EXPECT_TRUE(front.routes[0].blackhole);
  EXPECT_TRUE(front.routes[0].pools.empty());
  EXPECT_TRUE(front.routes[1].blackhole);
  EXPECT_FALSE(front.routes[2].blackhole);
  c = loaded(with_route(R"("NullRoute")"));
  ASSERT_EQ(pool(c, "mcrouter").routes.size(), 1u);
  EXPECT_TRUE(pool(c, "mcrouter").routes[0].blackhole);
  EXPECT_TRUE(pool(c, "mcrouter").routes[0].is_default);
}

TEST(McrouterRoutes, RoutesWithAliases) {
  Config c = loaded("{" + kPools +
                    R"("routes": [{"aliases": ["/r/c1/", "/r/c2/"], "route": "PoolRoute|B"}]})");
  EXPECT_EQ(pool(c, "B").servers.size(), 2u);
  c = loaded("{" + kPools + R"("routes": {"/r/c1/": "PoolRoute|B", "/r/c2/": "PoolRoute|B"}})");
  EXPECT_EQ(pool(c, "B").servers.size(), 2u);
}

TEST(McrouterRoutes, NamedHandles) {
  const Config c = loaded("{" + kPools + R"(
    "named_handles": [{"type": "PoolRoute", "name": "main", "pool": "B"}],
    "route": {"type": "PrefixSelectorRoute", "policies": {"x": "main"}, "wildcard": "main"}})");
  EXPECT_EQ(pool(c, "mcrouter").routes.size(), 2u);
  EXPECT_EQ(c.pools.size(), 2u);  // the listener and B, once
}

TEST(McrouterRoutes, SamePoolTwoHashesIsTwoPools) {
  const Config c = loaded(with_route(R"({"type": "PrefixSelectorRoute", "policies": {
      "x": {"type": "PoolRoute", "pool": "B", "hash": {"salt": "one"}}},
      "wildcard": "PoolRoute|B"})"));
  EXPECT_EQ(pool(c, "B").ring.hash_salt, "one");
  EXPECT_EQ(pool(c, "B_2").ring.hash_salt, "");
}

// ---- refusals, each with its JSON path ----

struct Refusal {
  std::string route;  // the route's JSON (with kPools)
  std::string path;   // the path the error names
  std::string says;   // part of its message
};

class McrouterRefusals : public ::testing::TestWithParam<Refusal> {};

TEST_P(McrouterRefusals, SaysWhereAndWhy) {
  const Refusal& r = GetParam();
  const ConfigError e = refused(with_route(r.route));
  EXPECT_EQ(e.file, kJson);
  EXPECT_EQ(e.directive, r.path) << e.to_string();
  EXPECT_NE(e.message.find(r.says), std::string::npos) << e.to_string();
  EXPECT_GT(e.line, 0) << e.to_string();
}

INSTANTIATE_TEST_SUITE_P(
    Handles, McrouterRefusals,
    ::testing::Values(
        Refusal{R"({"type": "WarmUpRoute", "cold": "PoolRoute|A", "warm": "PoolRoute|A"})", "route",
                "the same pool"},
        Refusal{R"({"type": "WarmUpRoute", "cold": "PoolRoute|A", "warm": "PoolRoute|B",
                  "enable_metaget": true})",
                "route.enable_metaget", "metaget"},
        Refusal{R"({"type": "WarmUpRoute", "cold": "PoolRoute|A", "warm": "PoolRoute|B",
                  "exptime": -5})",
                "route.exptime", "0 or more"},
        Refusal{R"({"type": "FailoverRoute", "children": [{"type": "WarmUpRoute",
                  "cold": "PoolRoute|A", "warm": "PoolRoute|B"}, "PoolRoute|G"]})",
                "route", "WarmUpRoute inside another route handle"},
        Refusal{R"({"type": "WarmUpRoute", "cold": "AllSyncRoute|Pool|A", "warm": "PoolRoute|B"})",
                "route", "cold route is"},
        Refusal{R"({"type": "OperationSelectorRoute", "operation_policies": {
                  "get": {"type": "WarmUpRoute", "cold": "PoolRoute|A", "warm": "PoolRoute|B"}},
                  "default_policy": "PoolRoute|G"})",
                "route", "does not write it"},
        Refusal{R"({"type": "OperationSelectorRoute", "operation_policies": {"get": {
                  "type": "WarmUpRoute", "cold": "PoolRoute|A", "warm": "PoolRoute|B",
                  "exptime": 60}}, "default_policy": {"type": "ModifyExptimeRoute",
                  "target": "PoolRoute|A", "exptime": 10}})",
                "route", "a warm-up's copies included"},
        Refusal{R"({"type": "ModifyExptimeRoute", "target": "PoolRoute|A", "exptime": 10,
                  "action": "max"})",
                "route.action", "\"set\" or \"min\""},
        Refusal{R"({"type": "ModifyExptimeRoute", "target": "PoolRoute|A", "exptime": -1})",
                "route.exptime", "0 or more"},
        Refusal{R"({"type": "ModifyExptimeRoute", "exptime": 10,
                  "target": {"type": "AllSyncRoute", "children": ["PoolRoute|A", "PoolRoute|B"]}})",
                "route", "put the ModifyExptimeRoute around each PoolRoute"},
        Refusal{R"({"type": "OperationSelectorRoute", "operation_policies": {"get": "PoolRoute|A"},
                  "default_policy": {"type": "ModifyExptimeRoute", "target": "PoolRoute|A",
                  "exptime": 10}})",
                "route", "gat's and touch's included"},
        Refusal{R"({"type": "FailoverRoute", "children": ["PoolRoute|A", "NullRoute"]})", "route",
                "NullRoute inside another route handle"},
        Refusal{R"({"type": "OperationSelectorRoute", "operation_policies": {"get": "NullRoute"},
                  "default_policy": "PoolRoute|A"})",
                "route", "for reads only"},
        Refusal{R"({"type": "NullRoute", "response": "x"})", "route.response", "NullRoute"},
        Refusal{R"({"type": "BlackholeRoute", "default": "PoolRoute|A"})", "route",
                "BlackholeRoute is a route handle memshard does not map"},
        Refusal{R"("LatestRoute|Pool|A")", "route", "LatestRoute writes"},
        Refusal{R"("FailoverRoute|Pool|A")", "route", "first server"},
        Refusal{R"({"type": "MissFailoverRoute", "children": ["PoolRoute|A", "PoolRoute|B"]})",
                "route", "first child only"},
        Refusal{R"({"type": "PoolRoute", "pool": "A", "shadows": []})", "route.shadows", "shadow"},
        Refusal{R"({"type": "PoolRoute", "pool": "A", "hash": "Rendezvous"})", "route.hash",
                "Ch3, WeightedCh3 and Crc32"},
        Refusal{R"({"type": "FailoverRoute", "children": ["PoolRoute|A", "PoolRoute|B"],
                  "failover_errors": ["timeout"]})",
                "route.failover_errors", "fails over on every error"},
        Refusal{R"({"type": "RandomRoute", "children": "Pool|A"})", "route",
                "RandomRoute is a route handle memshard does not map"},
        Refusal{R"("PoolRoute|Nope")", "route", "no pool named 'Nope'"},
        Refusal{R"({"type": "OperationSelectorRoute", "operation_policies": {
                  "get": "PoolRoute|A", "set": "PoolRoute|A", "delete": "PoolRoute|B"}})",
                "route.operation_policies.delete", "routes writes otherwise"},
        Refusal{R"({"type": "OperationSelectorRoute", "operation_policies": {
                  "get": "LatestRoute|Pool|A", "set": "AllSyncRoute|Pool|B"}})",
                "route", "reads go to LatestRoute|Pool|A and writes to AllSyncRoute|Pool|B"},
        Refusal{R"({"type": "OperationSelectorRoute", "operation_policies": {
                  "get": "PoolRoute|A", "flushall": "PoolRoute|A"}})",
                "route.operation_policies.flushall", "keyed operations only"},
        Refusal{R"({"type": "OperationSelectorRoute", "operation_policies": {
                  "get": "PoolRoute|A"}})",
                "route", "no policy for writes"},
        Refusal{R"({"type": "PrefixSelectorRoute", "policies": {
                  "a": {"type": "PrefixSelectorRoute", "wildcard": "PoolRoute|A"}}})",
                "route.policies.a", "do not nest"},
        Refusal{R"({"type": "PrefixSelectorRoute", "policies": {"a": "ErrorRoute"},
                  "wildcard": "PoolRoute|A"})",
                "route.policies.a", "only when no route takes it"},
        Refusal{R"({"type": "FailoverRoute", "children": ["PoolRoute|A", "PoolRoute|B",
                  "PoolRoute|G"]})",
                "route", "one other (its gutter)"},
        Refusal{R"({"type": "FailoverWithExptimeRoute", "normal": "PoolRoute|A",
                  "failover": "PoolRoute|G", "failover_exptime": 2592001})",
                "route.failover_exptime", "unix time"},
        Refusal{R"("ErrorRoute")", "route", "no listener without a pool"},
        Refusal{R"({"type": "HashRoute", "children": ["PoolRoute|A", "PoolRoute|B"]})",
                "route.children[0]", "servers of a pool"},
        Refusal{R"({"type": "FailoverRoute", "children": ["PoolRoute|A", "PoolRoute|G"],
                  "failover_tag": true})",
                "route.failover_tag", "expected false"},
        // The failovers' shared checks of their children, each route's own words.
        Refusal{R"("FailoverRoute")", "route", "FailoverRoute needs children"},
        Refusal{R"("MissFailoverRoute")", "route", "MissFailoverRoute needs children"},
        Refusal{R"({"type": "FailoverRoute", "children": [""]})", "route",
                "FailoverRoute without children: mcrouter answers with NullRoute's reply"},
        Refusal{R"({"type": "LatestRoute", "children": [""]})", "route",
                "LatestRoute without children has no meaning"},
        Refusal{R"({"type": "MissFailoverRoute", "children": [""]})", "route",
                "MissFailoverRoute without children has no meaning"},
        Refusal{R"({"type": "FailoverRoute", "children": ["Pool|A", "PoolRoute|B"]})", "route",
                "FailoverRoute over both servers and route handles"},
        Refusal{R"({"type": "MissFailoverRoute", "children": ["PoolRoute|B", "Pool|A"]})", "route",
                "MissFailoverRoute over both servers and route handles"},
        Refusal{R"({"type": "LatestRoute", "children": ["PoolRoute|A", "PoolRoute|B"]})",
                "route.children[0]", "LatestRoute over route handles"}));

TEST(McrouterRefusal, PoolOptions) {
  const std::pair<const char*, const char*> cases[] = {
      {R"("servers": ["127.0.0.1:1"], "connect_timeout": 5, "server_timeout": 10)",
       "pools.A.connect_timeout"},
      {R"("servers": ["127.0.0.1:1"], "protocol": "caret")", "pools.A.protocol"},
      {R"("servers": ["127.0.0.1:1:caret"])", "pools.A.servers[0]"},
      {R"("servers": ["127.0.0.1:1:ascii:ssl"])", "pools.A.servers[0]"},
      {R"("servers": ["127.0.0.1:1", "127.0.0.1:1"])", "pools.A.servers[1]"},
      {R"("servers": ["127.0.0.1"])", "pools.A.servers[0]"},
      {R"("servers": ["127.0.0.1:1", "127.0.0.1:2"], "weights": [1])", "pools.A.weights"},
      {R"("servers": ["127.0.0.1:1"], "weights": [2])", "pools.A.weights[0]"},
      {R"("servers": ["127.0.0.1:1"], "hash": "crc32")", "pools.A.hash"},
      {R"("servers": ["127.0.0.1:1"], "use_ssl": true)", "pools.A.use_ssl"},
      {R"("servers": [])", "pools.A.servers"},
  };
  for (const auto& [body, path] : cases) {
    const ConfigError e =
        refused(std::string(R"({"pools": {"A": {)") + body + R"(}}, "route": "PoolRoute|A"})");
    EXPECT_EQ(e.directive, path) << body << ": " << e.to_string();
  }
}

TEST(McrouterRefusal, TopLevel) {
  EXPECT_EQ(refused(R"({"macros": {}, "route": "ErrorRoute"})").directive, "macros");
  EXPECT_EQ(refused(R"({"pools": {}})").message, "no route (or routes) in mcrouter's config");
  const ConfigError two = refused(with_route("\"PoolRoute|A\"").substr(0, 0) + "{" + kPools +
                                  R"("routes": [{"aliases": ["/a/a/"], "route": "PoolRoute|A"},
                                  {"aliases": ["/a/b/"], "route": "PoolRoute|B"}]})");
  EXPECT_EQ(two.directive, "routes[1].route");
  EXPECT_NE(two.message.find("routing prefix"), std::string::npos);
}

TEST(McrouterRefusal, MoreCopiesThanMemshardKeeps) {
  std::string servers;
  for (int i = 0; i < 9; ++i)
    servers += std::string(i ? ", " : "") + "\"127.0.0.1:" + std::to_string(12001 + i) + "\"";
  const ConfigError e = refused(R"({"pools": {"A": {"servers": [)" + servers +
                                R"(]}}, "route": "AllSyncRoute|Pool|A"})");
  EXPECT_EQ(e.directive, "route");
  EXPECT_NE(e.message.find("at most 8"), std::string::npos) << e.message;
}

TEST(McrouterRefusal, WhatMemshardsOwnChecksRefuseIsSaidInTheJson) {
  // A prefix longer than a key can be: refused by memshard's routes, said
  // at the policy that wrote it.
  const std::string prefix(300, 'p');
  const LoadResult r =
      load(with_route(R"({"type": "PrefixSelectorRoute", "policies": {")" + prefix +
                      R"(": "PoolRoute|A"}, "wildcard": "PoolRoute|B"})"));
  ASSERT_FALSE(r.errors.empty());
  EXPECT_EQ(r.errors.front().directive, "route.policies." + prefix) << r.errors.front().to_string();
}

TEST(McrouterRefusal, ListenForYamlIsRefused) {
  // load_config_file takes --listen for mcrouter's config only.
  const std::string path = ::testing::TempDir() + "/listen_refused.yml";
  std::ofstream(path) << "main:\n  listen: 127.0.0.1:22121\n  servers:\n    - 127.0.0.1:1:1\n";
  const LoadResult r = load_config_file(path, LoadOptions{"127.0.0.1:5000"});
  ASSERT_EQ(r.errors.size(), 1u);
  EXPECT_NE(r.errors[0].message.find("--listen"), std::string::npos);
}

// ---- convert's YAML loads back to the same placement ----

std::vector<size_t> lookups(const PoolConfig& p) {
  std::vector<ketama::ServerEntry> servers;
  for (const ServerConfig& s : p.servers) servers.push_back(s.entry);
  const ketama::Ring ring = ketama::Ring::build(servers, p.ring);
  std::vector<size_t> out;
  for (int i = 0; i < 2000; ++i) out.push_back(ring.lookup("key:" + std::to_string(i)));
  return out;
}

TEST(McrouterConvert, YamlLoadsBackToTheSamePlacement) {
  const std::string text = R"({"pools": {
      "A": {"servers": ["127.0.0.1:12001", "127.0.0.1:12002", "127.0.0.1:12003"],
            "weights": [1, 0.3, 0.7]},
      "B": {"servers": ["127.0.0.1:12011", "127.0.0.1:12012"]},
      "G": {"servers": ["127.0.0.1:12021", "127.0.0.1:12022"]}},
    "route": {"type": "PrefixSelectorRoute", "policies": {
      "w:": "PoolRoute|A",
      "c:": {"type": "PoolRoute", "pool": "B", "hash": {"hash_func": "Crc32", "salt": "s"}},
      "f:": {"type": "FailoverWithExptimeRoute", "normal": "PoolRoute|B",
             "failover": "PoolRoute|G", "failover_exptime": 20}},
      "wildcard": "HashRoute|Pool|B"}})";
  const Config from_json = loaded(text, "127.0.0.1:5000");
  const McrouterConversion c = convert_mcrouter(text, kJson, McrouterOptions{"127.0.0.1:5000"});
  ASSERT_TRUE(c.errors.empty());
  const LoadResult yaml = parse_config(c.yaml, "converted.yml");
  for (const ConfigError& e : yaml.errors) ADD_FAILURE() << e.to_string() << "\n" << c.yaml;
  ASSERT_TRUE(yaml.config);
  ASSERT_EQ(yaml.config->pools.size(), from_json.pools.size());
  for (const PoolConfig& p : from_json.pools) {
    const PoolConfig& q = pool(*yaml.config, p.name);
    EXPECT_EQ(q.routes.size(), p.routes.size()) << p.name;
    EXPECT_EQ(q.gutter, p.gutter) << p.name;
    EXPECT_EQ(q.gutter_ttl_s, p.gutter_ttl_s) << p.name;
    if (p.servers.empty()) continue;
    EXPECT_EQ(lookups(q), lookups(p)) << p.name;
    EXPECT_EQ(q.ring.distribution, p.ring.distribution) << p.name;
  }
  // Each pool of the YAML names the handle that made it.
  EXPECT_NE(c.yaml.find("# FailoverWithExptimeRoute, at route.policies[\"f:\"]"), std::string::npos)
      << c.yaml;
}

TEST(McrouterConvert, TheWikisExamples) {
  // conf/examples/mcrouter: each beside its converted YAML, which must be
  // what convert prints today.
  for (const char* name :
       {"sharded", "replicated", "prefix-routing", "cold-cache-warmup", "two-level-caching"}) {
    const std::string json_path = testing::example(std::string("mcrouter/") + name + ".json");
    const std::string yaml_path = testing::example(std::string("mcrouter/") + name + ".yml");
    std::ifstream json_in(json_path), yaml_in(yaml_path);
    std::stringstream json_text, yaml_text;
    json_text << json_in.rdbuf();
    yaml_text << yaml_in.rdbuf();
    const McrouterConversion c =
        convert_mcrouter(json_text.str(), name + std::string(".json"), McrouterOptions{});
    ASSERT_TRUE(c.errors.empty()) << name;
    EXPECT_EQ(c.yaml, yaml_text.str()) << name << ": regenerate with memshard convert";
    EXPECT_TRUE(parse_config(yaml_text.str(), yaml_path).config) << name;
  }
}

}  // namespace
}  // namespace memshard::conf
