// memshard's command line. Options shared with nutcracker keep its names and
// letters, so an existing unit file or init script keeps working.
#include <fcntl.h>
#include <malloc.h>
#include <sys/resource.h>
#include <unistd.h>

#include <CLI/CLI.hpp>
#include <cerrno>
#include <csignal>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <iterator>
#include <string>
#include <thread>
#include <vector>

#include "conf/config.h"
#include "conf/mcrouter.h"
#include "proxy/admin/stats_token.h"
#include "proxy/cli/ring_tools.h"
#include "proxy/cli/top.h"
#include "proxy/runtime/dns_client.h"
#include "proxy/runtime/proxy.h"
#include "proxy/runtime/ring_warnings.h"
#include "proxy/runtime/stats_token_source.h"
#include "proxy/support/event_memory.h"
#include "proxy/support/log.h"

namespace {

using memshard::proxy::LogLevel;

// nutcracker's -v takes syslog-like levels 0..11 (default 5, notice).
LogLevel level_from_nutcracker(int v) {
  if (v <= 3) return LogLevel::error;
  if (v == 4) return LogLevel::warn;
  if (v == 5) return LogLevel::notice;
  if (v == 6) return LogLevel::info;
  return LogLevel::debug;
}

// Whether the file is mcrouter's JSON config (conf/mcrouter.h).
bool is_mcrouter_file(const std::string& file) {
  std::ifstream in(file, std::ios::binary);
  const std::string text{std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
  return memshard::conf::is_mcrouter_config(text, file);
}

int test_config(const std::string& file, const memshard::conf::LoadOptions& load) {
  memshard::conf::LoadResult r = memshard::conf::load_config_file(file, load);
  if (!r.errors.empty()) {
    for (const auto& e : r.errors) std::cerr << e.to_string() << "\n";
    std::cerr << "memshard: configuration file '" << file << "' syntax is invalid\n";
    return 1;
  }
  // The stats token file it names must load, or the start or reload fails.
  memshard::proxy::StatsTokenSource token;
  if (std::string error; !memshard::proxy::load_stats_token("", *r.config, token, error)) {
    std::cerr << error << "\n";
    std::cerr << "memshard: configuration file '" << file << "' is invalid\n";
    return 1;
  }
  // Warnings do not fail the test: the config does what it says, and it may
  // be what a fleet already runs.
  for (const auto& w : memshard::proxy::ring_warnings(*r.config)) std::cerr << w << "\n";
  if (load.listen.empty() && is_mcrouter_file(file)) {
    std::cerr << "memshard: '" << file
              << "' is mcrouter's config, which has no listen address: run it with --listen "
                 "HOST:PORT (mcrouter's -p)\n";
  }
  std::cout << "memshard: configuration file '" << file << "' syntax is ok\n";
  return 0;
}

// `memshard convert FILE`: mcrouter's JSON config as memshard's YAML.
int convert(const std::string& file, const std::string& listen) {
  std::ifstream in(file, std::ios::binary);
  if (!in) {
    std::cerr << file << ": cannot read the file: " << std::strerror(errno) << "\n";
    return 1;
  }
  const std::string text{std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
  if (!memshard::conf::is_mcrouter_config(text, file)) {
    std::cerr << file
              << ": is not mcrouter's JSON config (it is read as memshard's YAML already)\n";
    return 1;
  }
  memshard::conf::McrouterConversion c =
      memshard::conf::convert_mcrouter(text, file, memshard::conf::McrouterOptions{listen});
  // The YAML must load too: what memshard's own checks refuse is said here.
  memshard::conf::LoadResult r =
      memshard::conf::load_mcrouter(text, file, memshard::conf::LoadOptions{listen});
  if (!r.errors.empty()) {
    for (const auto& e : r.errors) std::cerr << e.to_string() << "\n";
    std::cerr << "memshard: '" << file << "' cannot be converted\n";
    return 1;
  }
  std::cout << c.yaml;
  return 0;
}

// Detaches from the terminal. The process that ran the command waits until
// the daemon says it is serving (or failed) through `ready_fd`, and exits
// with that status: a service manager or script that sees exit 0 can count
// on the listeners and the pid file being there. Returns the write end of
// that pipe in the daemon, or -1 on failure.
int daemonize() {
  int pipefd[2];
  if (pipe(pipefd) != 0) return -1;
  pid_t pid = fork();
  if (pid < 0) return -1;
  if (pid > 0) {
    // The daemon sends a status byte, then on failure why, for our stderr.
    close(pipefd[1]);
    std::string said;
    char buf[512];
    ssize_t n;
    while ((n = read(pipefd[0], buf, sizeof(buf))) != 0) {
      if (n > 0) said.append(buf, static_cast<size_t>(n));
      if (n < 0 && errno != EINTR) break;
    }
    if (said.size() > 1) std::cerr << "memshard: " << said.substr(1) << "\n";
    _exit(said.empty() ? 1 : said[0]);  // nothing said: the daemon died first
  }
  close(pipefd[0]);
  if (setsid() < 0) return -1;
  pid = fork();  // never reacquire a controlling terminal
  if (pid < 0) return -1;
  if (pid > 0) _exit(0);
  if (chdir("/") != 0) return -1;
  int fd = open("/dev/null", O_RDWR);
  if (fd >= 0) {
    dup2(fd, STDIN_FILENO);
    dup2(fd, STDOUT_FILENO);
    dup2(fd, STDERR_FILENO);
    if (fd > STDERR_FILENO) close(fd);
  }
  return pipefd[1];
}

void report_ready(int& ready_fd, char status, const std::string& why = "") {
  if (ready_fd < 0) return;
  std::string message = status + why;
  (void)!write(ready_fd, message.data(), message.size());
  close(ready_fd);
  ready_fd = -1;
}

bool write_pid_file(const std::string& path) {
  std::ofstream f(path);
  f << getpid() << "\n";
  f.close();
  return !f.fail();
}

// glibc gives the free memory at the top of a heap back to the kernel as
// soon as it passes 128 KiB (madvise in the workers' arenas), and the next
// burst of buffers faults every page back in, zero-filled. A proxy's
// working set swings by far more than that between two loop iterations:
// with 16 KiB values, after a workload with large multi-gets, memshard
// took more than one page fault per request (perf stat), nutcracker none,
// since it keeps its buffers. So keep up to 16 MiB free per heap, and serve
// blocks up to 4 MiB (a value and its buffers) from the heaps rather than
// from mmap (setting the first turns off glibc's adaptive mmap threshold).
void keep_freed_memory() {
  mallopt(M_TRIM_THRESHOLD, 16 << 20);
  mallopt(M_MMAP_THRESHOLD, 4 << 20);
}

// A proxy holds a descriptor per client, and Debian's default soft limit
// (1024) is far below what one in front of a fleet's clients needs; the
// hard limit, set by the operator or the service manager, is what they
// allow. memcached raises its own limit to fit its -c; memshard takes the
// hard limit. (Past it, clients are refused with memcached's "ERROR Too
// many open connections": see accept_guard.h.)
void raise_descriptor_limit() {
  rlimit rl{};
  if (getrlimit(RLIMIT_NOFILE, &rl) != 0 || rl.rlim_cur >= rl.rlim_max) return;
  const rlim_t was = rl.rlim_cur;
  rl.rlim_cur = rl.rlim_max;
  if (setrlimit(RLIMIT_NOFILE, &rl) != 0) {
    // An unlimited hard limit still stops at the kernel's fs.nr_open.
    unsigned long long nr_open = 0;
    std::ifstream f("/proc/sys/fs/nr_open");
    if (!(f >> nr_open) || nr_open <= was) return;
    rl.rlim_cur = static_cast<rlim_t>(nr_open);
    if (setrlimit(RLIMIT_NOFILE, &rl) != 0) return;
  }
  log_notice("descriptor limit raised from %llu to %llu", static_cast<unsigned long long>(was),
             static_cast<unsigned long long>(rl.rlim_cur));
}

}  // namespace

int main(int argc, char** argv) {
  memshard::proxy::event_memory::install();  // before anything allocates through libevent
  keep_freed_memory();
  // A reload signal sent while starting must not kill us (its default
  // action); the running proxy installs its handler.
  std::signal(SIGHUP, SIG_IGN);
  CLI::App app{"memshard: a memcached proxy that shards keys over a fleet with ketama"};
  app.set_version_flag("-V,--version", "memshard " MEMSHARD_VERSION);

  std::string conf_file = "conf/nutcracker.yml";
  bool test_conf = false, daemon = false;
  std::string pid_file, log_file, stats_addr = "127.0.0.1";
  int verbosity = 5, stats_port = 22222, stats_interval = 30000, threads = 0;
  size_t mbuf_size = 16384;
  app.add_option("-c,--conf-file", conf_file, "configuration file")->capture_default_str();
  app.add_flag("-t,--test-conf", test_conf, "check the configuration file and exit");
  memshard::conf::LoadOptions load_options;
  app.add_option("--listen", load_options.listen,
                 "with mcrouter's JSON config, which has no listen address: where to listen, "
                 "HOST:PORT (what mcrouter's -p gave)");
  app.add_flag("-d,--daemonize", daemon, "run as a daemon");
  app.add_option("-p,--pid-file", pid_file, "write the process id to this file");
  app.add_option("-o,--output", log_file, "log to this file instead of stderr");
  app.add_option("-v,--verbose", verbosity, "log level, nutcracker's scale 0..11")
      ->capture_default_str();
  app.add_option("-s,--stats-port", stats_port, "stats port (JSON; HTTP /metrics); 0 turns it off")
      ->capture_default_str();
  app.add_option("-a,--stats-addr", stats_addr, "stats address")->capture_default_str();
  app.add_option("-i,--stats-interval", stats_interval, "stats aggregation interval (ms)")
      ->capture_default_str();
  app.add_option("-m,--mbuf-size", mbuf_size, "accepted for nutcracker compatibility; unused");
  app.add_option("--threads", threads,
                 "worker threads at most (default: one per CPU this process may run on); as "
                 "many take connections as keep up with the load");
  bool fixed_threads = false;
  app.add_flag("--fixed-threads", fixed_threads,
               "every worker thread takes connections all the time, whatever the load");
  bool watch = false;
  app.add_flag("--watch", watch, "reload when the configuration file changes (no SIGHUP needed)");
  int drain_timeout_ms = 10000;
  app.add_option("--drain-timeout", drain_timeout_ms,
                 "on SIGTERM/SIGINT, ms to let requests in flight finish")
      ->capture_default_str();

  int park_after_ms = 1000;
  app.add_option("--park-after", park_after_ms,
                 "ms a client connection must be idle before it is parked: held as a bare "
                 "socket, its memory freed until it speaks again; 0 never parks")
      ->capture_default_str()
      ->check(CLI::NonNegativeNumber);
  bool no_io_uring = false;
  app.add_flag("--no-io-uring", no_io_uring,
               "read and write each socket with its own system call, rather than all the reads, "
               "then all the writes, of an event loop iteration in one io_uring submission each "
               "(the default, when the kernel allows io_uring)");
  std::string stats_token_file;
  app.add_option("--stats-token-file", stats_token_file,
                 "a file holding the stats token: every HTTP request on the stats port must "
                 "then carry it (Authorization: Bearer TOKEN, or as a browser's password); "
                 "over the config's stats_token and stats_token_file, and read again at every "
                 "reload");
  std::vector<std::string> dns_servers;
  app.add_option("--dns-server", dns_servers,
                 "the DNS server (IP:PORT, [IPv6]:PORT or IP) that looks up the pools' "
                 "servers_srv and servers_dns; repeatable, tried in turn; without it, those of "
                 "/etc/resolv.conf")
      ->check([](const std::string& v) { return memshard::proxy::check_dns_server(v); });
  memshard::proxy::TopOptions top_options;
  CLI::App* top = app.add_subcommand(
      "top", "a live view of a running memshard's status page numbers, in the terminal");
  top->add_option("-s,--stats", top_options.server, "the instance's stats port, HOST:PORT")
      ->capture_default_str();
  top->add_option("--token-file", top_options.token_file,
                  "a file holding the stats token, when the port needs one");
  top->add_option("-n,--interval", top_options.interval_s, "seconds between refreshes")
      ->capture_default_str();
  top->add_flag("--once", top_options.once, "print one frame (rates over one interval) and exit");
  std::string convert_file, convert_listen;
  CLI::App* convert_cmd = app.add_subcommand(
      "convert", "print mcrouter's JSON config as memshard's YAML (docs/mcrouter.md)");
  convert_cmd->add_option("file", convert_file, "mcrouter's config")->required();
  convert_cmd->add_option("--listen", convert_listen,
                          "the address the YAML listens on, HOST:PORT (default 127.0.0.1:5000, "
                          "marked to change)");
  CLI::App* ring = app.add_subcommand("ring", "inspect the rings a configuration builds");
  ring->require_subcommand(1);
  std::string ring_conf, ring_pool, diff_old, diff_new;
  std::vector<std::string> keys;
  CLI::App* lookup = ring->add_subcommand("lookup", "print the server of each key (args or stdin)");
  lookup->add_option("-c,--conf-file", ring_conf, "configuration file")->required();
  lookup->add_option("--pool", ring_pool, "pool name (needed when the file has several)");
  lookup->add_option("keys", keys, "keys; read one per line from stdin when none");
  bool lookup_all = false;
  lookup->add_flag("--all", lookup_all,
                   "print each key's whole preference list (the pool's replicas), first copy "
                   "first");
  CLI::App* show =
      ring->add_subcommand("show", "per server: ring name, weight, points, share (and of copies)");
  show->add_option("-c,--conf-file", ring_conf, "configuration file")->required();
  show->add_option("--pool", ring_pool, "pool name (needed when the file has several)");
  std::vector<std::string> load_hashes;
  CLI::App* load =
      ring->add_subcommand("load", "how sample keys from stdin spread, with this and other hashes");
  load->add_option("-c,--conf-file", ring_conf, "configuration file")->required();
  load->add_option("--pool", ring_pool, "pool name (needed when the file has several)");
  load->add_option("--hash", load_hashes,
                   "hash to compare with the pool's (repeatable; default md5, jenkins, murmur, "
                   "one_at_a_time)");
  CLI::App* diff = ring->add_subcommand(
      "diff", "how much of the keyspace (and of the copies) moves from OLD to NEW");
  diff->add_option("old", diff_old, "configuration in force")->required();
  diff->add_option("new", diff_new, "configuration to compare")->required();
  diff->add_option("--pool", ring_pool, "pool name (needed when the files have several)");

  CLI11_PARSE(app, argc, argv);

  if (*top) return memshard::proxy::run_top(top_options, std::cout, std::cerr);
  if (*convert_cmd) return convert(convert_file, convert_listen);
  if (*lookup)
    return memshard::proxy::ring_lookup(ring_conf, ring_pool, keys, lookup_all, std::cin, std::cout,
                                        std::cerr);
  if (*show) return memshard::proxy::ring_show(ring_conf, ring_pool, std::cout, std::cerr);
  if (*load)
    return memshard::proxy::ring_load(ring_conf, ring_pool, load_hashes, std::cin, std::cout,
                                      std::cerr);
  if (*diff) return memshard::proxy::ring_diff(diff_old, diff_new, ring_pool, std::cout, std::cerr);
  if (test_conf) return test_config(conf_file, load_options);
  if (load_options.listen.empty() && is_mcrouter_file(conf_file)) {
    std::cerr << "memshard: '" << conf_file
              << "' is mcrouter's config, which has no listen address: give --listen HOST:PORT "
                 "(mcrouter's -p)\n";
    return 1;
  }

  memshard::proxy::log_set_level(level_from_nutcracker(verbosity));
  if (!log_file.empty() && !memshard::proxy::log_open(log_file)) {
    std::cerr << "memshard: cannot open log file '" << log_file << "'\n";
    return 1;
  }
  (void)stats_interval;  // counters are summed when read: there is nothing to aggregate
  if (stats_port < 0 || stats_port > 65535) {
    std::cerr << "memshard: --stats-port must be 0 (off) to 65535\n";
    return 1;
  }
  // Read before daemonizing, so that a missing or bad file is said on the
  // terminal, as a bad config is. Read again at start and every reload.
  if (!stats_token_file.empty()) {
    std::string token, error;
    if (!memshard::proxy::read_stats_token(stats_token_file, token, error)) {
      std::cerr << "memshard: " << error << "\n";
      return 1;
    }
  }
  // Threads and event bases do not survive fork(): daemonize first, after
  // a check of the config so its errors still reach the terminal.
  int ready_fd = -1;
  if (daemon) {
    memshard::conf::LoadResult r = memshard::conf::load_config_file(conf_file, load_options);
    if (!r.errors.empty()) return test_config(conf_file, load_options);
    // The daemon works from "/": keep the files it reads and writes later
    // (on reload, at exit) where the operator named them.
    conf_file = std::filesystem::absolute(conf_file).string();
    if (!pid_file.empty()) pid_file = std::filesystem::absolute(pid_file).string();
    if (!stats_token_file.empty())
      stats_token_file = std::filesystem::absolute(stats_token_file).string();
    ready_fd = daemonize();
    if (ready_fd < 0) {
      std::cerr << "memshard: cannot daemonize: " << strerror(errno) << "\n";
      return 1;
    }
  }
  memshard::proxy::log_capture_libevent();
  raise_descriptor_limit();
  // Once detached, stderr is /dev/null: failures go to the log (-o) too.
  auto fail = [&](const std::string& why) {
    std::cerr << "memshard: " << why << "\n";
    if (daemon) log_error("cannot start: %s", why.c_str());
    report_ready(ready_fd, 1, why);
    return 1;
  };
  try {
    memshard::proxy::Proxy proxy(memshard::proxy::ProxyOptions{
        conf_file, threads, watch, drain_timeout_ms, stats_addr, static_cast<uint16_t>(stats_port),
        park_after_ms, !no_io_uring, fixed_threads, stats_token_file, dns_servers, load_options});
    proxy.start();
    if (!pid_file.empty() && !write_pid_file(pid_file)) {
      return fail("cannot write pid file '" + pid_file + "': " + strerror(errno));
    }
    report_ready(ready_fd, 0);
    int rc = proxy.run();
    if (!pid_file.empty()) unlink(pid_file.c_str());
    return rc;
  } catch (const std::exception& e) {
    return fail(e.what());
  }
}
