// ReloadLog (proxy/runtime/reload_log.h): the status page's record of the
// start and the last reloads, written on the main thread and read by stats
// readers on others.
#include "proxy/runtime/reload_log.h"

#include <gtest/gtest.h>

#include <atomic>
#include <ctime>
#include <string>
#include <thread>
#include <utility>
#include <vector>

namespace memshard::proxy {
namespace {

using Outcome = ReloadRecord::Outcome;

TEST(ReloadLogTest, RecordsEachOutcomeOldestFirstWithWhatItSays) {
  ReloadLog log;
  EXPECT_TRUE(log.records().empty());
  const int64_t before = static_cast<int64_t>(time(nullptr));
  log.started(1);
  log.refused(1, "memshard.yml:4: servers: expected a list");
  log.applied(2, {{"alpha", 0.25}, {"beta", 0.0}});
  const int64_t after = static_cast<int64_t>(time(nullptr));

  const std::vector<ReloadRecord> records = log.records();
  ASSERT_EQ(records.size(), 3u);
  EXPECT_EQ(records[0].outcome, Outcome::started);
  EXPECT_EQ(records[0].generation, 1u);
  EXPECT_EQ(records[1].outcome, Outcome::refused);
  EXPECT_EQ(records[1].generation, 1u) << "a refused reload names the generation still in force";
  EXPECT_EQ(records[1].reason, "memshard.yml:4: servers: expected a list");
  EXPECT_EQ(records[2].outcome, Outcome::applied);
  EXPECT_EQ(records[2].generation, 2u);
  EXPECT_EQ(records[2].moved,
            (std::vector<std::pair<std::string, double>>{{"alpha", 0.25}, {"beta", 0.0}}));
  EXPECT_TRUE(records[2].reason.empty());
  for (const ReloadRecord& r : records) {
    EXPECT_GE(r.at, before);
    EXPECT_LE(r.at, after);
  }
}

TEST(ReloadLogTest, KeepsOnlyTheLastTen) {
  ReloadLog log;
  log.started(1);
  for (uint64_t g = 2; g <= 15; ++g) log.applied(g, {});
  const std::vector<ReloadRecord> records = log.records();
  ASSERT_EQ(records.size(), ReloadLog::kKept);
  EXPECT_EQ(ReloadLog::kKept, 10u);
  for (size_t i = 0; i < records.size(); ++i) {
    EXPECT_EQ(records[i].generation, 6 + i);
    EXPECT_EQ(records[i].outcome, Outcome::applied);
  }
}

// A reader on another thread sees whole records in order, never a torn or
// reordered list, while the main thread keeps adding.
TEST(ReloadLogTest, AReaderOnAnotherThreadSeesConsistentRecords) {
  constexpr uint64_t kReloads = 2000;
  constexpr int kReadsAtMost = 1'000'000;
  ReloadLog log;
  std::atomic<bool> done{false};
  std::string problem;
  std::thread reader([&] {
    for (int i = 0; i < kReadsAtMost && !done.load() && problem.empty(); ++i) {
      const std::vector<ReloadRecord> records = log.records();
      if (records.size() > ReloadLog::kKept) problem = "more than kKept records";
      for (size_t j = 1; j < records.size() && problem.empty(); ++j) {
        if (records[j].generation != records[j - 1].generation + 1)
          problem = "records out of order";
      }
      for (const ReloadRecord& r : records) {
        if (r.reason != "refused " + std::to_string(r.generation)) problem = "a torn record";
      }
    }
  });
  for (uint64_t g = 1; g <= kReloads; ++g) log.refused(g, "refused " + std::to_string(g));
  done.store(true);
  reader.join();
  EXPECT_EQ(problem, "");
  EXPECT_EQ(log.records().back().generation, kReloads);
}

}  // namespace
}  // namespace memshard::proxy
