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
               "a route names where its keys go: \"pool: NAME\", or \"pools: [A, B]\" for a copy "
               "in each");
  expect_error(only_error(front("  routes:\n    - pool: a\n      pools: [b]\n")), 4, "routes",
               "a route has one pool: or a pools: list of copies, not both");
  expect_error(only_error(front("  routes:\n    - pool: a\n      weight: 2\n")), 5, "routes",
               "unknown route field \"weight\"; expected prefix, pool, pools, shadow or "
               "shadow_share");
  expect_error(only_error(front("  routes:\n    - pools: [a, a]\n")), 4, "routes",
               "pool 'a' is listed twice; expected each copy's pool once");
  expect_error(
      only_error(front("  routes:\n    - pool: a\n      shadow: b\n      shadow_share: 0\n")), 6,
      "routes", "expected a share such as 1% or 0.01, above 0 and at most 100%, found \"0\"");
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
