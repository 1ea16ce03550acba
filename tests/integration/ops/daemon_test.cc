// Daemon mode and pid files: `memshard -d -p FILE` returns at once with
// exit 0, leaves a detached memshard whose pid is in FILE and which serves
// requests; SIGTERM ends it and removes FILE. A broken config fails before
// detaching, on the terminal.
#include <gtest/gtest.h>
#include <netinet/in.h>
#include <signal.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <thread>

#include "ops_util.h"

namespace memshard::testing::ops {
namespace {

std::string fd_target(pid_t pid, int fd) {
  std::error_code ec;
  return std::filesystem::read_symlink("/proc/" + std::to_string(pid) + "/fd/" + std::to_string(fd),
                                       ec)
      .string();
}

pid_t parent_of(pid_t pid) {
  std::string stat = read_file("/proc/" + std::to_string(pid) + "/stat");
  size_t paren = stat.rfind(')');
  if (paren == std::string::npos) return -1;
  std::istringstream f(stat.substr(paren + 2));
  std::string state;
  pid_t ppid = -1;
  f >> state >> ppid;
  return ppid;
}

class Daemon : public ::testing::Test {
 protected:
  void SetUp() override {
    port_ = free_port();
    stats_port_ = free_port();
    pid_file_ = dir_.path() + "/memshard.pid";
    log_ = dir_.path() + "/memshard.log";
    PoolSpec pool{"alpha", "127.0.0.1:" + std::to_string(port_), {}, {mc_.address() + ":1"}};
    config_ = dir_.write("memshard.yml", config_yaml({pool}));
  }

  void TearDown() override {
    // A daemon is nobody's child here: end it by hand if a test did not.
    for (pid_t pid : daemons_) {
      if (pid_alive(pid)) {
        kill(pid, SIGKILL);
        wait_until([&] { return !pid_alive(pid); }, 5s);
      }
    }
  }

  std::vector<std::string> daemon_argv(const std::string& config) const {
    return {memshard_binary(),           "-d", "-p",        pid_file_, "-c", config, "-s",
            std::to_string(stats_port_), "-a", "127.0.0.1", "-o",      log_};
  }

  // The pid in the pid file once it is there (bounded), else -1.
  pid_t wait_pid_file() {
    pid_t pid = -1;
    wait_until(
        [&] {
          std::string text = read_file(pid_file_);
          if (text.empty() || text.back() != '\n') return false;
          pid = static_cast<pid_t>(std::stol(text));
          return true;
        },
        10s);
    if (pid > 0) daemons_.push_back(pid);
    return pid;
  }

