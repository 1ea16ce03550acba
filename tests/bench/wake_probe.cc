// memshard-wake-probe: what one wake-up costs on this machine.
//
// Why: on the bench's loopback setup, every request a proxy forwards wakes
// four sleepers in turn (proxy, memcached, proxy, client), so a proxy's CPU
// per request is largely the price of those wake-ups, and that price is a
// property of the machine, not of the proxy. On a virtual machine, waking a
// task on another CPU sends an inter-processor interrupt that the
// hypervisor has to carry, and on the bench machine that cost has been seen
// to double from one day to the next. scripts/bench prints this probe's
// figures beside its table, so that ratios taken on different days can be
// read against what the machine charged for a wake-up.
//
// Method: two processes pass one byte back and forth over a pair of pipes,
// each blocking in read() in between, first both pinned to one CPU, then
// pinned to two different CPUs. Each process wakes the other once per
// round trip. Reported per round trip: wall time, and the CPU time
// (utime + stime) the first process spent, which covers one wake-up it
// made and one it received.
//
//   memshard-wake-probe                 # text
//   memshard-wake-probe --json          # one JSON line
//
// Exit code 0 when both measurements ran (the cross-CPU one is skipped,
// and reported as null, when the process may use only one CPU).
#include <sched.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <CLI/CLI.hpp>
#include <cstdio>
#include <optional>
#include <string>
#include <vector>

namespace {

struct Cost {
  double wall_us;  // per round trip
  double cpu_us;   // per round trip, of the first process
};

double now_us(clockid_t clock) {
  timespec ts{};
  clock_gettime(clock, &ts);
  return static_cast<double>(ts.tv_sec) * 1e6 + static_cast<double>(ts.tv_nsec) / 1e3;
}

bool pin(int cpu) {
  cpu_set_t set;
  CPU_ZERO(&set);
  CPU_SET(cpu, &set);
  return sched_setaffinity(0, sizeof(set), &set) == 0;
}

// Both ends write and read whole single bytes: a short or failed transfer
// means the other end is gone.
bool pass(int fd_out, int fd_in) {
  char byte = 0;
  return write(fd_out, &byte, 1) == 1 && read(fd_in, &byte, 1) == 1;
}

std::optional<Cost> ping_pong(int cpu_a, int cpu_b, int round_trips) {
  int there[2], back[2];
  if (pipe(there) != 0) return std::nullopt;
  if (pipe(back) != 0) {
    close(there[0]);
    close(there[1]);
    return std::nullopt;
  }
  pid_t child = fork();
  if (child == 0) {
    close(there[1]);
    close(back[0]);
    if (!pin(cpu_b)) _exit(1);
    char byte = 0;
    while (read(there[0], &byte, 1) == 1)
      if (write(back[1], &byte, 1) != 1) _exit(1);
    _exit(0);
  }
  close(there[0]);
  close(back[1]);
  std::optional<Cost> cost;
  if (child > 0 && pin(cpu_a)) {
    // A few unmeasured round trips: both processes are running and pinned
    // before the clock starts.
    bool ok = true;
    for (int i = 0; i < 100 && ok; ++i) ok = pass(there[1], back[0]);
    double wall0 = now_us(CLOCK_MONOTONIC), cpu0 = now_us(CLOCK_PROCESS_CPUTIME_ID);
    for (int i = 0; i < round_trips && ok; ++i) ok = pass(there[1], back[0]);
    double wall1 = now_us(CLOCK_MONOTONIC), cpu1 = now_us(CLOCK_PROCESS_CPUTIME_ID);
    if (ok) cost = Cost{(wall1 - wall0) / round_trips, (cpu1 - cpu0) / round_trips};
  }
  close(there[1]);  // the child's read sees EOF and it exits
  close(back[0]);
  if (child > 0) waitpid(child, nullptr, 0);
  return cost;
}

std::vector<int> allowed_cpus() {
  std::vector<int> cpus;
  cpu_set_t set;
  CPU_ZERO(&set);
  if (sched_getaffinity(0, sizeof(set), &set) != 0) return cpus;
  for (int c = 0; c < CPU_SETSIZE; ++c)
    if (CPU_ISSET(c, &set)) cpus.push_back(c);
  return cpus;
}

std::string json_cost(const std::optional<Cost>& c) {
  if (!c) return "null";
  char buf[96];
  std::snprintf(buf, sizeof(buf), "{\"wall_us\":%.2f,\"cpu_us\":%.2f}", c->wall_us, c->cpu_us);
  return buf;
}

std::string text_cost(const std::optional<Cost>& c) {
  if (!c) return "not measured";
  char buf[96];
  std::snprintf(buf, sizeof(buf), "%7.2f us of CPU, %7.2f us wall per round trip", c->cpu_us,
                c->wall_us);
  return buf;
}

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{"memshard-wake-probe: what a wake-up costs here, on one CPU and across CPUs"};
  int round_trips = 20000;
  bool json = false;
  app.add_option("-n,--round-trips", round_trips, "round trips per measurement")
      ->check(CLI::Range(100, 10000000));
  app.add_flag("--json", json, "print one JSON line");
  CLI11_PARSE(app, argc, argv);

  std::vector<int> cpus = allowed_cpus();
  if (cpus.empty()) {
    std::fprintf(stderr, "memshard-wake-probe: cannot read this process's CPUs\n");
    return 1;
  }
  std::optional<Cost> same = ping_pong(cpus[0], cpus[0], round_trips);
  std::optional<Cost> cross;
  if (cpus.size() > 1) cross = ping_pong(cpus[0], cpus[1], round_trips);
  const bool ok = same.has_value() && (cpus.size() < 2 || cross.has_value());

  if (json) {
    std::printf("{\"round_trips\":%d,\"same_cpu\":%s,\"cross_cpu\":%s}\n", round_trips,
                json_cost(same).c_str(), json_cost(cross).c_str());
  } else {
    std::printf("one byte back and forth between two processes, %d round trips:\n", round_trips);
    std::printf("  on one CPU:        %s\n", text_cost(same).c_str());
    std::printf("  across two CPUs:   %s\n", text_cost(cross).c_str());
  }
  return ok ? 0 : 1;
}
