// ConfigWatch (proxy/runtime/config_watch.h), --watch: real inotify on a
// temporary directory and a real event loop on the test's thread, bounded
// by run_base_until. The files are replaced the ways configs are in
// practice: an editor's rename over the file, a Kubernetes ConfigMap's
// `..data` symlink swap, a rewrite in place.
//
// To say that something did NOT trigger a reload, a test waits until the
// watch has looked: it has opened the file to compare its content, which
// an inotify watch of the test's own on the file sees (IN_OPEN, set after
// the test's own writes). No test waits a fixed time for quiet. Whether
// the watch is settling is seen on the loop: its settle timer is the only
// timer there besides run_base_until's tick.
#include "proxy/runtime/config_watch.h"

#include <gtest/gtest.h>
#include <stdlib.h>
#include <sys/inotify.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <sstream>
#include <stdexcept>
#include <string>
#include <vector>

#include "bounded_wait.h"

namespace memshard::proxy {
namespace {

namespace fs = std::filesystem;

std::string read_file(const fs::path& path) {
  std::ifstream f(path, std::ios::binary);
  std::ostringstream s;
  s << f.rdbuf();
  return s.str();
}

// Truncates and writes the file itself (same inode), as `cat > file` does.
void write_in_place(const fs::path& path, const std::string& text) {
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  out << text;
  if (!out.flush()) throw std::runtime_error("cannot write " + path.string());
}

// As vim or an atomic deploy tool: a new file beside it, renamed over it.
void replace_by_rename(const fs::path& path, const std::string& text) {
  const fs::path tmp = path.parent_path() / ("." + path.filename().string() + ".swp");
  write_in_place(tmp, text);
  fs::rename(tmp, path);
}

// Timers pending on `base` (events with no descriptor and no signal).
int pending_timers(event_base* base) {
  int n = 0;
  event_base_foreach_event(
      base,
      [](const event_base*, const event* ev, void* count) {
        if (event_get_fd(ev) == -1 && (event_get_events(ev) & EV_SIGNAL) == 0 &&
            event_pending(ev, EV_TIMEOUT, nullptr)) {
          ++*static_cast<int*>(count);
        }
        return 0;
      },
      &n);
  return n;
}

// Sees the file opened from now on (the watch reading it to compare).
class OpenObserver {
 public:
  explicit OpenObserver(const fs::path& file) {
    fd_ = inotify_init1(IN_NONBLOCK | IN_CLOEXEC);
    if (fd_ < 0 || inotify_add_watch(fd_, fs::canonical(file).c_str(), IN_OPEN) < 0) {
      throw std::runtime_error("inotify on " + file.string());
    }
  }
  ~OpenObserver() { close(fd_); }
  OpenObserver(const OpenObserver&) = delete;
  OpenObserver& operator=(const OpenObserver&) = delete;
  bool opened() {
    alignas(inotify_event) char buf[4096];
    while (read(fd_, buf, sizeof(buf)) > 0) opened_ = true;  // IN_OPEN is all it asks for
    return opened_;
  }

 private:
  int fd_ = -1;
  bool opened_ = false;
};

class ConfigWatchTest : public ::testing::Test {
 protected:
  ConfigWatchTest() {
    char tmpl[] = "/tmp/memshard-config-watch-XXXXXX";
    if (mkdtemp(tmpl) == nullptr) throw std::runtime_error("mkdtemp");
    dir_ = tmpl;
  }
  ~ConfigWatchTest() override {
    watch_.reset();
    event_base_free(base_);
    std::error_code ec;
    fs::remove_all(dir_, ec);
  }

  // Watches `path`; every call records what the file held then.
  void watch(const fs::path& path) {
    watched_ = path;
    watch_ = std::make_unique<ConfigWatch>(base_, path.string(),
                                           [this] { seen_.push_back(read_file(watched_)); });
  }
  bool run_until(const std::function<bool()>& done) { return test::run_base_until(base_, done); }
  // While run_until's condition is read, its own tick is one pending timer.
  bool settle_pending() const { return pending_timers(base_) > 1; }
  // After the test's writes: runs until the watch has compared the
  // file's content (and called back, had it changed).
  bool run_until_looked() {
    OpenObserver observer(watched_);
    return run_until([&] { return observer.opened(); });
  }

