// Counters kept per worker and summed when read. Each counter has a single
// writer (its worker thread), so an increment is a plain relaxed load and
// store: no locked instruction and no cache line shared between workers on
// the request path. Readers on other threads see a recent value.
#pragma once

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <iterator>
#include <string_view>

#include "proxy/support/hot_key_tracker.h"

namespace memshard::proxy {

class Counter {
 public:
  void add(uint64_t n = 1) {
    v_.store(v_.load(std::memory_order_relaxed) + n, std::memory_order_relaxed);
  }
  void sub(uint64_t n = 1) {
    v_.store(v_.load(std::memory_order_relaxed) - n, std::memory_order_relaxed);
  }
  uint64_t get() const { return v_.load(std::memory_order_relaxed); }

 private:
  std::atomic<uint64_t> v_{0};
};

// Every per-worker counter, named as memcached's own `stats` names it where
// one exists. One list, so declaring, summing and printing cannot disagree.
#define MEMSHARD_WORKER_COUNTERS(X)                                                      \
  X(curr_connections)                                                                    \
  X(parked_connections) /* gauge: of those, idle ones held as a bare socket */           \
  X(moved_connections)  /* handed to another worker (worker_governor.h) */               \
  X(total_connections)                                                                   \
  X(binary_connections) /* gauge: of curr_connections, those speaking binary */          \
  X(cmd_get)            /* keys requested by get-family commands */                      \
  X(cmd_set)            /* storage commands */                                           \
  X(cmd_other)          /* every other forwarded request */                              \
  X(fragments)          /* backend operations sent */                                    \
  X(forward_error)      /* backend operations failed: unreachable, timeout, bad reply */ \
  X(server_timeouts)    /* backend operations that ran out of time */                    \
  X(client_errors)      /* ERROR / CLIENT_ERROR / SERVER_ERROR given by the proxy */     \
  X(binary_requests)    /* of all requests, binary-protocol frames */

#define MEMSHARD_DECLARE_COUNTER(name) Counter name;
#define MEMSHARD_VISIT_COUNTER(name) f(#name, name);

struct WorkerStats {
  MEMSHARD_WORKER_COUNTERS(MEMSHARD_DECLARE_COUNTER)

  // Calls f(name, counter) for every counter.
  template <typename F>
  void for_each(F&& f) const {
    MEMSHARD_WORKER_COUNTERS(MEMSHARD_VISIT_COUNTER)
  }
};

// Per pool, per worker. Names are twemproxy's where it has them.
#define MEMSHARD_POOL_COUNTERS(X)                                                     \
  X(client_eof)             /* clients that closed their connection */                \
  X(client_err)             /* client connections closed on an error */               \
  X(client_foreign)         /* closed for speaking HTTP, or TLS to plain */           \
  X(client_connections)     /* gauge: open client connections */                      \
  X(forward_error)          /* backend operations failed */                           \
  X(fragments)              /* backend operations sent */                             \
  X(requests)               /* client requests answered, or routed here */            \
  X(replica_writes)         /* writes sent to copies after a key's first */           \
  X(replica_write_failures) /* of those, answered with an error */                    \
  X(read_failovers)         /* reads tried again on a key's next copy */              \
  X(hot_key_hits)           /* reads answered from the hot-key cache */               \
  X(read_repairs)           /* values written back to a copy that missed them */      \
  X(warmup_lookups)         /* moved keys missed and asked of an old server */        \
  X(warmup_hits)            /* of those, found there */                               \
  X(warmup_copies)          /* values copied to their new server (stored) */          \
  X(warmup_invalidations)   /* old copies deleted by a write of a moved key */        \
  X(switch_fallback_reads)  /* reads of moved keys asked of their other servers       \
                               around a scheduled switch (reload_switch_at) */        \
  X(switch_future_deletes)  /* deletes sent to a key's future server before its       \
                               switch, by writes of it */                             \
  X(gutter_requests)        /* requests of a down server's keys sent to the gutter */ \
  X(gutter_sets)            /* of those, writes (stored with gutter_ttl at most) */

// TLS clients (tls_cert_file): handshakes done, by version, and failed, by
// cause (proxy/transport/tls_link.h, TlsFailure, in its order). Pool
// counters too, listed after MEMSHARD_POOL_COUNTERS.
#define MEMSHARD_POOL_TLS_COUNTERS(X)                                      \
  X(tls_handshakes)       /* TLS client handshakes completed */            \
  X(tls_resumed)          /* of those, resuming an earlier session */      \
  X(tls_1_2)              /* of those, TLS 1.2 */                          \
  X(tls_1_3)              /* of those, TLS 1.3 */                          \
  X(tls_fail_not_tls)     /* failed: plaintext or garbage on a TLS port */ \
  X(tls_fail_certificate) /* failed: no, untrusted or bad certificate */   \
  X(tls_fail_version)     /* failed: no common protocol version */         \
  X(tls_fail_timeout)     /* failed: not finished within timeout */        \
  X(tls_fail_closed)      /* failed: the client left mid-handshake */      \
  X(tls_fail_other)

// Per pool and server, per worker.
#define MEMSHARD_SERVER_COUNTERS(X)                                                   \
  X(server_eof)         /* the server closed the connection */                        \
  X(server_err)         /* connect errors, resets, invalid replies */                 \
  X(server_timedout)    /* operations that ran out of `timeout` */                    \
  X(server_connections) /* gauge: open connections */                                 \
  X(requests)           /* operations sent */                                         \
  X(requests_joined)    /* of those, sent on the line of the one before */            \
  X(requests_shed)      /* refused at once: server_queue_limit requests waiting */    \
  X(request_bytes)                                                                    \
  X(responses) /* operations answered */                                              \
  X(response_bytes)                                                                   \
  X(out_queue)              /* gauge: operations sent and not yet answered */         \
  X(out_queue_bytes)        /* gauge: their request bytes */                          \
  X(replies_hit)            /* VALUE / VA */                                          \
  X(replies_miss)           /* a key asked and not returned; EN */                    \
  X(replies_stored)         /* STORED / HD after a set */                             \
  X(replies_not_stored)     /* NOT_STORED / NS */                                     \
  X(replies_exists)         /* EXISTS / EX */                                         \
  X(replies_not_found)      /* NOT_FOUND / NF */                                      \
  X(replies_error)          /* ERROR / CLIENT_ERROR / SERVER_ERROR from the server */ \
  X(replies_other)          /* everything else: DELETED, TOUCHED, numbers, OK, MN */  \
  X(replica_writes)         /* writes it got as a copy after a key's first */         \
  X(replica_write_failures) /* of those, failed */                                    \
  X(read_failovers)         /* reads that went on from it to a key's next copy */     \
  X(read_repairs)           /* values written back to it after it missed them */      \
  X(tls_handshakes)         /* server_tls: handshakes completed */                    \
  X(tls_failures)           /* server_tls: handshakes failed */

// Request latency buckets (upper bounds, microseconds), for the
// Prometheus histogram: from a fast loopback hit to a slow timeout.
inline constexpr uint64_t kLatencyBucketsUsec[] = {50,     100,    250,    500,     1000,
                                                   2500,   5000,   10000,  25000,   50000,
                                                   100000, 250000, 500000, 1000000, 2500000};
inline constexpr size_t kLatencyBuckets = std::size(kLatencyBucketsUsec) + 1;  // + Inf

struct PoolStats {
  MEMSHARD_POOL_COUNTERS(MEMSHARD_DECLARE_COUNTER)
  MEMSHARD_POOL_TLS_COUNTERS(MEMSHARD_DECLARE_COUNTER)
  // Non-cumulative per-bucket counts; the renderer accumulates them.
  Counter latency_bucket[kLatencyBuckets];
  Counter latency_sum_usec;
  HotKeyTracker hot_keys;  // the keys this worker forwards most

