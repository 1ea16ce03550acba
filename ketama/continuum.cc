#include "ketama/continuum.h"

#include <algorithm>
#include <numeric>
#include <stdexcept>

#include "ketama/point_counts.h"

namespace memshard::ketama::detail {
namespace {

// twemproxy's KETAMA_MAX_HOSTLEN: the size of the buffer the point string is
// printed into, terminating NUL included. The twemproxy sources on GitHub say
// 86, but nutcracker 0.5.0 as released (and packaged by Debian) uses 273
// (256 + ":" + 5 + "-" + 10) and clamps the hashed length to 272: found by
// disassembling /usr/sbin/nutcracker and confirmed against a live nutcracker
// with server names of 20..1030 characters.
constexpr size_t kTwemproxyPointBuffer = 273;
// libmemcached's unweighted ketama: one point per hash call, 100 per server.
constexpr uint32_t kLibmemcachedPlainPoints = 100;
// spymemcached's default node repetitions: 40 digests of 4 points.
constexpr uint32_t kSpymemcachedDigests = 40;

// A point before sorting. `rank` orders equal values: the lower rank is the
// one the original's search finds first.
struct RawPoint {
  uint32_t value;
  uint32_t server;
  uint32_t rank;
};

uint32_t little_endian_word(const unsigned char* p) {
  return static_cast<uint32_t>(p[0]) | (static_cast<uint32_t>(p[1]) << 8) |
         (static_cast<uint32_t>(p[2]) << 16) | (static_cast<uint32_t>(p[3]) << 24);
}

class PointSink {
 public:
  explicit PointSink(size_t servers) : counts_(servers, 0) {}

  void add(uint32_t value, uint32_t server, uint32_t rank) {
    raw_.push_back({value, server, rank});
    ++counts_[server];
  }

  // Ketama's "4 points per hash": the digest's four little-endian words.
  void add_md5_points(std::string_view text, uint32_t server, uint32_t rank) {
    unsigned char digest[16];
    md5_digest(text, digest);
    for (size_t word = 0; word < 4; ++word) {
      add(little_endian_word(digest + 4 * word), server, rank);
    }
  }

  // Sorts; with `keep_one_per_value`, keeps only the first point of each run
  // of equal values (Java's TreeMap.put replaces the earlier node).
  Continuum finish(bool keep_one_per_value) && {
    std::sort(raw_.begin(), raw_.end(), [](const RawPoint& a, const RawPoint& b) {
      return a.value != b.value ? a.value < b.value : a.rank < b.rank;
    });
    Continuum c;
    c.points.reserve(raw_.size());
    for (const RawPoint& p : raw_) {
      if (keep_one_per_value && !c.points.empty() && c.points.back().value == p.value) {
        --counts_[p.server];
        continue;
      }
      c.points.push_back({p.value, p.server});
    }
    c.point_counts = std::move(counts_);
    return c;
  }

