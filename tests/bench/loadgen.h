// memshard-load: a memcached text- or binary-protocol load generator for benchmarking
// memshard against nutcracker and memcached itself. Each thread runs its own
// libevent loop over its share of the connections; every value read back is
// verified (see loadgen_value.h); every error is counted and makes the exit
// code non-zero.
#pragma once

#include <netinet/in.h>
#include <sys/socket.h>
#include <sys/types.h>

#include <atomic>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "loadgen_hist.h"

namespace memshard::bench {

struct Options {
  std::string host = "127.0.0.1";
  uint16_t port = 11211;
  int threads = 2;
  int conns = 32;           // busy connections running the workload
  int idle = 0;             // connections that do one get and then stay idle
  bool idle_burst = false;  // idle ones all connect first, then all send their get at once
  int depth = 1;            // requests in flight per busy connection
  double duration = 5.0;    // seconds of measurement (after warmup)
  double warmup = 0.0;      // seconds of load before measuring
  uint64_t requests = 0;    // stop after this many measured requests (0: duration only)
  double timeout = 10.0;    // seconds to wait for replies past the end, and for connects
  uint32_t keys = 10000;
  std::string key_prefix = "memshard-load:";
  std::string tls_ca;  // non-empty: speak TLS to the target, trusting this CA (PEM)
  size_t value_size = 100;
  double get_ratio = 0.9;      // fraction of requests that are gets
  int multiget = 1;            // keys per get
  double zipf = 0;             // > 0: gets pick keys Zipf-distributed with this exponent
  double hot_share = 0;        // this fraction of gets names one key (key 0)
  uint64_t seed = 1;           // value pattern seed
  uint64_t populate_seed = 0;  // 0: same as seed (another value makes every get mismatch)
  size_t populate_size = 0;    // 0: same as value_size
  bool populate = true;
  bool populate_only = false;
  bool allow_misses = false;
  int populate_conns = 0;     // 0: min(max(conns, 4), 32)
  std::vector<int> cpu_pids;  // processes whose CPU time is measured over the run
  bool json = false;
  int max_error_lines = 10;
  // memcached's binary protocol instead of text: GETK (or GETKQ... NOOP for
  // a multi-get) and SET frames.
  bool binary = false;
};

struct Stats {
  Histogram latency;  // measured requests only
  uint64_t gets = 0, sets = 0, keys_read = 0, hits = 0, misses = 0;
  uint64_t mismatches = 0;       // wrong value, length or flags
  uint64_t server_errors = 0;    // ERROR / CLIENT_ERROR / SERVER_ERROR / NOT_STORED...
  uint64_t protocol_errors = 0;  // a reply that cannot be parsed
  uint64_t conn_errors = 0;      // connect failure, reset, close by the server
  uint64_t timeouts = 0;         // requests with no reply by the end
  uint64_t unmeasured = 0;       // completed during warmup / populate
  int64_t last_completion_ns = 0;

  uint64_t errors() const {
    return mismatches + server_errors + protocol_errors + conn_errors + timeouts;
  }
  void merge(const Stats& o);
};

// Which kind of run a phase is.
enum class Phase { populate, measure };

// Shared state between the coordinating thread and the engines of one phase.
struct PhaseControl {
  std::atomic<int64_t> prepare_deadline_ns{0};  // idle connections must have answered by then
  std::atomic<int> engines_prepared{0};         // idle connections all answered (or failed)
  std::atomic<int> idle_failed{0};
  // --idle-burst: engines whose idle connections have all connected (or
  // failed); the coordinator then sets `burst` and every engine sends its
  // idle connections' gets at once.
  std::atomic<int> engines_connected{0};
  std::atomic<bool> burst{false};
  std::atomic<bool> go{false};
  std::atomic<int64_t> measure_start_ns{0};
  std::atomic<int64_t> deadline_ns{0};  // stop sending new requests
  std::atomic<int> engines_drained{0};
  std::atomic<bool> release{false};        // engines may close their connections
  std::atomic<uint64_t> measured_sent{0};  // for --requests
};

struct Target {
  sockaddr_storage addr{};
  socklen_t addr_len = 0;
};

int64_t now_ns();
// Set from signal handlers: stop sending, drain, report.
extern std::atomic<bool> g_interrupted;
// Prints an error line to stderr, up to Options::max_error_lines per process.
void report_error(const Options& o, const char* fmt, ...) __attribute__((format(printf, 2, 3)));

// CPU time of the measured processes, split as /proc/PID/stat splits it:
// user space (utime) and kernel (stime). On a proxy over loopback TCP the
// kernel part is most of it, and it is the part a proxy's own code changes
// least, so the bench shows the two apart.
struct CpuTime {
  double user_seconds = 0;
  double kernel_seconds = 0;
  double total() const { return user_seconds + kernel_seconds; }
};
struct PhaseResult {
  Stats stats;
  std::optional<CpuTime> cpu;  // none when no pid was given or one could not be read
  int64_t window_ns = 0;
};
// Runs one phase over opts.threads threads; returns the merged stats, the
// CPU time opts.cpu_pids spent over the measured window, and that window's
// length.
PhaseResult run_phase(const Options& opts, const Target& target, Phase phase);

}  // namespace memshard::bench
