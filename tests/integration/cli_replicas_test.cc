// `memshard ring` with replicated pools (replicas > 1): lookup --all, the
// copy shares of ring show and the moved copies of ring diff, run as the
// real binary. Expected values come from the test itself: a brute-force walk
// of a ketama::Ring's points, shares worked out by hand, or `ring lookup` on
// sample keys.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <map>
#include <regex>
#include <set>
#include <sstream>
#include <string>
#include <vector>

#include "cli_util.h"
#include "harness.h"
#include "ketama/ring.h"

namespace memshard::testing {
namespace {

double percent(const std::string& text) {
  if (text.empty() || text.back() != '%') return std::nan("");
  return std::stod(text.substr(0, text.size() - 1)) / 100.0;
}

// A printed percentage has 4 decimals: 0.5e-6 of rounding.
constexpr double kPrinted = 1e-6;

class CliReplicas : public ::testing::Test {
 protected:
  std::string write_pool(const std::string& file, const std::vector<std::string>& server_lines,
                         std::vector<std::pair<std::string, std::string>> directives = {}) {
    PoolSpec p;
    p.name = "alpha";
    p.listen = "127.0.0.1:22121";
    p.servers = server_lines;
    p.directives = std::move(directives);
    return dir_.write(file, pool_yaml(p));
  }
  TempDir dir_;
};

// "127.0.0.1:<port>:<weight>" lines for ports 40001.. and the same servers
// as ketama entries.
std::vector<std::string> server_lines(const std::vector<uint32_t>& weights) {
  std::vector<std::string> out;
  for (size_t i = 0; i < weights.size(); ++i) {
    out.push_back("127.0.0.1:" + std::to_string(40001 + i) + ":" + std::to_string(weights[i]));
  }
  return out;
}
ketama::Ring twemproxy_ring(const std::vector<uint32_t>& weights) {
  std::vector<ketama::ServerEntry> entries;
  for (size_t i = 0; i < weights.size(); ++i) {
    ketama::ServerEntry e;
    e.host = "127.0.0.1";
    e.port = static_cast<uint16_t>(40001 + i);
    e.weight = weights[i];
    entries.push_back(e);
  }
  return ketama::Ring::build(entries, ketama::RingOptions{});  // the config's defaults
}

// The first `r` distinct servers of the points from hash h on, by brute
// force (not Ring::preference_list).
std::vector<size_t> walk(const ketama::Ring& ring, uint32_t h, size_t r) {
  const std::vector<ketama::Point>& points = ring.points();
  size_t start = 0;
  while (start < points.size() && points[start].value < h) ++start;
  std::vector<size_t> out;
  for (size_t step = 0; step < points.size() && out.size() < r; ++step) {
    size_t s = points[(start + step) % points.size()].server;
    if (std::find(out.begin(), out.end(), s) == out.end()) out.push_back(s);
  }
  return out;
}

// Keys that sample the keyspace evenly: "key:0", "key:1", ... do not under
// fnv1a_64 (similar keys land close together), so each key carries a
// splitmix64 mix of its number.
std::vector<std::string> test_keys(size_t n) {
  std::vector<std::string> keys;
  for (uint64_t i = 0; i < n; ++i) {
    uint64_t z = (i + 1) * 0x9e3779b97f4a7c15ULL;
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
    z ^= z >> 31;
    keys.push_back("key:" + std::to_string(z));
  }
  keys.push_back("ключ");
  keys.push_back("x{y}z");
  return keys;
}

// `ring lookup --all`: per key the addresses of its list.
std::vector<std::vector<std::string>> lookup_all(const std::string& config,
                                                 const std::vector<std::string>& keys) {
  std::string input;
  for (const auto& k : keys) input += k + "\n";
  CommandResult r = memshard({"ring", "lookup", "--all", "-c", config}, input);
  EXPECT_EQ(r.exit_code, 0) << r.err;
  std::vector<std::string> lines = lines_of(r.out);
  std::vector<std::vector<std::string>> lists;
  if (lines.size() != keys.size()) {
    ADD_FAILURE() << "expected " << keys.size() << " lines, got " << lines.size();
    return lists;
  }
  for (size_t i = 0; i < keys.size(); ++i) {
    std::vector<std::string> cols = split_tabs(lines[i]);
    if (cols.size() != 2 || cols[0] != keys[i]) {
      ADD_FAILURE() << "bad line: " << lines[i];
      return {};
    }
    std::vector<std::string> list;
    std::istringstream words(cols[1]);
    std::string w;
    while (words >> w) list.push_back(w);
    lists.push_back(list);
  }
  return lists;
}

TEST_F(CliReplicas, LookupAllPrintsTheWholePreferenceListInOrder) {
  const std::vector<uint32_t> weights = {1, 2, 1, 3, 1};
  std::string f = write_pool("r3.yml", server_lines(weights), {{"replicas", "3"}});
  ketama::Ring ring = twemproxy_ring(weights);
  std::vector<std::string> keys = test_keys(3000);
  std::vector<std::vector<std::string>> lists = lookup_all(f, keys);
  ASSERT_EQ(lists.size(), keys.size());
  for (size_t i = 0; i < keys.size(); ++i) {
    std::vector<std::string> expected;
    for (size_t s : walk(ring, ring.hash_key(keys[i]), 3)) {
      expected.push_back(ring.servers()[s].address());
    }
    ASSERT_EQ(lists[i], expected) << "key '" << keys[i] << "'";
  }
  // Without --all: today's output, the first copy only.
  std::vector<std::string> first = ring_lookup(f, keys);
  ASSERT_EQ(first.size(), keys.size());
  for (size_t i = 0; i < keys.size(); ++i) EXPECT_EQ(first[i], lists[i].front()) << keys[i];
  CommandResult plain = memshard({"ring", "lookup", "-c", f, "user:42"});
  EXPECT_TRUE(std::regex_match(plain.out, std::regex("user:42\t127\\.0\\.0\\.1:4000[1-5]\n")))
      << plain.out;
}

TEST_F(CliReplicas, LookupAllOfAnUnreplicatedPoolPrintsOneServer) {
  std::string f = write_pool("r1.yml", server_lines({1, 1, 1}));
  std::vector<std::string> keys = {"a", "b", "user:42"};
  CommandResult all = memshard({"ring", "lookup", "--all", "-c", f, "a", "b", "user:42"});
  CommandResult plain = memshard({"ring", "lookup", "-c", f, "a", "b", "user:42"});
  ASSERT_EQ(all.exit_code, 0) << all.err;
  EXPECT_EQ(all.out, plain.out);
}

struct CopyRow {
  std::string address;
  double share = 0, copies = 0;
};

// `ring show` of a replicated pool: the header names R; rows have a copies column.
std::vector<CopyRow> parse_copy_show(const std::string& out, uint32_t replicas) {
  std::vector<std::string> lines = lines_of(out);
  if (lines.size() < 3) {
    ADD_FAILURE() << "short output:\n" << out;
    return {};
  }
  EXPECT_NE(lines[0].find("replicas: " + std::to_string(replicas)), std::string::npos) << out;
  EXPECT_EQ(lines[1], "server\tring_name\tweight\tpoints\tshare\tcopies");
  std::vector<CopyRow> rows;
  for (size_t i = 2; i < lines.size(); ++i) {
    if (lines[i].starts_with("share coefficient of variation")) break;
    std::vector<std::string> c = split_tabs(lines[i]);
    if (c.size() != 6) {
      ADD_FAILURE() << "bad row: " << lines[i];
      return {};
    }
    rows.push_back(CopyRow{c[0], percent(c[4]), percent(c[5])});
  }
  return rows;
}

TEST_F(CliReplicas, ShowGivesExactSharesOfFirstCopiesAndOfAllCopies) {
  const std::vector<uint32_t> weights = {1, 2, 1, 3};
  std::string f = write_pool("show.yml", server_lines(weights), {{"replicas", "2"}});
  CommandResult r = memshard({"ring", "show", "-c", f});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  std::vector<CopyRow> rows = parse_copy_show(r.out, 2);
  ASSERT_EQ(rows.size(), weights.size()) << r.out;

  // Expected: every run of hash values between two distinct point values
  // has one list; count each run's values for both of its servers.
  ketama::Ring ring = twemproxy_ring(weights);
  std::vector<double> first(weights.size(), 0), held(weights.size(), 0);
  const std::vector<ketama::Point>& points = ring.points();
  uint64_t start = 0;
  for (size_t i = 0; i <= points.size(); ++i) {
    uint64_t end = i < points.size() ? points[i].value : uint64_t{UINT32_MAX};
    if (end + 1 <= start) continue;  // a repeated value owns nothing
    std::vector<size_t> list = walk(ring, static_cast<uint32_t>(end), 2);
    double values = static_cast<double>(end + 1 - start);
    first[list[0]] += values;
    for (size_t s : list) held[s] += values;
    start = end + 1;
  }
  double copies = 0;
  for (double h : held) copies += h;
  EXPECT_DOUBLE_EQ(copies, 2.0 * 4294967296.0);
  double sum = 0;
  for (size_t i = 0; i < rows.size(); ++i) {
    EXPECT_EQ(rows[i].address, ring.servers()[i].address());
    EXPECT_NEAR(rows[i].share, first[i] / 4294967296.0, kPrinted) << r.out;
    EXPECT_NEAR(rows[i].copies, held[i] / copies, kPrinted) << r.out;
    sum += rows[i].copies;
  }
  EXPECT_NEAR(sum, 1.0, 4 * kPrinted);

  // The servers' own counts: sample keys' lists agree with the shares.
  std::vector<std::string> keys = test_keys(40000);
  std::map<std::string, double> sampled;
  for (const auto& list : lookup_all(f, keys)) {
    for (const auto& a : list) sampled[a] += 1.0 / (2.0 * static_cast<double>(keys.size()));
  }
  for (const CopyRow& row : rows) EXPECT_NEAR(sampled[row.address], row.copies, 0.01);
}

TEST_F(CliReplicas, ShowWithEveryServerAsACopyGivesEvenCopies) {
  std::string f = write_pool("all.yml", server_lines({1, 5, 2, 3}), {{"replicas", "4"}});
  CommandResult r = memshard({"ring", "show", "-c", f});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  std::vector<CopyRow> rows = parse_copy_show(r.out, 4);
  ASSERT_EQ(rows.size(), 4u) << r.out;
  for (const CopyRow& row : rows) EXPECT_NEAR(row.copies, 0.25, kPrinted) << r.out;
  EXPECT_GT(rows[1].share, rows[0].share);  // first copies still follow the weights
}

TEST_F(CliReplicas, ShowModulaCopies) {
  // Slots 40001, 40002, 40003, 40003 (twemproxy name order); R = 2 gives
  // the residues 0..3 the lists {1,2}, {2,3}, {3,1}, {3,1}: copies 3/8,
  // 2/8, 3/8; first copies 1/4, 1/4, 1/2.
  std::string f = write_pool("modula.yml", server_lines({1, 1, 2}),
                             {{"distribution", "modula"}, {"replicas", "2"}});
  CommandResult r = memshard({"ring", "show", "-c", f});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  std::vector<CopyRow> rows = parse_copy_show(r.out, 2);
  ASSERT_EQ(rows.size(), 3u) << r.out;
  EXPECT_NEAR(rows[0].share, 0.25, kPrinted);
  EXPECT_NEAR(rows[1].share, 0.25, kPrinted);
  EXPECT_NEAR(rows[2].share, 0.5, kPrinted);
  EXPECT_NEAR(rows[0].copies, 0.375, kPrinted) << r.out;
  EXPECT_NEAR(rows[1].copies, 0.25, kPrinted) << r.out;
  EXPECT_NEAR(rows[2].copies, 0.375, kPrinted) << r.out;
}

TEST_F(CliReplicas, ShowWarnsWhenAServerHasNoPoints) {
  // twemproxy: floor(40 * 3 * 1 / 2001) = 0 digests for the weight-1 server.
  std::string f = write_pool("tiny.yml", server_lines({1000, 1000, 1}), {{"replicas", "3"}});
  CommandResult r = memshard({"ring", "show", "-c", f});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.out.find("keys get 2 copies, not 3"), std::string::npos) << r.out;
  std::vector<CopyRow> rows = parse_copy_show(r.out, 3);
  ASSERT_EQ(rows.size(), 3u) << r.out;
  EXPECT_EQ(rows[2].copies, 0.0);
}

TEST_F(CliReplicas, ShowOfAnUnreplicatedPoolIsUnchanged) {
  std::string f = write_pool("r1.yml", server_lines({1, 1}));
  CommandResult r = memshard({"ring", "show", "-c", f});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(r.out.find("replicas"), std::string::npos) << r.out;
  EXPECT_EQ(lines_of(r.out).at(1), "server\tring_name\tweight\tpoints\tshare");
}

struct CopyDiff {
  double primaries = std::nan(""), moved = std::nan(""), cold = std::nan("");
  std::string replicas;
};

CopyDiff parse_copy_diff(const std::string& out) {
  CopyDiff d;
  std::smatch m;
  if (std::regex_search(out, m, std::regex(R"(([0-9.]+%) of the keyspace changes server)"))) {
    d.primaries = percent(m[1]);
  }
  if (std::regex_search(out, m, std::regex(R"(\nreplicas: ([^\n]*)\n)"))) d.replicas = m[1];
  if (std::regex_search(out, m, std::regex(R"(\nprimaries moved: ([0-9.]+%) of keys)"))) {
    EXPECT_NEAR(percent(m[1]), d.primaries, 1e-12);
  } else {
    ADD_FAILURE() << "no primaries line:\n" << out;
  }
  if (std::regex_search(out, m, std::regex(R"(\ncopies moved: ([0-9.]+%) of copies \(a copy)"))) {
    d.moved = percent(m[1]);
  }
  if (std::regex_search(out, m,
                        std::regex(R"(\ncopies to fill: ([0-9.]+%) of the new copies \(a new)"))) {
    d.cold = percent(m[1]);
  }
  return d;
}

// Sample keys' lists in both configs: the fraction of old copies whose
// server is not in the new list, and of new copies not in the old list.
std::pair<double, double> moved_by_lookup(const std::string& before, const std::string& after) {
  std::vector<std::string> keys = test_keys(20000);
  auto a = lookup_all(before, keys), b = lookup_all(after, keys);
  if (a.size() != keys.size() || b.size() != keys.size()) return {std::nan(""), std::nan("")};
  double old_copies = 0, new_copies = 0, moved = 0, cold = 0;
  for (size_t i = 0; i < keys.size(); ++i) {
    std::set<std::string> o(a[i].begin(), a[i].end()), n(b[i].begin(), b[i].end());
    old_copies += static_cast<double>(o.size());
    new_copies += static_cast<double>(n.size());
    for (const auto& s : o) moved += n.count(s) ? 0 : 1;
    for (const auto& s : n) cold += o.count(s) ? 0 : 1;
  }
  return {moved / old_copies, cold / new_copies};
}

TEST_F(CliReplicas, DiffOfTheSameReplicatedRingMovesNoCopy) {
  std::string before = write_pool("old.yml", server_lines({1, 2, 3}), {{"replicas", "2"}});
  std::string after =
      write_pool("new.yml", server_lines({1, 2, 3}), {{"replicas", "2"}, {"timeout", "100"}});
  CommandResult r = memshard({"ring", "diff", before, after});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  CopyDiff d = parse_copy_diff(r.out);
  EXPECT_EQ(d.replicas, "2");
  EXPECT_EQ(d.primaries, 0.0) << r.out;
  EXPECT_EQ(d.moved, 0.0) << r.out;
  EXPECT_EQ(d.cold, 0.0) << r.out;
}

TEST_F(CliReplicas, DiffWhenReplicasChange) {
  std::string r1 = write_pool("r1.yml", server_lines({1, 2, 3, 1}));
  std::string r2 = write_pool("r2.yml", server_lines({1, 2, 3, 1}), {{"replicas", "2"}});
  // 1 -> 2: every key keeps its copy and gains one: half the new copies are cold.
  CommandResult up = memshard({"ring", "diff", r1, r2});
  ASSERT_EQ(up.exit_code, 0) << up.err;
  CopyDiff d = parse_copy_diff(up.out);
  EXPECT_EQ(d.replicas, "1 -> 2");
  EXPECT_EQ(d.primaries, 0.0) << up.out;
  EXPECT_EQ(d.moved, 0.0) << up.out;
  EXPECT_NEAR(d.cold, 0.5, kPrinted) << up.out;
  // 2 -> 1: every key drops its second copy: half the old copies go.
  CommandResult down = memshard({"ring", "diff", r2, r1});
  ASSERT_EQ(down.exit_code, 0) << down.err;
  d = parse_copy_diff(down.out);
  EXPECT_EQ(d.replicas, "2 -> 1");
  EXPECT_NEAR(d.moved, 0.5, kPrinted) << down.out;
  EXPECT_EQ(d.cold, 0.0) << down.out;
}

TEST_F(CliReplicas, DiffWhenAServerIsRemovedMovesExactlyItsCopies) {
  // Equal weights, 5 -> 4 servers: the others keep their points, so the
  // copies that move are exactly the removed server's, and as many new ones
  // start cold (each of its keys takes the next server).
  std::string before = write_pool("old.yml", server_lines({1, 1, 1, 1, 1}), {{"replicas", "2"}});
  std::string after = write_pool("new.yml", server_lines({1, 1, 1, 1}), {{"replicas", "2"}});
  CommandResult r = memshard({"ring", "diff", before, after});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  CopyDiff d = parse_copy_diff(r.out);

  ketama::Ring ring = twemproxy_ring({1, 1, 1, 1, 1});
  double held = 0;  // hash values whose list holds server 4
  const std::vector<ketama::Point>& points = ring.points();
  uint64_t start = 0;
  for (size_t i = 0; i <= points.size(); ++i) {
    uint64_t end = i < points.size() ? points[i].value : uint64_t{UINT32_MAX};
    if (end + 1 <= start) continue;
    std::vector<size_t> list = walk(ring, static_cast<uint32_t>(end), 2);
    if (std::find(list.begin(), list.end(), 4u) != list.end()) {
      held += static_cast<double>(end + 1 - start);
    }
    start = end + 1;
  }
  double expected = held / (2.0 * 4294967296.0);
  EXPECT_NEAR(d.moved, expected, kPrinted) << r.out;
  EXPECT_NEAR(d.cold, expected, kPrinted) << r.out;
  auto [moved, cold] = moved_by_lookup(before, after);
  EXPECT_NEAR(moved, d.moved, 0.01);
  EXPECT_NEAR(cold, d.cold, 0.01);
}

TEST_F(CliReplicas, DiffAgreesWithLookupsWhenWeightsAndReplicasChange) {
  std::string before = write_pool("old.yml", server_lines({1, 2, 3, 1}), {{"replicas", "2"}});
  std::string after = write_pool("new.yml", server_lines({1, 2, 1, 1, 2}), {{"replicas", "3"}});
  CommandResult r = memshard({"ring", "diff", before, after});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  CopyDiff d = parse_copy_diff(r.out);
  EXPECT_EQ(d.replicas, "2 -> 3");
  auto [moved, cold] = moved_by_lookup(before, after);
  EXPECT_GT(moved, 0.0);
  EXPECT_NEAR(moved, d.moved, 0.01) << r.out;
  EXPECT_NEAR(cold, d.cold, 0.01) << r.out;
}

TEST_F(CliReplicas, DiffWithANewHashIsAnEstimateThatMatchesLookups) {
  std::string before = write_pool("old.yml", server_lines({1, 1, 1, 1}), {{"replicas", "2"}});
  std::string after =
      write_pool("new.yml", server_lines({1, 1, 1, 1}), {{"replicas", "2"}, {"hash", "md5"}});
  CommandResult r = memshard({"ring", "diff", before, after});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.out.find("(expected: the key hash changed)"), std::string::npos) << r.out;
  CopyDiff d = parse_copy_diff(r.out);
  auto [moved, cold] = moved_by_lookup(before, after);
  EXPECT_GT(moved, 0.3);  // about 1 - 2/4
  EXPECT_NEAR(moved, d.moved, 0.03) << r.out;
  EXPECT_NEAR(cold, d.cold, 0.03) << r.out;
}