  event_base* base_ = event_base_new();
  fs::path dir_;
  fs::path watched_;
  std::unique_ptr<ConfigWatch> watch_;
  std::vector<std::string> seen_;  // the file's content at each call
};

TEST_F(ConfigWatchTest, AnEditorsRenameOverTheFileTriggersOnce) {
  const fs::path config = dir_ / "memshard.yml";
  write_in_place(config, "version 1\n");
  watch(config);
  // Creating, writing, closing and renaming the temp file: four events.
  replace_by_rename(config, "version 2\n");
  ASSERT_TRUE(run_until([&] { return !seen_.empty(); })) << "the rename was not seen";
  ASSERT_TRUE(run_until([&] { return !settle_pending(); }));
  EXPECT_EQ(seen_, std::vector<std::string>{"version 2\n"});
}

TEST_F(ConfigWatchTest, AKubernetesDataSymlinkSwapTriggers) {
  // What the kubelet makes of a ConfigMap volume: the file is a link
  // through `..data`, itself a link to a timestamped directory.
  fs::create_directory(dir_ / "..2024_01_01");
  write_in_place(dir_ / "..2024_01_01" / "memshard.yml", "version 1\n");
  fs::create_directory_symlink("..2024_01_01", dir_ / "..data");
  fs::create_symlink("..data/memshard.yml", dir_ / "memshard.yml");
  watch(dir_ / "memshard.yml");

  // An update: a new directory, a new link, renamed over `..data`.
  auto swap_to = [&](const std::string& stamp, const std::string& text) {
    fs::create_directory(dir_ / stamp);
    write_in_place(dir_ / stamp / "memshard.yml", text);
    fs::create_directory_symlink(stamp, dir_ / "..data_tmp");
    fs::rename(dir_ / "..data_tmp", dir_ / "..data");
  };
  swap_to("..2024_01_02", "version 2\n");
  ASSERT_TRUE(run_until([&] { return seen_.size() == 1; })) << "the swap was not seen";
  EXPECT_EQ(seen_.back(), "version 2\n");
  // The kubelet then removes the old directory; that is no change of ours.
  fs::remove_all(dir_ / "..2024_01_01");
  ASSERT_TRUE(run_until_looked());
  EXPECT_EQ(seen_.size(), 1u);

  swap_to("..2024_01_03", "version 3\n");
  ASSERT_TRUE(run_until([&] { return seen_.size() == 2; })) << "the second swap was not seen";
  EXPECT_EQ(seen_.back(), "version 3\n");
}

TEST_F(ConfigWatchTest, ALinkToAFileElsewhereFollowsEditsThere) {
  fs::create_directory(dir_ / "etc");
  fs::create_directory(dir_ / "shared");
  write_in_place(dir_ / "shared" / "memshard.yml", "version 1\n");
  fs::create_symlink(dir_ / "shared" / "memshard.yml", dir_ / "etc" / "memshard.yml");
  watch(dir_ / "etc" / "memshard.yml");
  // Nothing changes in etc/: only the link's target directory sees it.
  replace_by_rename(dir_ / "shared" / "memshard.yml", "version 2\n");
  ASSERT_TRUE(run_until([&] { return seen_.size() == 1; })) << "an edit of the target was missed";
  EXPECT_EQ(seen_.back(), "version 2\n");
}

TEST_F(ConfigWatchTest, AWriteThatLeavesTheContentAsItWasDoesNotTrigger) {
  const fs::path config = dir_ / "memshard.yml";
  write_in_place(config, "version 1\n");
  watch(config);
  write_in_place(config, "version 1\n");
  ASSERT_TRUE(run_until_looked()) << "the rewrite was not looked at";
  replace_by_rename(config, "version 1\n");
  ASSERT_TRUE(run_until_looked()) << "the rename was not looked at";
  EXPECT_TRUE(seen_.empty());
  // The watch still works: a real change triggers.
  write_in_place(config, "version 2\n");
  ASSERT_TRUE(run_until([&] { return seen_.size() == 1; }));
  EXPECT_EQ(seen_.back(), "version 2\n");
}

TEST_F(ConfigWatchTest, AnotherFileOfTheDirectoryChangingDoesNotTrigger) {
  const fs::path config = dir_ / "memshard.yml";
  write_in_place(config, "version 1\n");
  watch(config);
  write_in_place(dir_ / "notes.txt", "not the config\n");
  replace_by_rename(dir_ / "other.yml", "another config\n");
  ASSERT_TRUE(run_until_looked());
  EXPECT_TRUE(seen_.empty());
}

// Each write is seen by the loop before the next is made (the settle
// timer re-armed each time), as a deploy tool writing in several steps
// would be. Should the machine be so slow that the timer ran out between
// two writes, that burst proves nothing and is made again.
TEST_F(ConfigWatchTest, ABurstOfChangesIsOneCallWithTheLastContent) {
  const fs::path config = dir_ / "memshard.yml";
  write_in_place(config, "version 0\n");
  watch(config);
  constexpr int kAttempts = 3, kWrites = 5;
  bool unbroken = false;
  for (int attempt = 0; attempt < kAttempts && !unbroken; ++attempt) {
    seen_.clear();
    unbroken = true;
    for (int i = 0; i < kWrites && unbroken; ++i) {
      write_in_place(config,
                     "attempt " + std::to_string(attempt) + " write " + std::to_string(i) + "\n");
      ASSERT_TRUE(run_until([&] { return settle_pending() || !seen_.empty(); }));
      unbroken = seen_.empty();
    }
    ASSERT_TRUE(run_until([&] { return !seen_.empty() && !settle_pending(); }));
    if (!unbroken) continue;
    EXPECT_EQ(seen_, std::vector<std::string>{"attempt " + std::to_string(attempt) + " write " +
                                              std::to_string(kWrites - 1) + "\n"});
  }
  if (!unbroken) GTEST_SKIP() << "the loop ran too late for a burst in every attempt";
}

TEST_F(ConfigWatchTest, AChangeUndoneWithinTheBurstDoesNotTrigger) {
  const fs::path config = dir_ / "memshard.yml";
  write_in_place(config, "version 1\n");
  watch(config);
  write_in_place(config, "version 2\n");
  write_in_place(config, "version 1\n");
  ASSERT_TRUE(run_until_looked());
  EXPECT_TRUE(seen_.empty());
}

TEST_F(ConfigWatchTest, ADirectoryThatCannotBeWatchedThrows) {
  EXPECT_THROW(ConfigWatch(base_, (dir_ / "missing" / "memshard.yml").string(), [] {}),
               std::runtime_error);
}

}  // namespace
}  // namespace memshard::proxy
