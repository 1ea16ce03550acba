// A config that does not load, resolve or bind changes nothing: keys still
// land where the config in force says, the generation stays, the failure
// counter moves by one, and the log names the file and line of the error.
#include <gtest/gtest.h>
#include <unistd.h>

#include <csignal>
#include <filesystem>
#include <thread>

#include "reload_util.h"

namespace memshard::testing::reload {
namespace {

class ReloadBrokenConfig : public ::testing::Test {
 protected:
  void SetUp() override {
    for (int i = 0; i < 3; ++i) {
      mc_.push_back(std::make_unique<Memcached>());
      ports_.push_back(mc_.back()->port());
    }
    port_ = free_port();
    PoolDef p;
    p.listen = listen_on(port_);
    p.servers = {{ports_[0], 1}, {ports_[1], 1}, {ports_[2], 1}};
    good_ = yaml(p);
    path_ = dir_.write("memshard.yml", good_);
    log_ = dir_.path() + "/memshard.log";
    ms_ = std::make_unique<Memshard>(
        path_, memshard_args({"--threads", "2", "--fixed-threads", "-o", log_}), port_);
    ASSERT_TRUE(wait_ready(port_));
    ASSERT_TRUE(keys_land_per_config(port_, good_, ports_, "before:"));
  }

  // Installs `text` (nullopt: removes the file), sends SIGHUP and checks
  // that nothing changed. Returns the log lines the reload added.
  std::string refuse(const std::optional<std::string>& text, const std::string& name) {
    if (text) {
      dir_.write("memshard.yml", *text);
    } else {
      std::filesystem::remove(path_);
    }
    size_t log_before = read_file(log_).size();
    auto s = proxy_stats(port_);
    EXPECT_FALSE(s.empty());
    if (s.empty()) return "";
    uint64_t failures = stat_of(s, "config_reload_failures");
    uint64_t generation = stat_of(s, "config_generation");
    uint64_t reloads = stat_of(s, "config_reloads");
    ms_->process().signal(SIGHUP);
    auto f = wait_stat(port_, "config_reload_failures", [&](uint64_t v) { return v > failures; });
    EXPECT_TRUE(f.has_value()) << name << ": config_reload_failures never moved";
    if (f) {
      EXPECT_EQ(*f, failures + 1) << name;
    }
    s = proxy_stats(port_);
    EXPECT_EQ(stat_of(s, "config_generation"), generation) << name;
    EXPECT_EQ(stat_of(s, "config_reloads"), reloads) << name;
    EXPECT_TRUE(ms_->process().running()) << name;
    EXPECT_TRUE(keys_land_per_config(port_, good_, ports_, name + ":")) << name;
    // The log is written before the counter moves, but give it a moment.
    std::string added;
    for (int i = 0; i < 50; ++i) {
      added = read_file(log_).substr(log_before);
      if (added.find("refused") != std::string::npos) break;
      std::this_thread::sleep_for(20ms);
    }
    return added;
  }

