// --watch (inotify on the config's directory) and bursts of changes: the
// ways a config is replaced in practice each trigger a reload, and a burst
// of writes or of SIGHUPs always ends with the file's last content in force.
#include <gtest/gtest.h>
#include <unistd.h>

#include <cerrno>
#include <csignal>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <thread>

#include "reload_util.h"

namespace memshard::testing::reload {
namespace {

class ReloadWatch : public ::testing::Test {
 protected:
  void SetUp() override {
    for (int i = 0; i < 5; ++i) {
      mc_.push_back(std::make_unique<Memcached>());
      ports_.push_back(mc_.back()->port());
    }
    port_ = free_port();
  }

  std::string config(std::vector<std::pair<int, uint32_t>> servers) const {
    PoolDef p;
    p.listen = listen_on(port_);
    for (auto [i, w] : servers) p.servers.push_back(ServerRef{ports_[static_cast<size_t>(i)], w});
    return yaml(p);
  }

  void start(const std::string& path, bool watch) {
    std::vector<std::string> args = {"--threads", "2"};
    if (watch) args.push_back("--watch");
    ms_ = std::make_unique<Memshard>(path, memshard_args(args), port_);
    ASSERT_TRUE(wait_ready(port_));
  }

  uint64_t stat(const std::string& name) { return stat_of(proxy_stats(port_), name); }

