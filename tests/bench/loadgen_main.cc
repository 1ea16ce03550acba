// memshard-load: command line, phases and the report.
//
//   memshard-load -p 22122 --conns 32 --duration 5                # 90/10 get/set, 100-byte values
//   memshard-load -p 22122 --multiget 100 --get-ratio 1 --json    # one JSON line on stdout
//   memshard-load -p 22122 --idle 1000 --conns 4   # busy traffic among 1000 idle connections
//   memshard-load -p 22122 --idle 10000 --conns 0 --duration 60   # hold 10000 idle connections
//   memshard-load -p 22122 --idle 10000 --conns 0 --idle-burst    # ... gets sent all at once
// (--conns 0: held until --duration ends or SIGUSR1.)
//
// Exit code: 0 when every request got the right answer; 1 when any error,
// wrong value, unexpected miss or connection failure was seen; 2 on bad usage.
#include <netdb.h>
#include <signal.h>
#include <sys/resource.h>
#include <sys/un.h>

#include <CLI/CLI.hpp>
#include <cstdio>
#include <cstring>
#include <string>

#include "loadgen.h"

namespace {

using memshard::bench::Options;
using memshard::bench::Phase;
using memshard::bench::PhaseResult;
using memshard::bench::Stats;
using memshard::bench::Target;

void on_signal(int) {
  memshard::bench::g_interrupted.store(true);
}

bool resolve(const Options& o, const std::string& unix_path, Target& t) {
  if (!unix_path.empty()) {
    sockaddr_un sun{};
    sun.sun_family = AF_UNIX;
    if (unix_path.size() >= sizeof sun.sun_path) return false;
    std::memcpy(sun.sun_path, unix_path.c_str(), unix_path.size() + 1);
    std::memcpy(&t.addr, &sun, sizeof sun);
    t.addr_len = sizeof sun;
    return true;
  }
  addrinfo hints{};
  hints.ai_socktype = SOCK_STREAM;
  addrinfo* res = nullptr;
  if (getaddrinfo(o.host.c_str(), std::to_string(o.port).c_str(), &hints, &res) != 0 || !res)
    return false;
  std::memcpy(&t.addr, res->ai_addr, res->ai_addrlen);
  t.addr_len = res->ai_addrlen;
  freeaddrinfo(res);
  return true;
}

double us(uint64_t ns) {
  return static_cast<double>(ns) / 1000.0;
}

bool failed(const Options& o, const Stats& s) {
  return s.errors() > 0 || (!o.allow_misses && s.misses > 0);
}

void print_text(FILE* f, const Options& o, const std::string& where, const PhaseResult& r) {
  const Stats& s = r.stats;
  double secs = static_cast<double>(r.window_ns) / 1e9;
  uint64_t n = s.latency.total();
  double rps = secs > 0 ? static_cast<double>(n) / secs : 0;
  std::fprintf(f,
               "memshard-load: %s %s conns=%d idle=%d%s threads=%d depth=%d keys=%u value=%zu "
               "get=%.2f multiget=%d\n",
               where.c_str(), o.binary ? "binary" : "text", o.conns, o.idle,
               o.idle_burst ? " (burst)" : "", o.threads, o.depth, o.keys, o.value_size,
               o.get_ratio, o.multiget);
  std::fprintf(f, "  requests %llu (gets %llu, sets %llu) in %.2f s: %.0f req/s, %.0f keys/s\n",
               static_cast<unsigned long long>(n), static_cast<unsigned long long>(s.gets),
               static_cast<unsigned long long>(s.sets), secs, rps,
               secs > 0 ? static_cast<double>(s.keys_read) / secs : 0.0);
  std::fprintf(f, "  latency us: p50 %.1f  p90 %.1f  p99 %.1f  p99.9 %.1f  max %.1f  mean %.1f\n",
               us(s.latency.quantile(0.5)), us(s.latency.quantile(0.9)),
               us(s.latency.quantile(0.99)), us(s.latency.quantile(0.999)), us(s.latency.max()),
               s.latency.mean() / 1000.0);
  if (r.cpu) {
    std::fprintf(f, "  cpu of pid(s): %.2f s (user %.2f, kernel %.2f), %.2f us/request\n",
                 r.cpu->total(), r.cpu->user_seconds, r.cpu->kernel_seconds,
                 n ? r.cpu->total() * 1e6 / static_cast<double>(n) : 0.0);
  }
  std::fprintf(
      f,
      "  hits %llu  misses %llu  errors %llu (mismatches %llu, server %llu, protocol %llu, "
      "connection %llu, timeouts %llu)%s\n",
      static_cast<unsigned long long>(s.hits), static_cast<unsigned long long>(s.misses),
      static_cast<unsigned long long>(s.errors()), static_cast<unsigned long long>(s.mismatches),
      static_cast<unsigned long long>(s.server_errors),
      static_cast<unsigned long long>(s.protocol_errors),
      static_cast<unsigned long long>(s.conn_errors), static_cast<unsigned long long>(s.timeouts),
      failed(o, s) ? "  FAILED" : "");
}

void print_json(const Options& o, const std::string& where, const PhaseResult& r) {
  const Stats& s = r.stats;
  double secs = static_cast<double>(r.window_ns) / 1e9;
  uint64_t n = s.latency.total();
  auto ull = [](uint64_t v) { return static_cast<unsigned long long>(v); };
  std::printf(
      "{\"target\":\"%s\",\"protocol\":\"%s\",\"conns\":%d,\"idle\":%d,\"idle_burst\":%s,"
      "\"threads\":%d,"
      "\"depth\":%d,\"keys\":%u,"
      "\"value_size\":%zu,\"get_ratio\":%.3f,\"multiget\":%d,\"seconds\":%.4f,\"requests\":%llu,"
      "\"gets\":%llu,\"sets\":%llu,\"keys_read\":%llu,\"rps\":%.1f,\"keys_per_s\":%.1f,"
      "\"p50_us\":%.2f,\"p90_us\":%.2f,\"p99_us\":%.2f,\"p999_us\":%.2f,\"max_us\":%.2f,\"mean_"
      "us\":%.2f,"
      "\"cpu_s\":%.4f,\"cpu_us_per_req\":%.4f,\"cpu_user_s\":%.4f,\"cpu_kernel_s\":%.4f,"
      "\"hits\":%llu,\"misses\":%llu,\"errors\":%llu,"
      "\"mismatches\":%llu,\"server_errors\":%llu,\"protocol_errors\":%llu,\"conn_errors\":%llu,"
      "\"timeouts\":%llu,\"ok\":%s}\n",
      where.c_str(), o.binary ? "binary" : "text", o.conns, o.idle, o.idle_burst ? "true" : "false",
      o.threads, o.depth, o.keys, o.value_size, o.get_ratio, o.multiget, secs, ull(n), ull(s.gets),
      ull(s.sets), ull(s.keys_read), secs > 0 ? static_cast<double>(n) / secs : 0.0,
      secs > 0 ? static_cast<double>(s.keys_read) / secs : 0.0, us(s.latency.quantile(0.5)),
      us(s.latency.quantile(0.9)), us(s.latency.quantile(0.99)), us(s.latency.quantile(0.999)),
      us(s.latency.max()), s.latency.mean() / 1000.0, r.cpu ? r.cpu->total() : -1.0,
      r.cpu && n ? r.cpu->total() * 1e6 / static_cast<double>(n) : -1.0,
      r.cpu ? r.cpu->user_seconds : -1.0, r.cpu ? r.cpu->kernel_seconds : -1.0, ull(s.hits),
      ull(s.misses), ull(s.errors()), ull(s.mismatches), ull(s.server_errors),
      ull(s.protocol_errors), ull(s.conn_errors), ull(s.timeouts), failed(o, s) ? "false" : "true");
  std::fflush(stdout);
}

}  // namespace

