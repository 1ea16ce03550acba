// The log (proxy/support/log.h): levels, the line format, the -o file and
// its reopening after rotation, whole lines from concurrent writers, and
// libevent's own messages. Each test logs to a file of its own in a fresh
// directory and reads it back.
#include "proxy/support/log.h"

#include <event2/event.h>
#include <gtest/gtest.h>
#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <regex>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

namespace memshard::proxy {
namespace {

namespace fs = std::filesystem;

std::vector<std::string> lines_of(const fs::path& file) {
  std::ifstream in(file);
  std::vector<std::string> lines;
  for (std::string line; std::getline(in, line);) lines.push_back(line);
  return lines;
}

std::string contents_of(const fs::path& file) {
  std::ifstream in(file);
  std::stringstream s;
  s << in.rdbuf();
  return s.str();
}

class LogTest : public ::testing::Test {
 protected:
  void SetUp() override {
    char tmpl[] = "/tmp/memshard-log-unit-XXXXXX";
    ASSERT_NE(mkdtemp(tmpl), nullptr);
    dir_ = tmpl;
    file_ = dir_ / "memshard.log";
    ASSERT_TRUE(log_open(file_.string()));
  }
  void TearDown() override {
    // Back to what a process starts with: the notice level, on stderr.
    log_set_level(LogLevel::notice);
    log_open("/dev/stderr");
    fs::remove_all(dir_);
  }
  fs::path dir_;
  fs::path file_;
};

// "[2024-05-01 12:34:56.789] WARN   message": the level padded to six.
const std::regex kLine(R"(\[\d{4}-\d\d-\d\d \d\d:\d\d:\d\d\.\d{3}\] ([A-Z]+) *(.*))");

TEST_F(LogTest, ALineHasATimestampTheLevelAndTheFormattedMessage) {
  log_warn("server %s: %d errors", "10.0.0.1:11211", 3);
  auto lines = lines_of(file_);
  ASSERT_EQ(lines.size(), 1u);
  std::smatch m;
  ASSERT_TRUE(std::regex_match(lines[0], m, kLine)) << lines[0];
  EXPECT_EQ(m[1], "WARN");
  EXPECT_EQ(m[2], "server 10.0.0.1:11211: 3 errors");
  // The message starts in the same column whatever the level.
  EXPECT_EQ(lines[0].find("server"), std::string("[2024-05-01 12:34:56.789] NOTICE ").size());
}

TEST_F(LogTest, OnlyLevelsUpToTheSetOneAreWritten) {
  log_set_level(LogLevel::warn);
  EXPECT_EQ(log_level(), LogLevel::warn);
  log_error("e");
  log_warn("w");
  log_notice("n");
  log_info("i");
  log_debug("d");
  log_set_level(LogLevel::debug);
  log_debug("d2");
  std::vector<std::string> seen;
  for (const std::string& line : lines_of(file_)) {
    std::smatch m;
    ASSERT_TRUE(std::regex_match(line, m, kLine)) << line;
    seen.push_back(m[1].str() + " " + m[2].str());
  }
  EXPECT_EQ(seen, (std::vector<std::string>{"ERROR e", "WARN w", "DEBUG d2"}));
}

TEST_F(LogTest, LogAlwaysIsWrittenAtAnyLevelAsNotice) {
  log_set_level(LogLevel::error);
  log_notice("not this");
  log_always("reloaded %d pools", 2);
  auto lines = lines_of(file_);
  ASSERT_EQ(lines.size(), 1u);
  std::smatch m;
  ASSERT_TRUE(std::regex_match(lines[0], m, kLine)) << lines[0];
  EXPECT_EQ(m[1], "NOTICE");
  EXPECT_EQ(m[2], "reloaded 2 pools");
}

TEST_F(LogTest, LevelNames) {
  EXPECT_STREQ(log_level_name(LogLevel::error), "ERROR");
  EXPECT_STREQ(log_level_name(LogLevel::warn), "WARN");
  EXPECT_STREQ(log_level_name(LogLevel::notice), "NOTICE");
  EXPECT_STREQ(log_level_name(LogLevel::info), "INFO");
  EXPECT_STREQ(log_level_name(LogLevel::debug), "DEBUG");
}

TEST_F(LogTest, AnOverlongMessageIsCutToOneLine) {
  std::string huge(10000, 'x');
  log_warn("%s", huge.c_str());
  log_warn("after");
  std::string all = contents_of(file_);
  auto lines = lines_of(file_);
  ASSERT_EQ(lines.size(), 2u);
  EXPECT_LT(lines[0].size(), 4096u);
  EXPECT_NE(lines[0].find(std::string(1000, 'x')), std::string::npos);
  EXPECT_NE(lines[1].find("after"), std::string::npos);
  EXPECT_EQ(all.back(), '\n');
}

TEST_F(LogTest, AFileThatCannotBeOpenedLeavesTheCurrentOneInUse) {
  EXPECT_FALSE(log_open((dir_ / "no-such-dir" / "x.log").string()));
  log_warn("still here");
  auto lines = lines_of(file_);
  ASSERT_EQ(lines.size(), 1u);
  EXPECT_NE(lines[0].find("still here"), std::string::npos);
}

TEST_F(LogTest, ReopenStartsANewFileAfterRotation) {
  log_warn("before rotation");
  // logrotate renames the file, then signals the process to reopen.
  fs::rename(file_, dir_ / "memshard.log.1");
  log_warn("still to the renamed file");
  log_reopen();
  log_warn("after rotation");
  auto old_lines = lines_of(dir_ / "memshard.log.1");
  auto new_lines = lines_of(file_);
  ASSERT_EQ(old_lines.size(), 2u);
  EXPECT_NE(old_lines[0].find("before rotation"), std::string::npos);
  EXPECT_NE(old_lines[1].find("still to the renamed file"), std::string::npos);
  ASSERT_EQ(new_lines.size(), 1u);
  EXPECT_NE(new_lines[0].find("after rotation"), std::string::npos);
}

TEST_F(LogTest, ReopenFindsARelativePathAfterTheWorkingDirectoryChanged) {
  // A daemon opens "-o memshard.log" relative to where it started, then
  // changes directory (to "/"; here to another directory of the test's):
  // the reopen must still find the file where it was.
  const fs::path start = fs::current_path();
  const fs::path elsewhere = dir_ / "elsewhere";
  fs::create_directory(elsewhere);
  fs::current_path(dir_);
  bool opened = log_open("relative.log");
  fs::current_path(elsewhere);
  fs::rename(dir_ / "relative.log", dir_ / "relative.log.1");
  log_reopen();
  log_warn("after chdir");
  fs::current_path(start);
  ASSERT_TRUE(opened);
  EXPECT_FALSE(fs::exists(elsewhere / "relative.log"));
  auto lines = lines_of(dir_ / "relative.log");
  ASSERT_EQ(lines.size(), 1u);
  EXPECT_NE(lines[0].find("after chdir"), std::string::npos);
}

TEST_F(LogTest, ConcurrentWritersProduceWholeLines) {
  constexpr int kThreads = 4;
  constexpr int kLines = 500;
  std::vector<std::thread> writers;
  for (int t = 0; t < kThreads; ++t) {
    writers.emplace_back([t] {
      for (int i = 0; i < kLines; ++i) log_warn("writer %d line %d end", t, i);
    });
  }
  for (std::thread& w : writers) w.join();
  // Every line is one writer's whole line, and each writer's lines are in
  // its own order.
  const std::regex mine(R"(writer (\d) line (\d+) end)");
  std::vector<int> next(kThreads, 0);
  auto lines = lines_of(file_);
  ASSERT_EQ(lines.size(), static_cast<size_t>(kThreads * kLines));
  for (const std::string& line : lines) {
    std::smatch m, w;
    ASSERT_TRUE(std::regex_match(line, m, kLine)) << line;
    std::string message = m[2].str();
    ASSERT_TRUE(std::regex_match(message, w, mine)) << line;
    int t = std::stoi(w[1].str());
    ASSERT_LT(t, kThreads);
    EXPECT_EQ(std::stoi(w[2].str()), next[static_cast<size_t>(t)]++);
  }
}

TEST_F(LogTest, LibeventMessagesComeThroughTheLog) {
  log_capture_libevent();
  // A configuration that forbids every backend makes libevent warn that it
  // has none, and fail.
  event_config* cfg = event_config_new();
  const char** methods = event_get_supported_methods();
  for (int i = 0; i < 16 && methods[i] != nullptr; ++i) event_config_avoid_method(cfg, methods[i]);
  event_base* base = event_base_new_with_config(cfg);
  event_config_free(cfg);
  event_set_log_callback(nullptr);  // back to libevent's own stderr
  EXPECT_EQ(base, nullptr);
  if (base != nullptr) event_base_free(base);
  auto lines = lines_of(file_);
  ASSERT_EQ(lines.size(), 1u);
  std::smatch m;
  ASSERT_TRUE(std::regex_match(lines[0], m, kLine)) << lines[0];
  EXPECT_EQ(m[1], "WARN");
  EXPECT_EQ(m[2].str().rfind("libevent: ", 0), 0u) << lines[0];
}

}  // namespace
}  // namespace memshard::proxy
