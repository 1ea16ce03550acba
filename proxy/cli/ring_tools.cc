#include "proxy/cli/ring_tools.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <functional>
#include <istream>
#include <map>
#include <memory>
#include <numeric>
#include <optional>
#include <ostream>
#include <span>
#include <string>
#include <unordered_map>

#include "conf/config.h"
#include "ketama/analysis.h"
#include "ketama/ring.h"
#include "ketama/sampled_load.h"
#include "proxy/cli/routed_lookup.h"
#include "proxy/cli/sample_keys.h"

namespace memshard::proxy {

namespace {

std::string percent(double fraction) {
  char buf[32];
  snprintf(buf, sizeof(buf), "%.4f%%", fraction * 100.0);
  return buf;
}

std::string fixed4(double x) {
  char buf[32];
  snprintf(buf, sizeof(buf), "%.4f", x);
  return buf;
}

std::optional<conf::Config> load(const std::string& file, std::ostream& err) {
  conf::LoadResult r = conf::load_config_file(file);
  for (const auto& e : r.errors) err << e.to_string() << "\n";
  return r.config;
}

// The pool named, or the only one when no name is given.
const conf::PoolConfig* pick_pool(const conf::Config& c, const std::string& name,
                                  std::ostream& err) {
  if (name.empty()) {
    if (c.pools.size() == 1) return &c.pools.front();
    err << c.file << ": has " << c.pools.size() << " pools; choose one with --pool:";
    for (const auto& p : c.pools) err << " " << p.name;
    err << "\n";
    return nullptr;
  }
  const conf::PoolConfig* p = c.find_pool(name);
  if (p == nullptr) err << c.file << ": no pool named '" << name << "'\n";
  return p;
}

// A pool whose servers come from DNS has none in the file: its ring is
// the running instance's (docs/discovery.md). Null, once said, for one.
const conf::PoolConfig* with_servers(const conf::Config& c, const conf::PoolConfig* p,
                                     std::ostream& err) {
  if (p == nullptr || !p->discovery.enabled()) return p;
  err << c.file << ": pool '" << p->name << "' takes its servers from DNS ("
      << p->discovery.describe()
      << ") and lists none in the file; the running instance shows them (stats, /status)\n";
  return nullptr;
}

// The pool a ring command inspects, with its ring; nullopt once the reason
// it cannot be had is reported.
struct LoadedPool {
  conf::PoolConfig pool;
  ketama::Ring ring;
};

std::optional<LoadedPool> load_pool(const std::string& file, const std::string& name,
                                    std::ostream& err) {
  auto config = load(file, err);
  if (!config) return std::nullopt;
  const conf::PoolConfig* pool = with_servers(*config, pick_pool(*config, name, err), err);
  if (pool == nullptr) return std::nullopt;
  if (pool->routes_keys()) {
    err << config->file << ": pool '" << pool->name
        << "' routes its keys to other pools and has no ring; choose one of those with --pool "
           "(`memshard ring lookup --pool "
        << pool->name << "` names each key's route and pool)\n";
    return std::nullopt;
  }
  return LoadedPool{*pool, ring_of(*pool)};
}

}  // namespace

int ring_lookup(const std::string& config_file, const std::string& pool_name,
                const std::vector<std::string>& keys, bool all, std::istream& in, std::ostream& out,
                std::ostream& err) {
  auto config = load(config_file, err);
  if (!config) return 1;
  const conf::PoolConfig* pool =
      with_servers(*config, pick_pool(*config, pool_name, err), err);
  if (pool == nullptr) return 1;
  std::function<void(const std::string&)> print;
  if (pool->routes_keys()) {
    print = routed_printer(*config, *pool, all, out);
  } else {
    auto ring = std::make_shared<ketama::Ring>(ring_of(*pool));
    print = [ring, replicas = pool->replicas, all, &out](const std::string& key) {
      out << key << '\t' << servers_of(*ring, replicas, key, all) << '\n';
    };
  }
  if (!keys.empty()) {
    for (const auto& k : keys) print(k);
  } else {
    std::string line;
    while (std::getline(in, line)) {
      if (!line.empty() && line.back() == '\r') line.pop_back();
      print(line);
    }
  }
  return 0;
}

namespace {

constexpr uint64_t kHashSpace = uint64_t{1} << 32;

constexpr const char* kExpectedShares =
    "shares: expected for keys that hash independently (mcrouter's hashes pick a server's index "
    "from the key itself, with no ring to measure)";

// Where every copy of the keyspace lives: the hash values in runs that share
// one preference list. ketama: one run per arc (the walk starts at the same
// point for every value of an arc). modula: one run per residue
// hash % slots (run j holds the values v with v % L == j). random: one run
// per slot the random owner may be, each equally likely, so the figures are
// expected fractions of requests. ch3, wch3, crc32: one run per slot (the
// index mcrouter's hash picks), with its server's expected share.
struct CopyMap {
  ketama::Distribution distribution = ketama::Distribution::ketama;
  size_t width = 0;            // copies per key: min(replicas, servers that own a key)
  std::vector<uint32_t> last;  // ketama: each run's last hash value
  std::vector<size_t> lists;   // `width` servers per run, first copy first
  std::vector<double> values;  // hash values per run (expected, for random)