  std::vector<std::unique_ptr<Memcached>> mc_;
  std::vector<uint16_t> ports_;
  uint16_t port_ = 0;
  TempDir dir_;
  std::unique_ptr<Memshard> ms_;
};

TEST_F(ReloadWatch, RenameOverTriggersAReload) {
  const std::string first = config({{0, 1}, {1, 1}});
  const std::string path = dir_.write("memshard.yml", first);
  start(path, true);
  ASSERT_TRUE(keys_land_per_config(port_, first, ports_, "first:"));

  const std::string second = config({{0, 1}, {1, 1}, {2, 2}});
  dir_.write("memshard.yml", second);  // temp file, then rename over
  ASSERT_TRUE(wait_stat(port_, "config_generation", [](uint64_t g) { return g >= 2; }).has_value())
      << "no reload after the config was renamed over";
  EXPECT_EQ(stat("config_generation"), 2u);
  EXPECT_TRUE(keys_land_per_config(port_, second, ports_, "second:"));

  // The same content again is not a change.
  dir_.write("memshard.yml", second);
  std::this_thread::sleep_for(1s);
  EXPECT_EQ(stat("config_generation"), 2u);
  EXPECT_EQ(stat("config_reload_failures"), 0u);
}

TEST_F(ReloadWatch, InPlaceWriteTriggersAReload) {
  // `cat new > memshard.yml`: truncate, write, close on the same inode.
  const std::string first = config({{0, 1}, {1, 1}});
  const std::string path = dir_.write("memshard.yml", first);
  start(path, true);
  const std::string second = config({{2, 1}, {3, 1}});
  {
    FILE* f = fopen(path.c_str(), "w");
    ASSERT_NE(f, nullptr);
    ASSERT_EQ(fwrite(second.data(), 1, second.size(), f), second.size());
    ASSERT_EQ(fclose(f), 0);
  }
  ASSERT_TRUE(wait_stat(port_, "config_generation", [](uint64_t g) { return g >= 2; }).has_value())
      << "no reload after the config was rewritten in place";
  EXPECT_EQ(stat("config_reload_failures"), 0u);
  EXPECT_TRUE(keys_land_per_config(port_, second, ports_, "in-place"));
}

TEST_F(ReloadWatch, KubernetesConfigMapSymlinkSwap) {
  // dir/memshard.yml -> ..data/memshard.yml, ..data -> ..v1 (a directory).
  const std::string d = dir_.path();
  std::filesystem::create_directory(d + "/..v1");
  const std::string first = config({{1, 1}, {2, 1}});
  dir_.write("..v1/memshard.yml", first);
  ASSERT_EQ(symlink("..v1", (d + "/..data").c_str()), 0) << strerror(errno);
  ASSERT_EQ(symlink("..data/memshard.yml", (d + "/memshard.yml").c_str()), 0) << strerror(errno);
  start(d + "/memshard.yml", true);
  ASSERT_TRUE(keys_land_per_config(port_, first, ports_, "v1:"));

  // What the kubelet does: a new timestamped directory, a temporary link to
  // it, renamed over ..data in one step.
  std::filesystem::create_directory(d + "/..v2");
  const std::string second = config({{3, 1}, {4, 1}, {1, 2}});
  dir_.write("..v2/memshard.yml", second);
  ASSERT_EQ(symlink("..v2", (d + "/..data_tmp").c_str()), 0) << strerror(errno);
  ASSERT_EQ(rename((d + "/..data_tmp").c_str(), (d + "/..data").c_str()), 0) << strerror(errno);
  ASSERT_TRUE(wait_stat(port_, "config_generation", [](uint64_t g) { return g >= 2; }).has_value())
      << "no reload after the ..data symlink swap";
  EXPECT_TRUE(keys_land_per_config(port_, second, ports_, "v2:"));

  // The kubelet then removes the old directory: not a change.
  std::filesystem::remove_all(d + "/..v1");
  std::this_thread::sleep_for(1s);
  EXPECT_EQ(stat("config_generation"), 2u);
  EXPECT_EQ(stat("config_reload_failures"), 0u);
}

// The config path is a symlink to a file in another directory (as a
// configuration tool may keep it), and that file is replaced by rename.
TEST_F(ReloadWatch, SymlinkToAnotherDirectory) {
  const std::string d = dir_.path();
  std::filesystem::create_directory(d + "/etc");
  std::filesystem::create_directory(d + "/store");
  const std::string first = config({{0, 1}, {1, 1}});
  dir_.write("store/current.yml", first);
  ASSERT_EQ(symlink((d + "/store/current.yml").c_str(), (d + "/etc/memshard.yml").c_str()), 0)
      << strerror(errno);
  start(d + "/etc/memshard.yml", true);
  const std::string second = config({{2, 1}, {3, 1}, {4, 1}});
  dir_.write("store/current.yml", second);
  // The change happens in the directory the link points into (store/), not
  // in the one holding the configured path (etc/): both must be watched.
  EXPECT_TRUE(wait_stat(
                  port_, "config_generation", [](uint64_t g) { return g >= 2; }, 3s)
                  .has_value())
      << "no reload after the file the config symlink points to was replaced";
}

TEST_F(ReloadWatch, BurstOfWritesEndsWithTheLastContent) {
  const std::string path = dir_.write("memshard.yml", config({{0, 1}}));
  start(path, true);
  std::vector<std::string> versions = {
      config({{0, 1}, {1, 1}}),
      config({{0, 1}, {1, 1}, {2, 1}}),
      config({{1, 1}, {2, 1}}),
      config({{0, 2}, {2, 1}, {4, 1}}),
      config({{0, 1}, {1, 1}, {2, 1}, {3, 1}}),
  };
  std::string last;
  for (int i = 0; i < 20; ++i) {
    last = i == 19 ? config({{3, 1}, {4, 3}}) : versions[static_cast<size_t>(i) % versions.size()];
    dir_.write("memshard.yml", last);
    std::this_thread::sleep_for(std::chrono::milliseconds(i % 3));
  }
  auto g = wait_generation_settled(port_, 1s);
  ASSERT_TRUE(g.has_value());
  EXPECT_GE(*g, 2u);
  EXPECT_EQ(stat("config_reload_failures"), 0u);
  EXPECT_TRUE(ms_->process().running());
  EXPECT_TRUE(keys_land_per_config(port_, last, ports_, "last:"));
}

TEST_F(ReloadWatch, BurstOfSighupsEndsWithTheLastContent) {
  const std::string path = dir_.write("memshard.yml", config({{0, 1}}));
  start(path, false);
  std::vector<std::string> versions = {
      config({{0, 1}, {1, 1}}),
      config({{1, 1}, {2, 1}, {3, 1}}),
      config({{0, 3}, {4, 1}}),
      config({{2, 1}, {3, 1}}),
      config({{0, 1}, {1, 1}, {2, 1}, {3, 1}, {4, 1}}),
  };
  std::string last;
  for (int i = 0; i < 30; ++i) {
    if (i % 4 == 0) {
      last = versions[static_cast<size_t>(i / 4) % versions.size()];
      if (i == 28) last = config({{4, 1}, {1, 5}});
      dir_.write("memshard.yml", last);
    }
    ASSERT_EQ(kill(ms_->process().pid(), SIGHUP), 0);
  }
  auto g = wait_generation_settled(port_, 1s);
  ASSERT_TRUE(g.has_value()) << "memshard does not answer after a burst of SIGHUPs";
  EXPECT_TRUE(ms_->process().running());
  EXPECT_GE(*g, 2u);
  EXPECT_EQ(stat("config_reload_failures"), 0u);
  EXPECT_TRUE(keys_land_per_config(port_, last, ports_, "last:"));
}

}  // namespace
}  // namespace memshard::testing::reload