  template <typename F>
  void for_each(F&& f) const {
    MEMSHARD_POOL_COUNTERS(MEMSHARD_VISIT_COUNTER)
    MEMSHARD_POOL_TLS_COUNTERS(MEMSHARD_VISIT_COUNTER)
  }
  void record_latency(uint64_t usec) {
    size_t b = 0;
    while (b < std::size(kLatencyBucketsUsec) && usec > kLatencyBucketsUsec[b]) ++b;
    latency_bucket[b].add();
    latency_sum_usec.add(usec);
  }
};

struct ServerStats {
  MEMSHARD_SERVER_COUNTERS(MEMSHARD_DECLARE_COUNTER)

  template <typename F>
  void for_each(F&& f) const {
    MEMSHARD_SERVER_COUNTERS(MEMSHARD_VISIT_COUNTER)
  }
};

// Per route of a routing pool (docs/routing.md), per worker.
#define MEMSHARD_ROUTE_COUNTERS(X)                                                   \
  X(requests)       /* requests routed (a multi-get once per route it reaches) */    \
  X(hits)           /* keys read and found */                                        \
  X(misses)         /* keys read and not found */                                    \
  X(errors)         /* requests answered with an error */                            \
  X(shadow_sent)    /* copies sent to the shadow pool */                             \
  X(shadow_dropped) /* copies not sent: the shadow's queue was full */               \
  X(shadow_failed)  /* copies the shadow pool answered with an error */              \
  X(warm_lookups)   /* warm_from: keys missed on the route's pool, looked up warm */ \
  X(warm_hits)      /* warm_from: keys found in the warm pool */                     \
  X(warm_copies)    /* warm_from: hits copied to the route's pool (stored) */        \
  X(blackholed)     /* blackhole: requests the route answered itself */

struct RouteStats {
  MEMSHARD_ROUTE_COUNTERS(MEMSHARD_DECLARE_COUNTER)

  template <typename F>
  void for_each(F&& f) const {
    MEMSHARD_ROUTE_COUNTERS(MEMSHARD_VISIT_COUNTER)
  }
};

#undef MEMSHARD_DECLARE_COUNTER
#undef MEMSHARD_VISIT_COUNTER

// The counters' names, in declaration order (the order of StatsSnapshot's
// vectors).
#define MEMSHARD_COUNTER_NAME(name) #name,
inline constexpr std::string_view kPoolCounterNames[] = {
    MEMSHARD_POOL_COUNTERS(MEMSHARD_COUNTER_NAME)  //
    MEMSHARD_POOL_TLS_COUNTERS(MEMSHARD_COUNTER_NAME)};
inline constexpr std::string_view kServerCounterNames[] = {
    MEMSHARD_SERVER_COUNTERS(MEMSHARD_COUNTER_NAME)};
inline constexpr std::string_view kRouteCounterNames[] = {
    MEMSHARD_ROUTE_COUNTERS(MEMSHARD_COUNTER_NAME)};
#undef MEMSHARD_COUNTER_NAME

}  // namespace memshard::proxy
