// Helpers shared by the conf/ tests.
#pragma once

#include <gtest/gtest.h>

#include <string>

#include "conf/config.h"

namespace memshard::conf::testing {

inline constexpr const char* kFile = "test.yml";

inline LoadResult parse(const std::string& text) {
  return parse_config(text, kFile);
}

// A pool that nutcracker accepts, with `extra` directive lines (each
// indented by two spaces, ending in '\n') before its servers.
inline std::string pool(const std::string& extra = "",
                        const std::string& servers = "   - 127.0.0.1:11211:1\n") {
  return "alpha:\n  listen: 127.0.0.1:22121\n" + extra + "  servers:\n" + servers;
}

// Parses text that must be valid and returns its only pool.
inline PoolConfig only_pool(const std::string& text) {
  LoadResult r = parse(text);
  EXPECT_TRUE(r.errors.empty()) << (r.errors.empty() ? "" : r.errors.front().to_string());
  if (!r.config || r.config->pools.size() != 1) {
    ADD_FAILURE() << "expected exactly one pool";
    return {};
  }
  return r.config->pools.front();
}

// The single error text must produce, or a failure naming what came instead.
inline ConfigError only_error(const std::string& text) {
  LoadResult r = parse(text);
  EXPECT_FALSE(r.config.has_value());
  if (r.errors.size() != 1) {
    std::string all;
    for (const ConfigError& e : r.errors) all += "\n  " + e.to_string();
    ADD_FAILURE() << "expected exactly one error, got " << r.errors.size() << ":" << all;
    return r.errors.empty() ? ConfigError{} : r.errors.front();
  }
  return r.errors.front();
}

// An error's place and words, each compared on its own so a failure says
// which one differs.
inline void expect_error(const ConfigError& e, int line, const std::string& directive,
                         const std::string& message) {
  EXPECT_EQ(e.file, kFile);
  EXPECT_EQ(e.line, line);
  EXPECT_EQ(e.directive, directive);
  EXPECT_EQ(e.message, message);
}

// The path of conf/examples/`name`.
inline std::string example(const std::string& name) {
  return std::string(MEMSHARD_CONF_EXAMPLES_DIR) + "/" + name;
}

}  // namespace memshard::conf::testing