TEST_F(CliReplicas, DiffOfModulaPoolsIsExact) {
  // Slots 1,2,3 -> 1,2,3,3 (weights 1,1,1 -> 1,1,2), R = 2. The pattern
  // repeats every lcm(3, 4) = 12 residues.
  std::string before = write_pool("old.yml", server_lines({1, 1, 1}),
                                  {{"distribution", "modula"}, {"replicas", "2"}});
  std::string after = write_pool("new.yml", server_lines({1, 1, 2}),
                                 {{"distribution", "modula"}, {"replicas", "2"}});
  CommandResult r = memshard({"ring", "diff", before, after});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(r.out.find("(expected"), std::string::npos) << r.out;
  CopyDiff d = parse_copy_diff(r.out);
  // By hand: old lists by c % 3: {1,2} {2,3} {3,1}; new by c % 4: {1,2}
  // {2,3} {3,1} {3,1}. Over c = 0..11, count the old copies missing from
  // the new list.
  const std::vector<std::set<int>> old_lists = {{1, 2}, {2, 3}, {3, 1}};
  const std::vector<std::set<int>> new_lists = {{1, 2}, {2, 3}, {3, 1}, {3, 1}};
  int missing = 0;
  for (int c = 0; c < 12; ++c) {
    for (int s : old_lists[c % 3]) missing += new_lists[c % 4].count(s) ? 0 : 1;
  }
  // 2^32 is a multiple of 4 but not of 3 or 12: residues get 2^32/12 values,
  // give or take one, so the fraction is exact to far below the printed 4 decimals.
  EXPECT_NEAR(d.moved, missing / 24.0, kPrinted) << r.out;
  EXPECT_NEAR(d.cold, missing / 24.0, kPrinted) << r.out;  // as many new copies as old
  auto [moved, cold] = moved_by_lookup(before, after);
  EXPECT_NEAR(moved, d.moved, 0.01);
}

TEST_F(CliReplicas, DiffOfUnreplicatedPoolsPrintsNoCopies) {
  std::string before = write_pool("old.yml", server_lines({1, 1, 1}));
  std::string after = write_pool("new.yml", server_lines({1, 1}));
  CommandResult r = memshard({"ring", "diff", before, after});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(r.out.find("copies"), std::string::npos) << r.out;
  EXPECT_EQ(r.out.find("replicas"), std::string::npos) << r.out;
  EXPECT_EQ(lines_of(r.out).at(1), "server\tgains\tloses\tnote");
}

}  // namespace
}  // namespace memshard::testing