  size_t runs() const { return values.size(); }
  const size_t* list(size_t run) const { return lists.data() + run * width; }
};

// modula and random: the list from slot j is the walk of the slots from j,
// keeping the first `width` distinct servers. The walk from j is slots[j]
// followed by the walk from j + 1 without slots[j], so the lists are built
// backwards from the last slot's, which is walked in full: O(L * width)
// however long the runs of one server are (modula repeats a server `weight`
// times in a row).
void slot_lists(const std::vector<uint32_t>& slots, size_t width, std::vector<size_t>& lists) {
  const size_t length = slots.size();
  lists.assign(length * width, 0);
  size_t* tail = lists.data() + (length - 1) * width;
  size_t filled = 0;
  for (size_t step = 0; step < length && filled < width; ++step) {
    size_t s = slots[(length - 1 + step) % length];
    if (std::find(tail, tail + filled, s) == tail + filled) tail[filled++] = s;
  }
  for (size_t j = length - 1; j-- > 0;) {
    size_t* here = lists.data() + j * width;
    const size_t* next = here + width;
    here[0] = slots[j];
    filled = 1;
    for (size_t i = 0; i < width && filled < width; ++i) {
      if (next[i] != slots[j]) here[filled++] = next[i];
    }
  }
}

CopyMap copy_map(const ketama::Ring& ring, uint32_t replicas) {
  CopyMap m;
  m.distribution = ring.options().distribution;
  if (m.distribution == ketama::Distribution::ketama) {
    std::vector<ketama::Arc> arcs = ring.arcs();
    if (arcs.empty()) return m;
    std::vector<size_t> list(replicas);
    m.width = ring.preference_list_for_hash(arcs.front().last, list);
    list.resize(m.width);
    uint64_t start = 0;
    for (const ketama::Arc& arc : arcs) {
      // Fills all `width` entries: every walk can go round the whole ring.
      ring.preference_list_for_hash(arc.last, list);
      m.last.push_back(arc.last);
      m.lists.insert(m.lists.end(), list.begin(), list.end());
      m.values.push_back(static_cast<double>(uint64_t{arc.last} + 1 - start));
      start = uint64_t{arc.last} + 1;
    }
    return m;
  }
  const std::vector<uint32_t>& slots = ring.slots();
  if (slots.empty()) return m;
  std::vector<uint32_t> distinct(slots);
  std::sort(distinct.begin(), distinct.end());
  distinct.erase(std::unique(distinct.begin(), distinct.end()), distinct.end());
  m.width = std::min<size_t>(replicas, distinct.size());
  slot_lists(slots, m.width, m.lists);
  const uint64_t length = slots.size();
  // mcrouter's hashes: slot j takes the keys its server is expected to own.
  const std::vector<uint64_t> owned = ketama::is_mcrouter_distribution(m.distribution)
                                          ? ring.owned_hashes()
                                          : std::vector<uint64_t>();
  for (uint64_t j = 0; j < length; ++j) {
    m.values.push_back(m.distribution == ketama::Distribution::modula
                           ? static_cast<double>((kHashSpace - 1 - j) / length + 1)
                       : !owned.empty()
                           ? static_cast<double>(owned[slots[j]])
                           : static_cast<double>(kHashSpace) / static_cast<double>(length));
  }
  return m;
}

// Per server: the hash values (of 2^32) whose list holds it.
std::vector<double> held_values(const CopyMap& m, size_t servers) {
  std::vector<double> held(servers, 0.0);
  for (size_t run = 0; run < m.runs(); ++run) {
    for (size_t i = 0; i < m.width; ++i) held[m.list(run)[i]] += m.values[run];
  }
  return held;
}

double coefficient_of_variation(const std::vector<double>& xs) {
  if (xs.empty()) return 0;
  double mean = std::accumulate(xs.begin(), xs.end(), 0.0) / static_cast<double>(xs.size());
  if (mean <= 0) return 0;
  double squares = 0;
  for (double x : xs) squares += (x - mean) * (x - mean);
  return std::sqrt(squares / static_cast<double>(xs.size())) / mean;
}

}  // namespace

int ring_show(const std::string& config_file, const std::string& pool_name, std::ostream& out,
              std::ostream& err) {
  std::optional<LoadedPool> loaded = load_pool(config_file, pool_name, err);
  if (!loaded) return 1;
  const conf::PoolConfig* pool = &loaded->pool;
  const ketama::Ring& ring = loaded->ring;
  ketama::RingReport report = ketama::describe(ring);
  const bool replicated = pool->replicas > 1;
  const bool mcrouter_hash = ketama::is_mcrouter_distribution(pool->ring.distribution);
  out << "pool " << pool->name << ": ";
  if (mcrouter_hash) {
    // No mode and no points: mcrouter's order of the list.
    out << ketama::distribution_name(pool->ring.distribution) << " distribution (mcrouter's), hash "
        << ring.key_hash_name();
    if (!pool->ring.hash_salt.empty()) out << ", hash_salt: \"" << pool->ring.hash_salt << '"';
  } else {
    out << ketama::mode_name(pool->ring.mode) << " mode, "
        << ketama::distribution_name(pool->ring.distribution) << " distribution, hash "
        << ring.key_hash_name() << ", " << ring.points().size() << " points";
  }
  if (replicated) out << ", replicas: " << pool->replicas;
  if (pool->reload_warmup_ms > 0) {
    out << ", reload_warmup: " << pool->reload_warmup_ms << " ms";
    if (pool->reload_migrate_rate > 0)
      out << ", reload_migrate_rate: " << pool->reload_migrate_rate << " keys/s";
  }
  out << "\n";
  if (!replicated) {
    out << "server\tring_name\tweight\tpoints\tshare\n";
    for (size_t i = 0; i < report.servers.size(); ++i) {
      const auto& s = report.servers[i];
      out << s.address << '\t' << s.ring_name << '\t' << ring.servers()[i].weight_text() << '\t'
          << s.points << '\t' << percent(s.share) << '\n';
    }
    out << "share coefficient of variation: " << fixed4(report.share_cv) << '\n';
    if (mcrouter_hash) out << kExpectedShares << '\n';
    return 0;
  }
  CopyMap copies = copy_map(ring, pool->replicas);
  std::vector<double> held = held_values(copies, ring.servers().size());
  const double all_copies = std::accumulate(held.begin(), held.end(), 0.0);
  std::vector<double> live_copy_shares;
  out << "server\tring_name\tweight\tpoints\tshare\tcopies\n";
  for (size_t i = 0; i < report.servers.size(); ++i) {
    const auto& s = report.servers[i];
    double copy_share = all_copies > 0 ? held[i] / all_copies : 0.0;
    if (ring.is_live(i)) live_copy_shares.push_back(copy_share);
    out << s.address << '\t' << s.ring_name << '\t' << ring.servers()[i].weight_text() << '\t'
        << s.points << '\t' << percent(s.share) << '\t' << percent(copy_share) << '\n';
  }
  out << "share coefficient of variation: " << fixed4(report.share_cv)
      << ", copies coefficient of variation: " << fixed4(coefficient_of_variation(live_copy_shares))
      << '\n';
  out << "share: of the keys' first copies (where reads go first); copies: of all " << copies.width
      << " copies of every key (memory, writes)";
  if (pool->ring.distribution == ketama::Distribution::random) {
    out << "; random: expected fractions of requests";
  }
  out << '\n';
  if (mcrouter_hash) out << kExpectedShares << '\n';
  if (copies.width < pool->replicas) {
    out << "warning: only " << copies.width << " servers own any part of the "
        << (pool->ring.distribution == ketama::Distribution::ketama ? "ring" : "slots")
        << ", so keys get " << copies.width << " copies, not " << pool->replicas << '\n';
  }
  return 0;
}

namespace {

// The hashes worth comparing a pool's against: the 32-bit ones that spread
// alike keys well and that twemproxy and the client libraries share.
constexpr ketama::HashFunction kComparedHashes[] = {
    ketama::HashFunction::md5, ketama::HashFunction::jenkins, ketama::HashFunction::murmur,
    ketama::HashFunction::one_at_a_time};

std::optional<std::vector<ketama::HashFunction>> parse_hashes(const std::vector<std::string>& names,
                                                              std::ostream& err) {
  std::vector<ketama::HashFunction> out;
  for (const std::string& n : names) {
    std::optional<ketama::HashFunction> f = ketama::parse_hash_name(n);
    if (!f) {
      err << "memshard: unknown hash '" << n << "'; expected one of";
      for (ketama::HashFunction h : ketama::kAllHashFunctions) err << " " << ketama::hash_name(h);
      err << "\n";
      return std::nullopt;
    }
    out.push_back(*f);
  }
  if (out.empty()) out.assign(std::begin(kComparedHashes), std::end(kComparedHashes));
  return out;
}

}  // namespace

int ring_load(const std::string& config_file, const std::string& pool_name,
              const std::vector<std::string>& hash_names, std::istream& in, std::ostream& out,
              std::ostream& err) {
  std::optional<std::vector<ketama::HashFunction>> hashes = parse_hashes(hash_names, err);
  if (!hashes) return 1;
  std::optional<LoadedPool> loaded = load_pool(config_file, pool_name, err);
  if (!loaded) return 1;
  const conf::PoolConfig& pool = loaded->pool;
  const ketama::Ring& ring = loaded->ring;
  std::vector<std::string> keys = read_sample_keys(in);
  if (keys.empty()) {
    err << "memshard: no keys on stdin (one per line, or lru_crawler metadump lines)\n";
    return 1;
  }
  ketama::SampledLoad load = ketama::sampled_load(ring, keys);
  ketama::RingReport report = ketama::describe(ring);
  const double total = static_cast<double>(keys.size());
  out << "pool " << pool.name << ": " << keys.size() << " keys, hash " << ring.key_hash_name()
      << ", " << ketama::distribution_name(pool.ring.distribution) << " distribution\n";
  out << "server\tkeys\tsampled\tkeyspace\n";
  for (size_t i = 0; i < report.servers.size(); ++i) {
    out << report.servers[i].address << '\t' << load.keys[i] << '\t'
        << percent(static_cast<double>(load.keys[i]) / total) << '\t'
        << percent(report.servers[i].share) << '\n';
  }
  out << "load coefficient of variation: " << fixed4(load.cv)
      << ", max/mean: " << fixed4(load.max_over_mean)
      << ", off keyspace shares: " << fixed4(load.off_keyspace) << " (chance alone: about "
      << fixed4(load.sampling_noise) << ")\n";

  out << "\nhash\tload_cv\tmax/mean\toff_keyspace\tnote\n";
  auto row = [&](const ketama::Ring& r, const ketama::SampledLoad& l, const std::string& note) {
    out << r.key_hash_name() << '\t' << fixed4(l.cv) << '\t' << fixed4(l.max_over_mean) << '\t'
        << fixed4(l.off_keyspace) << '\t' << note << '\n';
  };
  row(ring, load, "the pool's");
  for (ketama::HashFunction f : *hashes) {
    if (ketama::is_mcrouter_distribution(pool.ring.distribution)) {
      out << ketama::hash_name(f) << "\t-\t-\t-\tignored: distribution "
          << ketama::distribution_name(pool.ring.distribution) << " hashes keys with "
          << ring.key_hash_name() << '\n';
      continue;
    }
    ketama::RingOptions options = pool.ring;
    options.hash = f;
    ketama::Ring other = ketama::Ring::build(ring.servers(), options);
    // Modes whose originals hash keys with MD5 ignore `hash:`.
    if (other.key_hash_function() != f) {
      out << ketama::hash_name(f) << "\t-\t-\t-\tignored: " << ketama::mode_name(pool.ring.mode)
          << " mode hashes keys with " << ketama::hash_name(other.key_hash_function()) << '\n';
      continue;
    }
    if (f == ring.key_hash_function()) continue;
    row(other, ketama::sampled_load(other, keys), "");
  }
  out << "changing the hash moves almost every key to another server: a migration (a cold "
         "cache), not a tweak\n";
  return 0;
}

namespace {

// `ring diff` for copies. moved: of the old copies (key, server of its old
// list), the fraction whose server is not in the key's new list. cold: of
// the new copies, the fraction whose server was not in the key's old list.
// Servers are matched by address, as ketama::diff() does.
struct CopyMoves {
  double moved = 0;
  double cold = 0;
  bool exact = true;
  std::string why_estimated;
};

// Tallies of copies over runs of hash values that have one list on each side.
struct CopyTally {
  double old_copies = 0, new_copies = 0, moved = 0, cold = 0;