  Memcached mc_;
  TempDir dir_;
  uint16_t port_ = 0, stats_port_ = 0;
  std::string pid_file_, log_, config_;
  std::vector<pid_t> daemons_;
};

TEST_F(Daemon, DetachesAndThePidFileNamesTheServingProcess) {
  auto t0 = std::chrono::steady_clock::now();
  CommandResult r = run_command(daemon_argv(config_), {}, 15s);
  auto took = std::chrono::steady_clock::now() - t0;
  ASSERT_FALSE(r.timed_out) << "memshard -d did not return (or kept its output pipes open)";
  EXPECT_EQ(r.exit_code, 0) << r.err;
  EXPECT_LT(took, 5s);

  pid_t pid = wait_pid_file();
  ASSERT_GT(pid, 0) << "no pid file " << pid_file_;
  ASSERT_TRUE(pid_alive(pid)) << "pid " << pid << " from the pid file is not running";
  std::error_code ec;
  EXPECT_EQ(std::filesystem::read_symlink("/proc/" + std::to_string(pid) + "/exe", ec),
            std::filesystem::canonical(memshard_binary()));
  // Detached: another session, not our child, standard streams on /dev/null.
  EXPECT_NE(getsid(pid), getsid(0));
  EXPECT_NE(parent_of(pid), getpid());
  for (int fd = 0; fd <= 2; ++fd) EXPECT_EQ(fd_target(pid, fd), "/dev/null") << "fd " << fd;

  ASSERT_TRUE(wait_listening(port_));
  {
    RawClient c(port_);
    EXPECT_EQ(c.roundtrip(set_command("daemon-key", "v")), "STORED\r\n");
    EXPECT_EQ(c.roundtrip("get daemon-key\r\n", "END\r\n"), "VALUE daemon-key 0 1\r\nv\r\nEND\r\n");
    std::string stats = c.roundtrip("stats\r\n", "END\r\n");
    EXPECT_EQ(stat_value(stats, "pid"), std::to_string(pid)) << stats;
  }
  ASSERT_TRUE(wait_listening(stats_port_));
  EXPECT_TRUE(fetch_stats_json(stats_port_).has_value());
  EXPECT_TRUE(wait_until([&] { return read_file(log_).find(" started: ") != std::string::npos; }))
      << read_file(log_);

  // SIGTERM: drains, exits, removes its pid file.
  ASSERT_EQ(kill(pid, SIGTERM), 0);
  EXPECT_TRUE(wait_until([&] { return !pid_alive(pid); }, 15s)) << "still running after SIGTERM";
  EXPECT_TRUE(wait_until([&] { return !file_exists(pid_file_); }, 2s))
      << "the pid file outlived the daemon";
  EXPECT_NE(read_file(log_).find("exiting"), std::string::npos) << read_file(log_);
  EXPECT_FALSE(wait_listening(port_, 200ms));
}

TEST_F(Daemon, BrokenConfigFailsOnTheTerminalBeforeDetaching) {
  const std::string broken =
      dir_.write("broken.yml", "alpha:\n  listen: 127.0.0.1:1\n  servers: []\n  bogus: 1\n");
  CommandResult r = run_command(daemon_argv(broken), {}, 15s);
  ASSERT_FALSE(r.timed_out);
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_NE(r.err.find("syntax is invalid"), std::string::npos) << r.err;
  std::this_thread::sleep_for(300ms);
  EXPECT_FALSE(file_exists(pid_file_));
}

TEST_F(Daemon, ForegroundPidFileIsRemovedAtAGracefulExit) {
  Memshard ms(config_, {"-p", pid_file_, "-s", std::to_string(stats_port_), "-a", "127.0.0.1"},
              port_);
  ASSERT_TRUE(wait_until([&] {
    return read_file(pid_file_) == std::to_string(ms.process().pid()) + "\n";
  })) << "pid file holds '"
      << read_file(pid_file_) << "'";
  int status = ms.process().stop(10s);
  EXPECT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0) << "exit status " << status;
  EXPECT_FALSE(file_exists(pid_file_));
}

// MEMSHARD BUG (fails until fixed): main.cc writes the pid file with
// `std::ofstream(pid_file) << getpid()` and never looks at the result: a
// pid file that cannot be written (missing directory, no permission) is
// silently not written, and whatever stops the service by its pid file
// cannot. nutcracker refuses to start ("failed to open pid file"); at the
// least the failure must be said somewhere.
TEST_F(Daemon, UnwritablePidFileIsNotSilent) {
  const std::string bad = dir_.path() + "/no/such/dir/memshard.pid";
  Process p({memshard_binary(), "-c", config_, "-p", bad, "-s", "0", "-o", log_},
            dir_.path() + "/stderr.log");
  const bool exited = p.wait_exit(3s) != -1;
  const std::string said = read_file(dir_.path() + "/stderr.log") + read_file(log_);
  EXPECT_NE(said.find(bad), std::string::npos)
      << (exited ? "memshard exited" : "memshard runs") << " without a word about the pid file "
      << bad << "; it said:\n"
      << said;
}

// MEMSHARD BUG (fails until fixed): with -d, an error after detaching -- here
// the pool's listen address is taken -- is written to std::cerr, which is
// /dev/null by then, not to the -o log file. `memshard -d` has returned 0
// already, so the failure leaves no trace at all: no process, no pid file,
// nothing in the log. Expected: the reason in the log file (as nutcracker
// logs its bind errors there).
TEST_F(Daemon, StartFailureAfterDetachingIsLogged) {
  int holder = socket(AF_INET, SOCK_STREAM, 0);
  int one = 1;
  setsockopt(holder, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  a.sin_port = htons(port_);
  ASSERT_EQ(bind(holder, reinterpret_cast<sockaddr*>(&a), sizeof(a)), 0);
  ASSERT_EQ(listen(holder, 1), 0);

  CommandResult r = run_command(daemon_argv(config_), {}, 15s);
  ASSERT_FALSE(r.timed_out);
  pid_t pid = -1;
  if (r.exit_code == 0) {
    // Detached: whatever went wrong must be in the log.
    EXPECT_TRUE(wait_until([&] {
      return read_file(log_).find("cannot listen") != std::string::npos;
    })) << "memshard -d exited 0, and the log says nothing of the busy listen address:\n"
        << read_file(log_);
    std::string text = read_file(pid_file_);
    if (!text.empty()) pid = static_cast<pid_t>(std::stol(text));
  } else {
    EXPECT_NE(r.err.find("cannot listen"), std::string::npos) << r.err;
  }
  EXPECT_TRUE(wait_until([&] { return !file_exists(pid_file_) || !pid_alive(pid); }, 3s));
  close(holder);
}

// MEMSHARD BUG (fails until fixed): `memshard -d` returns as soon as it has
// forked, before the daemon has written its pid file or bound its
// listeners. daemon(7) and systemd's Type=forking (PIDFile=) expect the
// parent to exit only once start-up is complete: an init script that runs
// `memshard -d -p FILE && cat FILE` (or a client connecting right after)
// races the daemon.
TEST_F(Daemon, PidFileAndListenerAreReadyWhenDaemonReturns) {
  CommandResult r = run_command(daemon_argv(config_), {}, 15s);
  ASSERT_FALSE(r.timed_out);
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const std::string at_return = read_file(pid_file_);
  const bool listening_at_return = wait_listening(port_, 1ms);
  pid_t pid = wait_pid_file();  // for the clean-up
  ASSERT_GT(pid, 0);
  EXPECT_EQ(at_return, std::to_string(pid) + "\n") << "no pid file yet when memshard -d returned";
  EXPECT_TRUE(listening_at_return) << "not listening yet when memshard -d returned";
}

}  // namespace
}  // namespace memshard::testing::ops
