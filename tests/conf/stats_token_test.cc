// The top-level stats_token and stats_token_file keys (conf/config.cc):
// what they set, and every way to get them wrong, with file, line and key.
#include <gtest/gtest.h>

#include <string>

#include "conf_test_util.h"

namespace memshard::conf {
namespace {

using testing::expect_error;
using testing::only_error;
using testing::parse;
using testing::pool;

// A valid file's config, or a failure naming its first error.
Config valid(const std::string& text) {
  LoadResult r = parse(text);
  EXPECT_TRUE(r.errors.empty()) << (r.errors.empty() ? "" : r.errors.front().to_string());
  return r.config ? *r.config : Config{};
}

TEST(ConfStatsToken, NoneUnlessGiven) {
  const Config c = valid(pool());
  EXPECT_FALSE(c.stats_token.given());
  EXPECT_EQ(c.stats_token.token, "");
  EXPECT_EQ(c.stats_token.file, "");
}

TEST(ConfStatsToken, TheTokenItselfBeforeOrAfterThePools) {
  const Config before = valid("stats_token: s3cret-Token_1\n" + pool());
  ASSERT_EQ(before.pools.size(), 1u);
  EXPECT_EQ(before.pools[0].name, "alpha");
  EXPECT_TRUE(before.stats_token.given());
  EXPECT_EQ(before.stats_token.token, "s3cret-Token_1");
  EXPECT_EQ(before.stats_token.file, "");
  EXPECT_EQ(before.stats_token.line, 1);
  EXPECT_EQ(before.stats_token.key(), "stats_token");

  const Config after = valid(pool() + "stats_token: \"12345\"\n");
  EXPECT_EQ(after.stats_token.token, "12345");
  EXPECT_EQ(after.stats_token.line, 5);
  ASSERT_EQ(after.pools.size(), 1u);
}

TEST(ConfStatsToken, AFileAsWritten) {
  const Config c = valid(pool() + "stats_token_file: secrets/stats.token\n");
  EXPECT_EQ(c.stats_token.file, "secrets/stats.token");  // resolved by the proxy
  EXPECT_EQ(c.stats_token.token, "");
  EXPECT_EQ(c.stats_token.line, 5);
  EXPECT_EQ(c.stats_token.key(), "stats_token_file");
}

TEST(ConfStatsToken, NotAPool) {
  // Beside two pools, neither of which it becomes.
  const Config c = valid(pool() + "stats_token: t\n" +
                         "beta:\n  listen: 127.0.0.1:22122\n  servers:\n   - 127.0.0.1:11212:1\n");
  ASSERT_EQ(c.pools.size(), 2u);
  EXPECT_EQ(c.pools[1].name, "beta");
  EXPECT_EQ(c.find_pool("stats_token"), nullptr);
}

TEST(ConfStatsToken, BothIsAnError) {
  expect_error(only_error("stats_token: t\n" + pool() + "stats_token_file: f\n"), 6,
               "stats_token_file",
               "stats_token is already given on line 1; expected at most one of stats_token and "
               "stats_token_file");
  expect_error(only_error(pool() + "stats_token_file: f\nstats_token: t\n"), 6, "stats_token",
               "stats_token_file is already given on line 5; expected at most one of stats_token "
               "and stats_token_file");
}

TEST(ConfStatsToken, APoolOfThatNameIsRefused) {
  expect_error(only_error(pool() + "stats_token:\n  listen: 127.0.0.1:22122\n  servers:\n"
                                   "   - 127.0.0.1:11212:1\n"),
               5, "stats_token",
               "expected the stats token as the key's value, found a map (stats_token is the "
               "top-level key of the stats token; a pool cannot be named so)");
  expect_error(only_error(pool() + "stats_token_file:\n  listen: 127.0.0.1:22122\n"), 5,
               "stats_token_file",
               "expected the name of a file holding the stats token as the key's value, found a "
               "map (stats_token_file is the top-level key of the stats token; a pool cannot be "
               "named so)");
}

TEST(ConfStatsToken, AValueIsNeeded) {
  expect_error(only_error(pool() + "stats_token:\n"), 5, "stats_token",
               "expected the stats token as the key's value, found nothing");
  expect_error(only_error(pool() + "stats_token: [a, b]\n"), 5, "stats_token",
               "expected the stats token as the key's value, found a list");
  expect_error(only_error(pool() + "stats_token_file: \"\"\n"), 5, "stats_token_file",
               "expected a file name, found nothing");
  expect_error(only_error(pool() + "stats_token: \"\"\n"), 5, "stats_token",
               "expected a token of 1 to 4096 bytes, found 0 bytes");
}

TEST(ConfStatsToken, TheTokenIsOneHeaderWord) {
  const std::string longest(4096, 'x');
  EXPECT_EQ(valid(pool() + "stats_token: " + longest + "\n").stats_token.token, longest);
  expect_error(only_error(pool() + "stats_token: " + longest + "y\n"), 5, "stats_token",
               "expected a token of 1 to 4096 bytes, found 4097 bytes");
  // Never quoted back: the error is logged, and the token is a secret.
  const ConfigError spaced = only_error(pool() + "stats_token: \"two words\"\n");
  expect_error(spaced, 5, "stats_token",
               "expected visible ASCII only (no space: the token is sent in an HTTP header)");
  EXPECT_EQ(spaced.to_string().find("words"), std::string::npos);
  expect_error(only_error(pool() + "stats_token: \"caf\xc3\xa9\"\n"), 5, "stats_token",
               "expected visible ASCII only (no space: the token is sent in an HTTP header)");
}

TEST(ConfStatsToken, ATokenAloneIsNoConfig) {
  expect_error(only_error("stats_token: t\n"), 1, "",
               "no pools; expected a map of pool names to their directives");
}

TEST(ConfStatsToken, OtherErrorsStillFound) {
  // The token's error does not hide the pool's, nor the pool's the token's.
  const LoadResult r = parse(pool("  hash: nope\n") + "stats_token: \"a b\"\n");
  ASSERT_EQ(r.errors.size(), 2u);
  EXPECT_EQ(r.errors[0].directive, "hash");
  EXPECT_EQ(r.errors[1].directive, "stats_token");
  EXPECT_EQ(r.errors[1].line, 6);
}

}  // namespace
}  // namespace memshard::conf