int main(int argc, char** argv) {
  Options o;
  std::string unix_path;
  bool no_populate = false;
  CLI::App app{
      "memshard-load: memcached text- or binary-protocol load generator; every value read back is "
      "verified.\n"
      "Exit code 0 only when every request got the right answer."};
  app.add_option("-H,--host", o.host, "server address")->capture_default_str();
  app.add_option("-p,--port", o.port, "server port")->capture_default_str();
  app.add_option("--unix", unix_path, "connect to this unix socket instead of host:port");
  app.add_option("-t,--threads", o.threads, "threads, each with its own event loop")
      ->capture_default_str()
      ->check(CLI::Range(1, 64));
  app.add_option("-c,--conns", o.conns, "busy connections running the workload")
      ->capture_default_str()
      ->check(CLI::Range(0, 100000));
  app.add_option(
         "--idle", o.idle,
         "mostly idle connections: each connects, does one get, then idles while the busy ones run")
      ->capture_default_str()
      ->check(CLI::Range(0, 100000));
  app.add_flag(
      "--idle-burst", o.idle_burst,
      "idle connections all connect first (at most 64 connects in flight per thread), "
      "then all send their get at once, so that every one is in flight together "
      "(default: each sends as soon as it has connected, at most 64 per thread at a time)");
  app.add_option("-d,--depth", o.depth, "pipeline depth: requests in flight per busy connection")
      ->capture_default_str()
      ->check(CLI::Range(1, 4096));
  app.add_option("-D,--duration", o.duration,
                 "seconds of measurement (the run always ends by then)")
      ->capture_default_str()
      ->check(CLI::Range(0.0, 86400.0));
  app.add_option("--warmup", o.warmup, "seconds of unmeasured load before the measurement")
      ->capture_default_str()
      ->check(CLI::Range(0.0, 3600.0));
  app.add_option("-n,--requests", o.requests,
                 "stop after this many measured requests (0: duration only)")
      ->capture_default_str();
  app.add_option("--timeout", o.timeout,
                 "seconds to wait for outstanding replies at the end, and for connects")
      ->capture_default_str()
      ->check(CLI::Range(0.1, 600.0));
  app.add_option("-k,--keys", o.keys, "number of distinct keys")
      ->capture_default_str()
      ->check(CLI::Range(1u, 100000000u));
  app.add_option("--tls-ca", o.tls_ca, "speak TLS, trusting this CA file (PEM)");
  app.add_option("--key-prefix", o.key_prefix, "key prefix (keys are prefix + index)")
      ->capture_default_str();
  app.add_option("-s,--value-size", o.value_size, "value size in bytes")
      ->capture_default_str()
      ->check(CLI::Range(size_t{0}, size_t{64} << 20));
  app.add_option("-g,--get-ratio", o.get_ratio,
                 "fraction of requests that are gets (the rest are sets)")
      ->capture_default_str()
      ->check(CLI::Range(0.0, 1.0));
  app.add_option("-m,--multiget", o.multiget, "keys per get")
      ->capture_default_str()
      ->check(CLI::Range(1, 10000));
  app.add_option("--zipf", o.zipf,
                 "gets pick keys Zipf-distributed with this exponent (0: uniform)")
      ->check(CLI::Range(0.0, 10.0));
  app.add_option("--hot-share", o.hot_share,
                 "this fraction of gets names one key, the first (0: none)")
      ->check(CLI::Range(0.0, 1.0));
  app.add_option("--seed", o.seed,
                 "value pattern seed (values are derived from seed, key and size)")
      ->capture_default_str()
      ->check(CLI::Range(uint64_t{1}, std::numeric_limits<uint64_t>::max()));
  app.add_option(
      "--populate-seed", o.populate_seed,
      "seed for the pre-population only (for testing the checker: another seed makes every get a "
      "mismatch)");
  app.add_option("--populate-size", o.populate_size,
                 "value size for the pre-population only (for testing the checker)");
  app.add_option("--populate-conns", o.populate_conns,
                 "connections for the pre-population (0: automatic)");
  app.add_flag("--no-populate", no_populate, "do not set every key before measuring");
  app.add_flag("--populate-only", o.populate_only, "set every key and exit");
  app.add_flag("--allow-misses", o.allow_misses,
               "a get miss is not an error (default: it is, keys are populated)");
  app.add_option("--cpu-pid", o.cpu_pids,
                 "report the CPU time (utime+stime) these processes spent during the "
                 "measurement (repeatable)");
  std::string protocol = "text";
  app.add_option("--protocol", protocol,
                 "text, or binary: GETK frames for gets (GETKQ for each key then NOOP for a "
                 "multi-get) and SET frames for sets")
      ->capture_default_str()
      ->check(CLI::IsMember({"text", "binary"}));
  app.add_flag("--json", o.json, "print one JSON line on stdout (the human report goes to stderr)");
  app.add_option("--max-error-lines", o.max_error_lines, "errors printed (all are counted)")
      ->capture_default_str();
  CLI11_PARSE(app, argc, argv);
  o.populate = !no_populate;
  o.binary = protocol == "binary";
  if (o.multiget > 1 && static_cast<uint32_t>(o.multiget) > o.keys) {
    std::fprintf(stderr, "memshard-load: --multiget cannot exceed --keys\n");
    return 2;
  }
  if (o.key_prefix.size() > 200) {
    std::fprintf(stderr, "memshard-load: --key-prefix too long\n");
    return 2;
  }

  Target target;
  if (!resolve(o, unix_path, target)) {
    std::fprintf(stderr, "memshard-load: cannot resolve %s:%u\n", o.host.c_str(), o.port);
    return 2;
  }
  std::string where = unix_path.empty() ? o.host + ":" + std::to_string(o.port) : unix_path;

  // Enough descriptors for every connection.
  rlimit rl{};
  getrlimit(RLIMIT_NOFILE, &rl);
  rlim_t need = static_cast<rlim_t>(o.conns + o.idle + 64 + 32);
  if (rl.rlim_cur < need) {
    rl.rlim_cur = std::min(rl.rlim_max, std::max(need, rl.rlim_cur));
    setrlimit(RLIMIT_NOFILE, &rl);
    getrlimit(RLIMIT_NOFILE, &rl);
    if (rl.rlim_cur < need) {
      std::fprintf(stderr, "memshard-load: need %llu file descriptors, the limit is %llu\n",
                   static_cast<unsigned long long>(need),
                   static_cast<unsigned long long>(rl.rlim_cur));
      return 2;
    }
  }
  signal(SIGPIPE, SIG_IGN);
  struct sigaction sa {};
  sa.sa_handler = on_signal;
  sigemptyset(&sa.sa_mask);
  sigaction(SIGINT, &sa, nullptr);
  sigaction(SIGTERM, &sa, nullptr);
  sigaction(SIGUSR1, &sa, nullptr);

  bool bad = false;
  if (o.populate || o.populate_only) {
    PhaseResult p = memshard::bench::run_phase(o, target, Phase::populate);
    const Stats& s = p.stats;
    std::fprintf(stderr, "memshard-load: populated %u keys of %zu bytes in %.2f s (%llu errors)\n",
                 o.keys, o.populate_size ? o.populate_size : o.value_size,
                 static_cast<double>(p.window_ns) / 1e9,
                 static_cast<unsigned long long>(s.errors()));
    if (s.errors() > 0 || s.unmeasured < o.keys) {
      std::fprintf(stderr, "memshard-load: populating failed (%llu of %u keys stored)\n",
                   static_cast<unsigned long long>(s.unmeasured), o.keys);
      if (o.json) print_json(o, where, p);
      return 1;
    }
    if (o.populate_only) return 0;
  }
  if (memshard::bench::g_interrupted.load()) return 1;
  PhaseResult r = memshard::bench::run_phase(o, target, Phase::measure);
  bad = failed(o, r.stats);
  print_text(o.json ? stderr : stdout, o, where, r);
  if (o.json) print_json(o, where, r);
  return bad ? 1 : 0;
}