  std::vector<std::unique_ptr<Memcached>> mc_;
  std::vector<uint16_t> ports_;
  uint16_t port_ = 0;
  TempDir dir_;
  std::string good_, path_, log_;
  std::unique_ptr<Memshard> ms_;
};

TEST_F(ReloadBrokenConfig, SemanticErrorNamesFileAndLine) {
  std::string bad = good_;
  bad.replace(bad.find("fnv1a_64"), 8, "no_such_hash");
  std::string log = refuse(bad, "semantic");
  // yaml(): line 1 pool name, 2 listen, 3 hash.
  EXPECT_NE(log.find(path_ + ":3: hash: "), std::string::npos) << log;
  EXPECT_NE(log.find("no_such_hash"), std::string::npos) << log;
}

TEST_F(ReloadBrokenConfig, MalformedYamlNamesFileAndLine) {
  // Line 5 opens a flow sequence that line 6 breaks off with a mapping key
  // at a lower indentation.
  std::string bad =
      "main:\n"
      "  listen: " +
      listen_on(port_) +
      "\n"
      "  hash: fnv1a_64\n"
      "  servers:\n"
      "   - [127.0.0.1:" +
      std::to_string(ports_[0]) +
      ":1\n"
      "  timeout: 400\n";
  conf::LoadResult expected = conf::parse_config(bad, path_);
  ASSERT_FALSE(expected.errors.empty());
  ASSERT_GT(expected.errors[0].line, 0) << expected.errors[0].to_string();
  std::string log = refuse(bad, "malformed");
  // yaml-cpp notices the unclosed "[" where line 6 starts.
  EXPECT_NE(log.find(path_ + ":6: malformed YAML"), std::string::npos) << log;
  EXPECT_NE(log.find(expected.errors[0].to_string()), std::string::npos) << log;
}

TEST_F(ReloadBrokenConfig, ListenAddressInUse) {
  // The new listen address is taken (by a memcached): the reload binds
  // before switching, so it is refused and the old listener stays.
  PoolDef p;
  p.listen = listen_on(ports_[0]);
  p.servers = {{ports_[1], 1}};
  std::string log = refuse(yaml(p), "bind");
  EXPECT_NE(log.find("cannot listen on " + listen_on(ports_[0])), std::string::npos) << log;
  EXPECT_TRUE(accepts(port_));
}

TEST_F(ReloadBrokenConfig, RefusedReloadsLeakNothing) {
  // Each refused config first binds a new pool's port, then fails on a
  // port in use: the rollback must close what it opened.
  const pid_t pid = ms_->process().pid();
  ASSERT_TRUE(warm_every_worker(port_, pid, ports_));
  const int fds_before = settled_fds(pid);
  const uint64_t failures = stat_of(proxy_stats(port_), "config_reload_failures");
  for (int i = 0; i < 20; ++i) {
    uint16_t extra = free_port();
    PoolDef main_pool, added, taken;
    main_pool.listen = listen_on(port_);
    main_pool.servers = {{ports_[0], 1}, {ports_[1], 1}, {ports_[2], 1}};
    added.name = "added";
    added.listen = listen_on(extra);
    added.servers = {{ports_[1], 1}};
    taken.name = "taken";
    taken.listen = listen_on(ports_[2]);
    taken.servers = {{ports_[1], 1}};
    dir_.write("memshard.yml", yaml({main_pool, added, taken}));
    ms_->process().signal(SIGHUP);
    ASSERT_TRUE(wait_stat(port_, "config_reload_failures",
                          [&](uint64_t f) { return f == failures + 1 + static_cast<uint64_t>(i); })
                    .has_value())
        << "refused reload " << i;
    EXPECT_FALSE(accepts(extra)) << "a refused config's listener stays open (round " << i << ")";
  }
  EXPECT_EQ(stat_of(proxy_stats(port_), "config_generation"), 1u);
  EXPECT_TRUE(keys_land_per_config(port_, good_, ports_, "after-refusals"));
  ASSERT_TRUE(warm_every_worker(port_, pid, ports_));
  int fds_after = settled_fds(pid);
  for (int i = 0; i < 20 && fds_after > fds_before; ++i) {
    std::this_thread::sleep_for(100ms);
    fds_after = count_fds(pid);
  }
  EXPECT_LE(fds_after, fds_before);
}

TEST_F(ReloadBrokenConfig, MissingFile) {
  std::string log = refuse(std::nullopt, "missing");
  EXPECT_NE(log.find(path_), std::string::npos) << log;
}

TEST_F(ReloadBrokenConfig, FailuresInARowThenAGoodConfig) {
  std::string semantic = good_;
  semantic.replace(semantic.find("fnv1a_64"), 8, "no_such_hash");
  refuse(semantic, "first");
  refuse("main: [\n", "second");
  refuse("", "empty");
  EXPECT_EQ(stat_of(proxy_stats(port_), "config_reload_failures"), 3u);

  // A good config after them is taken at once.
  PoolDef p;
  p.listen = listen_on(port_);
  p.servers = {{ports_[2], 1}, {ports_[0], 2}};
  std::string next = yaml(p);
  dir_.write("memshard.yml", next);
  ms_->process().signal(SIGHUP);
  ASSERT_TRUE(wait_stat(port_, "config_generation", [](uint64_t g) { return g == 2; }).has_value());
  EXPECT_TRUE(keys_land_per_config(port_, next, ports_, "next:"));
}

}  // namespace
}  // namespace memshard::testing::reload