  void add(const size_t* a, size_t na, const size_t* b, size_t nb, double values) {
    auto count_missing = [](const size_t* x, size_t nx, const size_t* y, size_t ny) {
      size_t missing = 0;
      for (size_t i = 0; i < nx; ++i) missing += std::find(y, y + ny, x[i]) == y + ny ? 1 : 0;
      return missing;
    };
    old_copies += static_cast<double>(na) * values;
    new_copies += static_cast<double>(nb) * values;
    moved += static_cast<double>(count_missing(a, na, b, nb)) * values;
    cold += static_cast<double>(count_missing(b, nb, a, na)) * values;
  }
  CopyMoves result() const {
    CopyMoves r;
    r.moved = old_copies > 0 ? moved / old_copies : 0.0;
    r.cold = new_copies > 0 ? cold / new_copies : 0.0;
    return r;
  }
};

// A CopyMap's lists with servers replaced by address ids shared by both sides.
std::vector<size_t> lists_by_address(const CopyMap& m, const ketama::Ring& ring,
                                     std::unordered_map<std::string, size_t>& ids) {
  std::vector<size_t> server_id;
  for (const ketama::ServerEntry& s : ring.servers()) {
    server_id.push_back(ids.try_emplace(s.address(), ids.size()).first->second);
  }
  std::vector<size_t> out;
  out.reserve(m.lists.size());
  for (size_t s : m.lists) out.push_back(server_id[s]);
  return out;
}

// ch3, wch3, crc32 on either side: the lists of sample keys on both sides,
// as ketama::diff() samples their primaries.
constexpr size_t kCopySampleKeys = 100000;

CopyMoves sampled_copy_moves(const ketama::Ring& before, uint32_t r_old, const ketama::Ring& after,
                             uint32_t r_new) {
  // Servers by address, as ketama::diff() matches them.
  std::unordered_map<std::string, size_t> ids;
  auto ids_of = [&ids](const ketama::Ring& ring) {
    std::vector<size_t> out;
    for (const ketama::ServerEntry& s : ring.servers()) {
      out.push_back(ids.try_emplace(s.address(), ids.size()).first->second);
    }
    return out;
  };
  const std::vector<size_t> id_a = ids_of(before), id_b = ids_of(after);
  std::vector<size_t> la(r_old), lb(r_new);
  CopyTally tally;
  std::string key;
  for (size_t i = 0; i < kCopySampleKeys; ++i) {
    key = "memshard:diff:" + std::to_string(i);
    const size_t ka = before.preference_list(key, std::span<size_t>(la));
    const size_t kb = after.preference_list(key, std::span<size_t>(lb));
    for (size_t k = 0; k < ka; ++k) la[k] = id_a[la[k]];
    for (size_t k = 0; k < kb; ++k) lb[k] = id_b[lb[k]];
    tally.add(la.data(), ka, lb.data(), kb, 1.0);
  }
  CopyMoves r = tally.result();
  r.exact = false;
  r.why_estimated = "(sampled: " + std::to_string(kCopySampleKeys) + " keys)";
  return r;
}

// Copies the lists of modula x modula are compared residue by residue over
// lcm(L1, L2) residues; beyond this many, they are estimated.
constexpr uint64_t kMaxResidues = uint64_t{1} << 24;

CopyMoves copy_moves(const ketama::Ring& before, uint32_t r_old, const ketama::Ring& after,
                     uint32_t r_new) {
  CopyMap a = copy_map(before, r_old);
  CopyMap b = copy_map(after, r_new);
  std::unordered_map<std::string, size_t> ids;
  std::vector<size_t> la = lists_by_address(a, before, ids);
  std::vector<size_t> lb = lists_by_address(b, after, ids);
  CopyTally tally;
  const bool same_hashing = before.key_hash_function() == after.key_hash_function() &&
                            before.options().hash_tag == after.options().hash_tag;
  using ketama::Distribution;
  if (a.runs() == 0 || b.runs() == 0) return tally.result();
  if (ketama::is_mcrouter_distribution(a.distribution) ||
      ketama::is_mcrouter_distribution(b.distribution)) {
    return sampled_copy_moves(before, r_old, after, r_new);
  }
  if (same_hashing && a.distribution == Distribution::ketama &&
      b.distribution == Distribution::ketama) {
    // Merge the two arc lists: each piece between consecutive run ends has
    // one list on each side.
    size_t i = 0, j = 0;
    uint64_t start = 0;
    while (i < a.runs() && j < b.runs()) {
      uint32_t end = std::min(a.last[i], b.last[j]);
      tally.add(la.data() + i * a.width, a.width, lb.data() + j * b.width, b.width,
                static_cast<double>(uint64_t{end} + 1 - start));
      start = uint64_t{end} + 1;
      if (a.last[i] == end) ++i;
      if (b.last[j] == end) ++j;
    }
    return tally.result();
  }
  if (same_hashing && a.distribution == Distribution::modula &&
      b.distribution == Distribution::modula) {
    const uint64_t period = std::lcm(uint64_t{a.runs()}, uint64_t{b.runs()});
    if (period <= kMaxResidues) {
      for (uint64_t c = 0; c < period; ++c) {
        size_t i = c % a.runs(), j = c % b.runs();
        tally.add(la.data() + i * a.width, a.width, lb.data() + j * b.width, b.width,
                  static_cast<double>((kHashSpace - 1 - c) / period + 1));
      }
      return tally.result();
    }
  }
  // Otherwise the two placements of a key are taken as independent (a new
  // key hash, random, modula against ketama, or too many residues): a server
  // holds a given key's copy with its probability on each side.
  std::vector<double> pa(ids.size(), 0.0), pb(ids.size(), 0.0);
  for (size_t run = 0; run < a.runs(); ++run) {
    for (size_t k = 0; k < a.width; ++k)
      pa[la[run * a.width + k]] += a.values[run] / static_cast<double>(kHashSpace);
  }
  for (size_t run = 0; run < b.runs(); ++run) {
    for (size_t k = 0; k < b.width; ++k)
      pb[lb[run * b.width + k]] += b.values[run] / static_cast<double>(kHashSpace);
  }
  double old_copies = 0, new_copies = 0, moved = 0, cold = 0;
  for (size_t id = 0; id < ids.size(); ++id) {
    old_copies += pa[id];
    new_copies += pb[id];
    moved += pa[id] * (1.0 - pb[id]);
    cold += pb[id] * (1.0 - pa[id]);
  }
  CopyMoves r;
  r.moved = old_copies > 0 ? moved / old_copies : 0.0;
  r.cold = new_copies > 0 ? cold / new_copies : 0.0;
  r.exact = false;
  r.why_estimated =
      !same_hashing ? "(expected: the key hash changed)"
      : a.distribution == Distribution::random || b.distribution == Distribution::random
          ? "(expected: random placement)"
          : "(expected, as if the two placements of a key were independent)";
  return r;
}

}  // namespace

int ring_diff(const std::string& old_file, const std::string& new_file,
              const std::string& pool_name, std::ostream& out, std::ostream& err) {
  std::optional<LoadedPool> before = load_pool(old_file, pool_name, err);
  if (!before) return 1;
  // Without --pool, the new file's pool of the same name as the old one's.
  std::optional<LoadedPool> after =
      load_pool(new_file, pool_name.empty() ? before->pool.name : pool_name, err);
  if (!after) return 1;
  ketama::RingDiff d = ketama::diff(before->ring, after->ring);
  out << "pool " << before->pool.name << ": " << percent(d.moved)
      << " of the keyspace changes server";
  if (d.sampled_keys > 0) {
    out << " (sampled: " << d.sampled_keys
        << " keys looked up in both, as mcrouter's hashes have no ring to compare)";
  } else if (!d.exact) {
    out << " (expected: the key hash changed, so every key is hashed anew)";
  }
  out << "\n";
  const uint32_t r_old = before->pool.replicas, r_new = after->pool.replicas;
  if (r_old > 1 || r_new > 1) {
    CopyMoves c = copy_moves(before->ring, r_old, after->ring, r_new);
    out << "replicas: " << r_old;
    if (r_new != r_old) out << " -> " << r_new;
    out << "\n";
    out << "primaries moved: " << percent(d.moved)
        << " of keys (a key's primary moves when the first server of its list changes; the "
           "gains and losses below are of primaries)\n";
    out << "copies moved: " << percent(c.moved)
        << " of copies (a copy moves when a server of the key's old list is not in its new "
           "list)";
    if (!c.exact) out << " " << c.why_estimated;
    out << "\n";
    out << "copies to fill: " << percent(c.cold)
        << " of the new copies (a new copy starts cold when its server was not in the key's old "
           "list)";
    if (!c.exact) out << " " << c.why_estimated;
    out << "\n";
  }
  // What reload_warmup makes of the change: the reads that would miss on
  // a moved key's new server are looked up where it was.
  const int warmup_ms = after->pool.reload_warmup_ms;
  if (warmup_ms > 0) {
    out << "reload_warmup: " << warmup_ms << " ms: reads of the " << percent(d.moved)
        << " of keys that move, which would miss on their new server, are looked up on the old "
           "one (one more round trip each) and hit while it still holds them";
    if (after->pool.reload_migrate_rate > 0) {
      out << "; reload_migrate_rate copies them over at " << after->pool.reload_migrate_rate
          << " keys/s";
    }
    out << "\n";
  }
  out << "server\tgains\tloses\tnote\n";
  for (const auto& s : d.servers) {
    out << s.address << '\t' << percent(s.gained) << '\t' << percent(s.lost) << '\t'
        << (s.only_in_old   ? "removed"
            : s.only_in_new ? "added"
                            : "")
        << '\n';
  }
  return 0;
}

}  // namespace memshard::proxy