 private:
  std::vector<RawPoint> raw_;
  std::vector<size_t> counts_;
};

struct LiveTotals {
  uint32_t servers = 0;
  uint64_t weight = 0;
};

LiveTotals live_totals(const std::vector<ServerEntry>& servers, const std::vector<bool>& live) {
  LiveTotals t;
  for (size_t i = 0; i < servers.size(); ++i) {
    if (live[i]) {
      ++t.servers;
      t.weight += servers[i].weight;
    }
  }
  return t;
}

std::string numbered(const std::string& name, uint32_t k) {
  return name + "-" + std::to_string(k);
}

Continuum build_twemproxy(const std::vector<ServerEntry>& servers,
                          const std::vector<std::string>& names, const std::vector<bool>& live) {
  LiveTotals totals = live_totals(servers, live);
  std::vector<uint32_t> order = twemproxy_order(names);
  PointSink sink(servers.size());
  // Equal points: twemproxy's qsort (glibc's merge sort, stable) keeps them
  // in generation order, which is the sorted server order.
  for (uint32_t rank = 0; rank < order.size(); ++rank) {
    uint32_t i = order[rank];
    if (!live[i]) {
      continue;
    }
    uint32_t points = twemproxy_points(servers[i].weight, totals.weight, totals.servers);
    for (uint32_t k = 0; k < points / 4; ++k) {
      sink.add_md5_points(twemproxy_point_string(names[i], k), i, rank);
    }
  }
  return std::move(sink).finish(false);
}

// libmemcached 1.1 update_continuum(). It is "weighted" (MD5, 4 points per
// digest, 160 per server scaled by weight) in KETAMA_WEIGHTED mode, and also
// in plain KETAMA/SPY mode as soon as any server was added with a weight > 1
// (server_add() flips the flag). Otherwise every server gets 100 points, each
// the pool's key hash of the point string. Equal points: continuum_item_cmp
// orders them by server index.
Continuum build_libmemcached(const std::vector<ServerEntry>& servers,
                             const std::vector<std::string>& names, const std::vector<bool>& live,
                             const RingOptions& options) {
  bool weighted = options.mode == Mode::libmemcached_weighted ||
                  std::any_of(servers.begin(), servers.end(),
                              [](const ServerEntry& s) { return s.weight > 1; });
  LiveTotals totals = live_totals(servers, live);
  PointSink sink(servers.size());
  for (uint32_t i = 0; i < servers.size(); ++i) {
    if (!live[i]) {
      continue;
    }
    if (weighted) {
      uint32_t points =
          libmemcached_weighted_points(servers[i].weight, totals.weight, totals.servers);
      for (uint32_t k = 0; k < points / 4; ++k) {
        sink.add_md5_points(numbered(names[i], k), i, i);
      }
    } else {
      for (uint32_t k = 0; k < kLibmemcachedPlainPoints; ++k) {
        sink.add(hash(options.hash, numbered(names[i], k)), i, i);
      }
    }
  }
  return std::move(sink).finish(false);
}

// last.fm libketama: the weight ("memory") scales the number of digests.
// Equal points stay in file order (glibc's stable qsort).
Continuum build_libketama(const std::vector<ServerEntry>& servers,
                          const std::vector<std::string>& names, const std::vector<bool>& live) {
  LiveTotals totals = live_totals(servers, live);
  PointSink sink(servers.size());
  for (uint32_t i = 0; i < servers.size(); ++i) {
    if (!live[i]) {
      continue;
    }
    uint32_t digests = libketama_digests(servers[i].weight, totals.weight, totals.servers);
    for (uint32_t k = 0; k < digests; ++k) {
      sink.add_md5_points(numbered(names[i], k), i, i);
    }
  }
  return std::move(sink).finish(false);
}

// spymemcached: 160 points per node whatever its weight. Nodes are put into a
// TreeMap in list order, so on equal points the later node is the one kept.
Continuum build_spymemcached(const std::vector<ServerEntry>& servers,
                             const std::vector<std::string>& names, const std::vector<bool>& live) {
  PointSink sink(servers.size());
  auto n = static_cast<uint32_t>(servers.size());
  for (uint32_t i = 0; i < n; ++i) {
    if (!live[i]) {
      continue;
    }
    for (uint32_t k = 0; k < kSpymemcachedDigests; ++k) {
      sink.add_md5_points(numbered(names[i], k), i, n - 1 - i);
    }
  }
  return std::move(sink).finish(true);
}

}  // namespace

std::string twemproxy_point_string(const std::string& name, uint32_t k) {
  std::string text = numbered(name, k);
  // snprintf() into the KETAMA_MAX_HOSTLEN buffer; when the text did not
  // fit, nutcracker logs "Unexpectedly forced to truncate a hostname" and
  // hashes the characters that did (buffer size minus the NUL).
  if (text.size() >= kTwemproxyPointBuffer) {
    text.resize(kTwemproxyPointBuffer - 1);
  }
  return text;
}

std::vector<uint32_t> twemproxy_order(const std::vector<std::string>& names) {
  std::vector<uint32_t> order(names.size());
  std::iota(order.begin(), order.end(), 0u);
  std::stable_sort(order.begin(), order.end(), [&](uint32_t a, uint32_t b) {
    const std::string& x = names[a];
    const std::string& y = names[b];
    if (x.size() != y.size()) {
      return x.size() < y.size();
    }
    // Byte order as strncmp: unsigned bytes. std::string::compare uses
    // char_traits<char>::compare, which compares as unsigned char too.
    return x.compare(y) < 0;
  });
  return order;
}

Continuum build_continuum(const std::vector<ServerEntry>& servers,
                          const std::vector<std::string>& names, const std::vector<bool>& live,
                          const RingOptions& options) {
  switch (options.mode) {
    case Mode::twemproxy:
      return build_twemproxy(servers, names, live);
    case Mode::libmemcached_weighted:
    case Mode::libmemcached:
    case Mode::libmemcached_spy:
      return build_libmemcached(servers, names, live, options);
    case Mode::libketama:
      return build_libketama(servers, names, live);
    case Mode::spymemcached:
      return build_spymemcached(servers, names, live);
  }
  throw std::invalid_argument("unknown ketama mode");
}

}  // namespace memshard::ketama::detail
