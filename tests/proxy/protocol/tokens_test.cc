// memcached's tokenizer (protocol/tokens.h): spaces alone separate tokens,
// at most 23 are kept with a terminal entry (memcached's ntokens), and the
// last kept one decides `noreply`.
#include "proxy/protocol/tokens.h"

#include <gtest/gtest.h>

#include <string>
#include <string_view>
#include <vector>

namespace memshard::proto {
namespace {

std::vector<std::string> all_tokens(std::string_view line) {
  std::vector<std::string> out;
  TokenCursor cursor(line);
  std::string_view token;
  for (size_t i = 0; i <= line.size() && cursor.next(token); ++i) out.emplace_back(token);
  return out;
}

// "t0 t1 ... t(n-1)".
std::string numbered_line(size_t n) {
  std::string line;
  for (size_t i = 0; i < n; ++i) line += (i ? " t" : "t") + std::to_string(i);
  return line;
}

TEST(TokenCursor, SpacesAloneSeparateAndRunsOfThemMakeNoEmptyToken) {
  EXPECT_EQ(all_tokens("get a b"), (std::vector<std::string>{"get", "a", "b"}));
  EXPECT_EQ(all_tokens("   get   a  b   "), (std::vector<std::string>{"get", "a", "b"}));
  EXPECT_EQ(all_tokens("get\tk"), std::vector<std::string>{"get\tk"}) << "a tab is a byte of it";
  EXPECT_EQ(all_tokens("get\r k"), (std::vector<std::string>{"get\r", "k"}));
  EXPECT_TRUE(all_tokens("").empty());
  EXPECT_TRUE(all_tokens("     ").empty());
}

TEST(TokenCursor, TokensAreViewsIntoTheLine) {
  const std::string line = "set key 0 0 1";
  TokenCursor cursor(line);
  std::string_view token;
  while (cursor.next(token)) {
    EXPECT_GE(token.data(), line.data());
    EXPECT_LE(token.data() + token.size(), line.data() + line.size());
    EXPECT_EQ(line.substr(static_cast<size_t>(token.data() - line.data()), token.size()), token);
  }
}

TEST(LineTokens, KeepsAtMostTwentyThreeTokensAndATerminal) {
  for (size_t n = 0; n <= 30; ++n) {
    SCOPED_TRACE(n);
    const std::string line = numbered_line(n);
    const LineTokens t(line);
    const size_t kept = std::min(n, LineTokens::kMaxTokens - 1);  // memcached's tokens
    EXPECT_EQ(t.ntokens(), kept + 1);
    EXPECT_EQ(t.count, std::min(n, LineTokens::kMaxTokens));
    for (size_t i = 0; i < t.count; ++i) EXPECT_EQ(t.token[i], "t" + std::to_string(i));
  }
}

TEST(LineTokens, NoreplyIsTheLastKeptToken) {
  EXPECT_TRUE(LineTokens("set k 0 0 1 noreply").last_is_noreply());
  EXPECT_TRUE(LineTokens("delete k noreply   ").last_is_noreply());
  EXPECT_FALSE(LineTokens("set k 0 0 1").last_is_noreply());
  EXPECT_FALSE(LineTokens("set k 0 0 1 noreply x").last_is_noreply());
  EXPECT_FALSE(LineTokens("set k 0 0 1 norepl").last_is_noreply());
  EXPECT_FALSE(LineTokens("set k 0 0 1 noreply\t").last_is_noreply());
  EXPECT_FALSE(LineTokens("").last_is_noreply());
  // With more tokens than memcached keeps, the 23rd is the last kept one.
  const std::string base = numbered_line(LineTokens::kMaxTokens - 2);  // 22 tokens
  EXPECT_TRUE(LineTokens(base + " noreply").last_is_noreply());
  EXPECT_TRUE(LineTokens(base + " noreply t23 t24").last_is_noreply());
  EXPECT_FALSE(LineTokens(base + " t22 noreply").last_is_noreply())
      << "the 24th token is not memcached's";
}

}  // namespace
}  // namespace memshard::proto
