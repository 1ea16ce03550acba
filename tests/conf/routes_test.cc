// Routing across pools in the config: `routes`, `gutter`, and the configs
// that memshard -t and a reload refuse, each naming file and line.
#include <gtest/gtest.h>

#include "conf_test_util.h"

namespace memshard::conf {
namespace {

using testing::expect_error;
using testing::kFile;
using testing::only_error;
using testing::parse;

// A front pool with `routes` (lines from 3 on), then pools a, b and c
// with one server and a listener each (lines 3 to 11 after the routes),
// then `more`.
std::string front(const std::string& routes, const std::string& more = "") {
  return "front:\n  listen: 127.0.0.1:22121\n" + routes +
         "a:\n  listen: 127.0.0.1:22130\n  servers:\n   - 127.0.0.1:11211:1\n"
         "b:\n  listen: 127.0.0.1:22131\n  servers:\n   - 127.0.0.1:11212:1\n"
         "c:\n  listen: 127.0.0.1:22132\n  servers:\n   - 127.0.0.1:11213:1\n" +
         more;
}

TEST(ConfRoutes, PrefixesPoolsShadowsAndTheDefault) {
  LoadResult r = parse(
      front("  routes:\n"
            "    - prefix: \"s:\"\n      pool: a\n"
            "    - prefix: \"u:\"\n      pools: [a, b]\n      shadow: c\n      shadow_share: 25%\n"
            "    - pool: b\n"));
  ASSERT_TRUE(r.config) << r.errors.front().to_string();
  const PoolConfig& f = *r.config->find_pool("front");
  ASSERT_EQ(f.routes.size(), 3u);
  EXPECT_EQ(f.routes[0].prefix, "s:");
  EXPECT_EQ(f.routes[0].pools, std::vector<std::string>{"a"});
  EXPECT_FALSE(f.routes[0].is_default);
  EXPECT_EQ(f.routes[1].pools, (std::vector<std::string>{"a", "b"}));
  EXPECT_EQ(f.routes[1].shadow, "c");
  EXPECT_DOUBLE_EQ(f.routes[1].shadow_share, 0.25);
  EXPECT_EQ(f.routes[0].shadow_share, 1.0);  // the default share, when a shadow is set
  EXPECT_TRUE(f.routes[2].is_default);
  EXPECT_EQ(f.routes[2].name(), "(default)");
  EXPECT_EQ(f.routes[0].name(), "s:");
  EXPECT_TRUE(f.has_listen());
}

TEST(ConfRoutes, GutterAndItsTtl) {
  LoadResult r = parse(front("  routes:\n    - pool: a\n",
                             "main:\n  listen: 127.0.0.1:22122\n  gutter: b\n  gutter_ttl: 3\n"
                             "  servers:\n   - 127.0.0.1:11214:1\n"));
  ASSERT_TRUE(r.config) << r.errors.front().to_string();
  EXPECT_EQ(r.config->find_pool("main")->gutter, "b");
  EXPECT_EQ(r.config->find_pool("main")->gutter_ttl_s, 3u);
  EXPECT_EQ(r.config->find_pool("a")->gutter_ttl_s, 10u);  // default
}

TEST(ConfRoutes, RouteToAnUnknownPool) {
  expect_error(only_error(front("  routes:\n    - pool: nope\n")), 4, "routes",
               "route to pool 'nope' is not defined; expected one of a, b, c");
}

TEST(ConfRoutes, RouteToItself) {
  expect_error(only_error(front("  routes:\n    - prefix: x\n      pool: front\n    - pool: a\n")),
               5, "routes", "route to pool 'front' names itself; expected another pool");
}

TEST(ConfRoutes, RoutesDoNotNestSoNoCycleForms) {
  // front -> mid -> front would be a cycle; any route to a routing pool is refused.
  const std::string text =
      front("  routes:\n    - pool: mid\n", "mid:\n  routes:\n    - pool: front\n");
  LoadResult r = parse(text);
  ASSERT_FALSE(r.config);
  ASSERT_EQ(r.errors.size(), 2u);
  expect_error(r.errors[0], 4, "routes",
               "route to pool 'mid' routes its keys to other pools itself; expected a pool with "
               "servers (routes do not nest, so that no cycle can form)");
  expect_error(r.errors[1], 19, "routes",
               "route to pool 'front' routes its keys to other pools itself; expected a pool "
               "with servers (routes do not nest, so that no cycle can form)");
}

TEST(ConfRoutes, TwoRoutesWithOnePrefix) {
  expect_error(only_error(front(
                   "  routes:\n    - prefix: x\n      pool: a\n    - prefix: x\n      pool: b\n")),
               6, "routes",
               "prefix \"x\" is given twice; the first is on line 4, and a key can take only one");
  expect_error(only_error(front("  routes:\n    - pool: a\n    - pool: b\n")), 5, "routes",
               "a second route without a prefix; the first is on line 4, and a key can take only "
               "one");
}

TEST(ConfRoutes, UnknownShadowAndGutter) {
  expect_error(only_error(front("  routes:\n    - pool: a\n      shadow: ghost\n")), 5, "routes",
               "shadow pool 'ghost' is not defined; expected one of a, b, c");
  expect_error(only_error(front("  routes:\n    - pool: a\n      shadow: a\n")), 5, "routes",
               "shadow pool 'a' is also where the route's keys go; expected another pool");
  expect_error(only_error(front("  routes:\n    - pool: a\n",
                                "d:\n  listen: 127.0.0.1:22123\n  gutter: ghost\n"
                                "  servers:\n   - 127.0.0.1:11214:1\n")),
               19, "gutter", "pool 'ghost' is not defined; expected one of a, b, c, d");
  expect_error(only_error(front("  routes:\n    - pool: a\n",
                                "d:\n  listen: 127.0.0.1:22123\n  gutter: d\n"
                                "  servers:\n   - 127.0.0.1:11214:1\n")),
               19, "gutter", "pool 'd' names itself; expected another pool");
}

TEST(ConfRoutes, GuttersDoNotChain) {
  expect_error(only_error(front("  routes:\n    - pool: a\n",
                                "d:\n  listen: 127.0.0.1:22123\n  gutter: e\n"
                                "  servers:\n   - 127.0.0.1:11214:1\n"
                                "e:\n  gutter: b\n  servers:\n   - 127.0.0.1:11215:1\n")),
               19, "gutter",
               "pool 'e' has a gutter of its own; expected a pool without one (gutters do not "
               "chain)");
}

TEST(ConfRoutes, RoutesAndServersInOnePool) {
  expect_error(only_error("front:\n  listen: 127.0.0.1:22121\n  routes:\n    - pool: a\n"
                          "  servers:\n   - 127.0.0.1:11212:1\n"
                          "a:\n  servers:\n   - 127.0.0.1:11211:1\n"),
               5, "servers",
               "pool 'front' has both routes and servers; expected one of them (a pool either "
               "keeps keys on its servers or routes them to other pools)");
}

TEST(ConfRoutes, ServerDirectivesInARoutingPool) {
  expect_error(only_error(front("  hash: md5\n  routes:\n    - pool: a\n")), 3, "hash",
               "applies to a pool's own servers, and pool 'front' routes its keys to other pools "
               "(routes:); expected it on those pools");
}

// A scheduled switch moves a pool's own keys between its placements: a
// pool that routes has none, so both directives are refused there, each
// naming its line (set them on the pools the routes reach).
TEST(ConfRoutes, AScheduledSwitchInARoutingPool) {
  const LoadResult r = parse(
      front("  reload_warmup: 60000\n  reload_switch_at: 1772330400\n  reload_switch_window: 5000\n"
            "  routes:\n    - pool: a\n"));
  ASSERT_FALSE(r.config);
  std::vector<std::string> refused;
  for (const ConfigError& e : r.errors) {
    if (e.message.find("applies to a pool's own servers") != std::string::npos) {
      refused.push_back(e.directive + ":" + std::to_string(e.line));
    }
  }
  EXPECT_EQ(refused, (std::vector<std::string>{"reload_warmup:3", "reload_switch_at:4",
                                               "reload_switch_window:5"}));
}

TEST(ConfRoutes, APoolNothingReachesNeedsAListener) {
  const std::string pools =
      "a:\n  servers:\n   - 127.0.0.1:11211:1\n"
      "b:\n  servers:\n   - 127.0.0.1:11212:1\n";
  LoadResult r = parse("front:\n  listen: 127.0.0.1:22121\n  routes:\n    - pool: a\n" + pools);
  ASSERT_FALSE(r.config);
  ASSERT_EQ(r.errors.size(), 1u);
  expect_error(r.errors[0], 8, "listen",
               "pool 'b' has no listen address and no route reaches it; expected \"listen: "
               "host:port\" or \"listen: /path/to.sock [permissions]\"");
  // Reached by a route, a shadow or a gutter: no listener needed.
  EXPECT_TRUE(parse("front:\n  listen: 127.0.0.1:22121\n  routes:\n    - pool: a\n"
                    "      shadow: b\n" +
                    pools)
                  .config);
  EXPECT_TRUE(parse("front:\n  listen: 127.0.0.1:22121\n  routes:\n    - pool: a\n"
                    "a:\n  gutter: b\n  servers:\n   - 127.0.0.1:11211:1\n"
                    "b:\n  servers:\n   - 127.0.0.1:11212:1\n")
                  .config);
}

TEST(ConfRoutes, MalformedRoutes) {
  expect_error(only_error(front("  routes: a\n")), 3, "routes",
               "expected a list of routes, such as - {prefix: \"sess:\", pool: sessions}, found "
               "\"a\"");
  expect_error(only_error(front("  routes:\n    - prefix: x\n")), 4, "routes",
               "a route names where its keys go: \"pool: NAME\", \"pools: [A, B]\" for a copy "
               "in each, or \"blackhole: true\" for none");
  expect_error(only_error(front("  routes:\n    - pool: a\n      pools: [b]\n")), 4, "routes",
               "a route has one pool: or a pools: list of copies, not both");
  expect_error(only_error(front("  routes:\n    - pool: a\n      weight: 2\n")), 5, "routes",
               "unknown route field \"weight\"; expected prefix, pool, pools, shadow, "
               "shadow_share, warm_from, warm_ttl or blackhole");
  expect_error(only_error(front("  routes:\n    - pools: [a, a]\n")), 4, "routes",
               "pool 'a' is listed twice; expected each copy's pool once");
  expect_error(
      only_error(front("  routes:\n    - pool: a\n      shadow: b\n      shadow_share: 0\n")), 6,
      "routes", "expected a share such as 1% or 0.01, above 0 and at most 100%, found \"0\"");
}

TEST(ConfRoutes, WarmFrom) {
  LoadResult r =
      parse(front("  routes:\n    - pool: a\n      warm_from: b\n      warm_ttl: 600\n"));
  ASSERT_TRUE(r.config);
  const RouteConfig& route = r.config->find_pool("front")->routes[0];
  EXPECT_EQ(route.warm_from, "b");
  EXPECT_EQ(route.warm_ttl_s, 600);
  EXPECT_EQ(route.warm_from_line, 5);
  // 0: the copies never expire.
  EXPECT_TRUE(
      parse(front("  routes:\n    - pool: a\n      warm_from: b\n      warm_ttl: 0\n")).config);
  // A warm pool reached only by warm_from needs no listener.
  EXPECT_TRUE(parse("front:\n  listen: 127.0.0.1:22121\n  routes:\n    - pool: a\n"
                    "      warm_from: b\n      warm_ttl: 5\n"
                    "a:\n  servers:\n   - 127.0.0.1:11211:1\n"
                    "b:\n  servers:\n   - 127.0.0.1:11212:1\n")
                  .config);
}

TEST(ConfRoutes, WarmFromRefused) {
  expect_error(only_error(front("  routes:\n    - pool: a\n      warm_from: ghost\n"
                                "      warm_ttl: 5\n")),
               5, "routes", "warm_from pool 'ghost' is not defined; expected one of a, b, c");
  expect_error(
      only_error(front("  routes:\n    - pool: a\n      warm_from: front\n      warm_ttl: 5\n")), 5,
      "routes", "warm_from pool 'front' names itself; expected another pool");
  expect_error(
      only_error(front("  routes:\n    - pool: a\n      warm_from: a\n      warm_ttl: 5\n")), 5,
      "routes",
      "warm_from pool 'a' is also where the route's keys are read (the cold side); expected the "
      "pool that holds them warm");
  // One of a route's other zone copies: the first is the cold side
  // (mcrouter's two-level caching: writes to both, reads local first).
  EXPECT_TRUE(parse(front("  routes:\n    - pools: [a, b]\n      warm_from: b\n"
                          "      warm_ttl: 5\n"))
                  .config);
  expect_error(only_error(front("  routes:\n    - pool: a\n      warm_from: r\n      warm_ttl: 5\n",
                                "r:\n  routes:\n    - pool: b\n")),
               5, "routes",
               "warm_from pool 'r' routes its keys to other pools itself; expected a pool with "
               "servers (routes do not nest, so that no cycle can form)");
  expect_error(only_error(front("  routes:\n    - pool: a\n      warm_from: b\n")), 5, "routes",
               "warm_from needs warm_ttl: the expiry, in seconds, of the copies it makes on the "
               "route's pool (0: none), such as \"warm_ttl: 3600\"");
  expect_error(only_error(front("  routes:\n    - pool: a\n      warm_ttl: 5\n")), 5, "routes",
               "warm_ttl without warm_from does nothing; expected \"warm_from: POOL\" beside it");
  for (const char* bad : {"-1", "2592001", "1h", "x"}) {
    expect_error(only_error(front(std::string("  routes:\n    - pool: a\n      warm_from: b\n"
                                              "      warm_ttl: ") +
                                  bad + "\n")),
                 6, "routes",
                 std::string("expected warm_ttl in seconds, 0 (no expiry) to 2592000 (30 days, "
                             "memcached's longest relative expiry), found \"") +
                     bad + "\"");
  }
}

TEST(ConfRoutes, Blackhole) {
  LoadResult r =
      parse(front("  routes:\n    - prefix: \"x:\"\n      blackhole: true\n"
                  "    - pool: a\n"));
  ASSERT_TRUE(r.config);
  const PoolConfig& f = *r.config->find_pool("front");
  EXPECT_TRUE(f.routes[0].blackhole);
  EXPECT_TRUE(f.routes[0].pools.empty());
  EXPECT_FALSE(f.routes[1].blackhole);
  expect_error(only_error(front("  routes:\n    - pool: a\n      blackhole: true\n")), 5, "routes",
               "a blackhole route answers every request itself and sends nothing anywhere; "
               "expected no pool, pools, shadow or warm_from beside blackhole: true");
  EXPECT_EQ(only_error(front("  routes:\n    - blackhole: maybe\n      pool: a\n")).line, 4);
  // blackhole: false is a route like any other.
  EXPECT_TRUE(parse(front("  routes:\n    - blackhole: false\n      pool: a\n")).config);
}

TEST(ConfRoutes, TtlMaxAndTtlSet) {
  LoadResult r = parse(front("  routes:\n    - pool: a\n",
                             "d:\n  listen: 127.0.0.1:22123\n"
                             "  ttl_max: 300\n"
                             "  servers:\n   - 127.0.0.1:11214:1\n"
                             "e:\n  listen: 127.0.0.1:22124\n"
                             "  ttl_set: 0\n"
                             "  servers:\n   - 127.0.0.1:11215:1\n"));
  ASSERT_TRUE(r.config);
  EXPECT_EQ(r.config->find_pool("d")->ttl_max_s, 300u);
  EXPECT_FALSE(r.config->find_pool("d")->ttl_set_s);
  EXPECT_EQ(r.config->find_pool("e")->ttl_set_s, std::optional<uint32_t>(0));
  EXPECT_EQ(r.config->find_pool("a")->ttl_max_s, 0u);
  EXPECT_FALSE(r.config->find_pool("a")->ttl_set_s);
  // Both: ttl_set would make the cap do nothing.
  expect_error(only_error(front("  routes:\n    - pool: a\n",
                                "d:\n  listen: 127.0.0.1:22123\n  ttl_max: 300\n  ttl_set: 60\n"
                                "  servers:\n   - 127.0.0.1:11214:1\n")),
               20, "ttl_set",
               "pool 'd' has both ttl_max and ttl_set; expected one of them (ttl_set gives every "
               "expiry one value, so a cap beside it does nothing)");
  // Out of range: 0 caps nothing; past 30 days memcached reads a unix time.
  for (const char* bad : {"ttl_max: 0", "ttl_max: 2592001", "ttl_set: -1", "ttl_set: 2592001"}) {
    const LoadResult e = parse(
        front("  routes:\n    - pool: a\n", std::string("d:\n  listen: 127.0.0.1:22123\n  ") + bad +
                                                "\n  servers:\n   - 127.0.0.1:11214:1\n"));
    ASSERT_FALSE(e.config) << bad;
    ASSERT_EQ(e.errors.size(), 1u) << bad;
    EXPECT_EQ(e.errors[0].line, 19) << bad;
  }
  // A routing pool has no servers to set expiries on.
  EXPECT_EQ(only_error(front("  ttl_max: 60\n  routes:\n    - pool: a\n")).directive, "ttl_max");
}

TEST(ConfRoutes, GutterWithReplicas) {
  expect_error(only_error(front("  routes:\n    - pool: a\n",
                                "d:\n  listen: 127.0.0.1:22123\n  replicas: 2\n  gutter: b\n"
                                "  servers:\n   - 127.0.0.1:11214:1\n   - 127.0.0.1:11215:1\n")),
               20, "gutter",
               "pool 'd' keeps 2 copies of each key, and reads a down server's keys from another "
               "copy; expected a gutter only with replicas: 1");
}

}  // namespace
}  // namespace memshard::conf
