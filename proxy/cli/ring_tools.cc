#include "proxy/cli/ring_tools.h"

#include <cstdio>
#include <istream>
#include <optional>
#include <ostream>

#include "conf/config.h"
#include "ketama/analysis.h"
#include "ketama/ring.h"
#include "ketama/sampled_load.h"
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

// The pool a ring command inspects, with its ring; nullopt once the reason
// it cannot be had is reported.
struct LoadedPool {
  conf::PoolConfig pool;
  ketama::Ring ring;
};

ketama::Ring ring_of(const conf::PoolConfig& pool);

std::optional<LoadedPool> load_pool(const std::string& file, const std::string& name,
                                    std::ostream& err) {
  auto config = load(file, err);
  if (!config) return std::nullopt;
  const conf::PoolConfig* pool = pick_pool(*config, name, err);
  if (pool == nullptr) return std::nullopt;
  return LoadedPool{*pool, ring_of(*pool)};
}

ketama::Ring ring_of(const conf::PoolConfig& pool) {
  std::vector<ketama::ServerEntry> entries;
  for (const auto& s : pool.servers) entries.push_back(s.entry);
  return ketama::Ring::build(std::move(entries), pool.ring);
}

}  // namespace

int ring_lookup(const std::string& config_file, const std::string& pool_name,
                const std::vector<std::string>& keys, std::istream& in, std::ostream& out,
                std::ostream& err) {
  std::optional<LoadedPool> loaded = load_pool(config_file, pool_name, err);
  if (!loaded) return 1;
  const ketama::Ring& ring = loaded->ring;
  auto print = [&](const std::string& key) {
    out << key << '\t' << ring.servers()[ring.lookup(key)].address() << '\n';
  };
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

int ring_show(const std::string& config_file, const std::string& pool_name, std::ostream& out,
              std::ostream& err) {
  std::optional<LoadedPool> loaded = load_pool(config_file, pool_name, err);
  if (!loaded) return 1;
  const conf::PoolConfig* pool = &loaded->pool;
  const ketama::Ring& ring = loaded->ring;
  ketama::RingReport report = ketama::describe(ring);
  out << "pool " << pool->name << ": " << ketama::mode_name(pool->ring.mode) << " mode, "
      << ketama::distribution_name(pool->ring.distribution) << " distribution, hash "
      << ketama::hash_name(pool->ring.hash) << ", " << ring.points().size() << " points\n";
  out << "server\tring_name\tweight\tpoints\tshare\n";
  for (const auto& s : report.servers) {
    out << s.address << '\t' << s.ring_name << '\t' << s.weight << '\t' << s.points << '\t'
        << percent(s.share) << '\n';
  }
  out << "share coefficient of variation: " << fixed4(report.share_cv) << '\n';
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
  out << "pool " << pool.name << ": " << keys.size() << " keys, hash "
      << ketama::hash_name(ring.key_hash_function()) << ", "
      << ketama::distribution_name(pool.ring.distribution) << " distribution\n";
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
    out << ketama::hash_name(r.key_hash_function()) << '\t' << fixed4(l.cv) << '\t'
        << fixed4(l.max_over_mean) << '\t' << fixed4(l.off_keyspace) << '\t' << note << '\n';
  };
  row(ring, load, "the pool's");
  for (ketama::HashFunction f : *hashes) {
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
  if (!d.exact) out << " (expected: the key hash changed, so every key is hashed anew)";
  out << "\n";
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
