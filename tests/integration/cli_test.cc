// The memshard command line: -t, -V, ring lookup/show/diff, and startup
// failures, run as the real binary.
#include <gtest/gtest.h>

#include <cmath>
#include <map>
#include <regex>
#include <sstream>
#include <string>
#include <vector>

#include "cli_util.h"
#include "harness.h"

namespace memshard::testing {
namespace {

using namespace std::chrono_literals;

// "12.3456%" -> 0.123456; NaN when not a percentage.
double percent(const std::string& text) {
  if (text.empty() || text.back() != '%') return std::nan("");
  try {
    return std::stod(text.substr(0, text.size() - 1)) / 100.0;
  } catch (...) {
    return std::nan("");
  }
}

// Servers on ports nobody listens on: the CLI never connects.
std::vector<std::string> servers(size_t n, uint16_t first = 40001) {
  std::vector<std::string> out;
  for (size_t i = 0; i < n; ++i) out.push_back("127.0.0.1:" + std::to_string(first + i) + ":1");
  return out;
}

class Cli : public ::testing::Test {
 protected:
  std::string write_pool(const std::string& file, std::vector<std::string> server_lines,
                         std::vector<std::pair<std::string, std::string>> directives = {}) {
    PoolSpec p;
    p.name = "alpha";
    p.listen = "127.0.0.1:22121";
    p.servers = std::move(server_lines);
    p.directives = std::move(directives);
    return dir_.write(file, pool_yaml(p));
  }
  TempDir dir_;
};

TEST_F(Cli, VersionFlag) {
  CommandResult r = memshard({"-V"});
  EXPECT_EQ(r.exit_code, 0) << r.err;
  EXPECT_TRUE(std::regex_search(r.out, std::regex(R"(^memshard \d+\.\d+\.\d+\s*$)"))) << r.out;
  CommandResult l = memshard({"--version"});
  EXPECT_EQ(l.out, r.out);
}

TEST_F(Cli, TestModeAcceptsValidConfig) {
  std::string f = write_pool("ok.yml", servers(3), {{"hash", "md5"}, {"timeout", "400"}});
  CommandResult r = memshard({"-t", "-c", f});
  EXPECT_EQ(r.exit_code, 0) << r.out << r.err;
  EXPECT_NE(r.out.find(f), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("syntax is ok"), std::string::npos) << r.out;
  // nutcracker agrees, when installed.
  if (have_nutcracker()) {
    EXPECT_EQ(run_command({"nutcracker", "-t", "-c", f}, {}, 10s).exit_code, 0);
  }
}

TEST_F(Cli, TestModeNamesFileAndLineOfError) {
  // Line 3 has an unknown hash.
  std::string f = dir_.write("bad.yml",
                             "alpha:\n"
                             "  listen: 127.0.0.1:22121\n"
                             "  hash: no_such_hash\n"
                             "  servers:\n"
                             "   - 127.0.0.1:40001:1\n");
  CommandResult r = memshard({"-t", "-c", f});
  EXPECT_NE(r.exit_code, 0);
  EXPECT_EQ(r.exit_code, 1) << r.err;
  EXPECT_NE(r.err.find(f + ":3:"), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("hash"), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("syntax is invalid"), std::string::npos) << r.err;
  EXPECT_EQ(r.out.find("syntax is ok"), std::string::npos) << r.out;
}

TEST_F(Cli, TestModeReportsEveryError) {
  std::string f = dir_.write("bad2.yml",
                             "alpha:\n"
                             "  listen: 127.0.0.1:22121\n"
                             "  distribution: sideways\n"
                             "  servers:\n"
                             "   - 127.0.0.1:40001:1\n"
                             "   - 127.0.0.1:notaport:1\n");
  CommandResult r = memshard({"-t", "-c", f});
  EXPECT_EQ(r.exit_code, 1) << r.err;
  EXPECT_NE(r.err.find(f + ":3:"), std::string::npos) << r.err;
  EXPECT_NE(r.err.find(f + ":6:"), std::string::npos) << r.err;
}

TEST_F(Cli, TestModeOnMissingFile) {
  std::string f = dir_.path() + "/does-not-exist.yml";
  CommandResult r = memshard({"-t", "-c", f});
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_NE(r.err.find(f), std::string::npos) << r.err;
}

TEST_F(Cli, ServerRefusesToStartOnInvalidConfig) {
  std::string f = dir_.write("bad.yml",
                             "alpha:\n"
                             "  listen: 127.0.0.1:22121\n"
                             "  servers:\n"
                             "   - 127.0.0.1:40001:0\n");  // weight 0
  CommandResult r = memshard({"-c", f});
  EXPECT_FALSE(r.timed_out) << "memshard kept running on an invalid config";
  EXPECT_NE(r.exit_code, 0);
  EXPECT_NE(r.err.find(f + ":4:"), std::string::npos) << r.err;
}

TEST_F(Cli, ServerRefusesToStartWhenListenPortIsTaken) {
  Memcached busy;  // holds the port
  PoolSpec p;
  p.listen = "127.0.0.1:" + std::to_string(busy.port());
  p.servers = servers(1);
  std::string f = dir_.write("busy.yml", pool_yaml(p));
  CommandResult r = memshard({"-c", f});
  EXPECT_FALSE(r.timed_out) << "memshard kept running without its listening socket";
  EXPECT_NE(r.exit_code, 0);
  EXPECT_NE(r.err.find(std::to_string(busy.port())), std::string::npos) << r.err;
}

TEST_F(Cli, RingLookupFromArgumentsAndFromStdinAgree) {
  std::string f = write_pool("ring.yml", servers(4));
  std::vector<std::string> keys = {"a", "b", "user:42", "ключ", "x{y}z"};
  std::vector<std::string> args = {"ring", "lookup", "-c", f};
  args.insert(args.end(), keys.begin(), keys.end());
  CommandResult from_args = memshard(args);
  ASSERT_EQ(from_args.exit_code, 0) << from_args.err;
  std::vector<std::string> lines = lines_of(from_args.out);
  ASSERT_EQ(lines.size(), keys.size()) << from_args.out;
  for (size_t i = 0; i < keys.size(); ++i) {
    std::vector<std::string> cols = split_tabs(lines[i]);
    ASSERT_EQ(cols.size(), 2u) << lines[i];
    EXPECT_EQ(cols[0], keys[i]);
    EXPECT_TRUE(std::regex_match(cols[1], std::regex(R"(127\.0\.0\.1:4000[1-4])"))) << cols[1];
  }
  std::string input;
  for (const auto& k : keys) input += k + "\n";
  CommandResult from_stdin = memshard({"ring", "lookup", "-c", f}, input);
  EXPECT_EQ(from_stdin.exit_code, 0) << from_stdin.err;
  EXPECT_EQ(from_stdin.out, from_args.out);
  // CRLF input (a file edited on Windows) names the same keys.
  std::string crlf;
  for (const auto& k : keys) crlf += k + "\r\n";
  EXPECT_EQ(memshard({"ring", "lookup", "-c", f}, crlf).out, from_args.out);
}

TEST_F(Cli, RingLookupSpreadsKeysOverEveryServer) {
  std::string f = write_pool("ring.yml", servers(4));
  std::vector<std::string> keys;
  for (int i = 0; i < 4000; ++i) keys.push_back("key:" + std::to_string(i));
  std::string error;
  std::vector<std::string> owner = ring_lookup(f, keys, "", &error);
  ASSERT_EQ(owner.size(), keys.size()) << error;
  std::map<std::string, int> count;
  for (const auto& o : owner) ++count[o];
  EXPECT_EQ(count.size(), 4u);
  for (const auto& [server, n] : count) {
    EXPECT_GT(n, 4000 / 4 / 3) << server;  // no server starved
    EXPECT_LT(n, 4000 / 4 * 3) << server;
  }
  // Deterministic: the same answers again.
  EXPECT_EQ(ring_lookup(f, keys), owner);
}

TEST_F(Cli, RingLookupNeedsPoolWhenSeveral) {
  PoolSpec a, b;
  a.name = "one";
  a.listen = "127.0.0.1:22121";
  a.servers = servers(2, 40001);
  b.name = "two";
  b.listen = "127.0.0.1:22122";
  b.servers = servers(2, 40011);
  std::string f = dir_.write("two.yml", config_yaml({a, b}));
  CommandResult none = memshard({"ring", "lookup", "-c", f, "k"});
  EXPECT_NE(none.exit_code, 0);
  EXPECT_NE(none.err.find("one"), std::string::npos) << none.err;
  EXPECT_NE(none.err.find("two"), std::string::npos) << none.err;
  CommandResult two = memshard({"ring", "lookup", "-c", f, "--pool", "two", "k"});
  EXPECT_EQ(two.exit_code, 0) << two.err;
  EXPECT_TRUE(std::regex_match(two.out, std::regex("k\t127\\.0\\.0\\.1:4001[12]\n"))) << two.out;
  CommandResult bad = memshard({"ring", "lookup", "-c", f, "--pool", "three", "k"});
  EXPECT_NE(bad.exit_code, 0);
}

TEST_F(Cli, RingLookupOnInvalidConfigFails) {
  std::string f = dir_.write("bad.yml", "alpha:\n  listen: 127.0.0.1:22121\n");
  CommandResult r = memshard({"ring", "lookup", "-c", f, "k"});
  EXPECT_NE(r.exit_code, 0);
  EXPECT_NE(r.err.find(f), std::string::npos) << r.err;
  EXPECT_EQ(r.out, "");
}

struct ShowRow {
  std::string address, ring_name;
  int weight = 0, points = 0;
  double share = 0;
};

// Parses `ring show`; empty with a failure when the output is malformed.
std::vector<ShowRow> parse_show(const std::string& out, int* total_points) {
  std::vector<std::string> lines = lines_of(out);
  std::vector<ShowRow> rows;
  if (lines.size() < 3) {
    ADD_FAILURE() << "short ring show output:\n" << out;
    return rows;
  }
  std::smatch m;
  if (!std::regex_search(lines[0], m, std::regex(R"((\d+) points)"))) {
    ADD_FAILURE() << "no point count in: " << lines[0];
    return rows;
  }
  *total_points = std::stoi(m[1]);
  EXPECT_EQ(lines[1], "server\tring_name\tweight\tpoints\tshare");
  for (size_t i = 2; i < lines.size(); ++i) {
    if (lines[i].starts_with("share coefficient of variation")) break;
    std::vector<std::string> c = split_tabs(lines[i]);
    if (c.size() != 5) {
      ADD_FAILURE() << "bad row: " << lines[i];
      return {};
    }
    rows.push_back(ShowRow{c[0], c[1], std::stoi(c[2]), std::stoi(c[3]), percent(c[4])});
  }
  return rows;
}

TEST_F(Cli, RingShowEqualWeights) {
  std::string f = write_pool("show.yml", servers(4));
  CommandResult r = memshard({"ring", "show", "-c", f});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  int total = 0;
  std::vector<ShowRow> rows = parse_show(r.out, &total);
  ASSERT_EQ(rows.size(), 4u) << r.out;
  double sum = 0;
  int points = 0;
  for (size_t i = 0; i < rows.size(); ++i) {
    EXPECT_EQ(rows[i].address, "127.0.0.1:" + std::to_string(40001 + i));
    EXPECT_EQ(rows[i].ring_name, rows[i].address);  // unnamed, port != 11211
    EXPECT_EQ(rows[i].weight, 1);
    EXPECT_EQ(rows[i].points, 160);  // twemproxy: 160 points per server at equal weights
    EXPECT_GT(rows[i].share, 0.15) << r.out;
    EXPECT_LT(rows[i].share, 0.35) << r.out;
    sum += rows[i].share;
    points += rows[i].points;
  }
  EXPECT_NEAR(sum, 1.0, 0.0005) << r.out;
  EXPECT_EQ(points, total);
  EXPECT_NE(r.out.find("share coefficient of variation"), std::string::npos);
}

TEST_F(Cli, RingShowWeightsAndNames) {
  std::string f = write_pool("show.yml",
                             {"127.0.0.1:40001:1", "127.0.0.1:40002:3 big", "127.0.0.1:11211:1",
                              "127.0.0.1:40004:1 small"},
                             {{"hash", "md5"}});
  CommandResult r = memshard({"ring", "show", "-c", f});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(lines_of(r.out).at(0).find("md5"), std::string::npos) << r.out;
  int total = 0;
  std::vector<ShowRow> rows = parse_show(r.out, &total);
  ASSERT_EQ(rows.size(), 4u) << r.out;
  EXPECT_EQ(rows[1].ring_name, "big");
  EXPECT_EQ(rows[2].ring_name, "127.0.0.1");  // twemproxy drops the default port
  EXPECT_EQ(rows[3].ring_name, "small");
  EXPECT_EQ(rows[1].weight, 3);
  double sum = 0;
  for (const auto& row : rows) sum += row.share;
  EXPECT_NEAR(sum, 1.0, 0.0005) << r.out;
  // The weight-3 server takes about half the keyspace, far more than any other.
  EXPECT_GT(rows[1].share, 0.35) << r.out;
  EXPECT_LT(rows[1].share, 0.75) << r.out;
  for (size_t i : {0u, 2u, 3u}) EXPECT_GT(rows[1].share, 1.5 * rows[i].share) << r.out;
  EXPECT_GT(rows[1].points, 2 * rows[0].points);
}

TEST_F(Cli, RingShowModula) {
  std::string f = write_pool("show.yml", {"127.0.0.1:40001:1", "127.0.0.1:40002:3"},
                             {{"distribution", "modula"}});
  CommandResult r = memshard({"ring", "show", "-c", f});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  int total = -1;
  std::vector<ShowRow> rows = parse_show(r.out, &total);
  ASSERT_EQ(rows.size(), 2u) << r.out;
  EXPECT_NEAR(rows[0].share, 0.25, 0.001) << r.out;
  EXPECT_NEAR(rows[1].share, 0.75, 0.001) << r.out;
}

struct DiffRow {
  std::string address;
  double gains = 0, loses = 0;
  std::string note;
};

double parse_diff(const std::string& out, std::vector<DiffRow>& rows) {
  std::vector<std::string> lines = lines_of(out);
  std::smatch m;
  if (lines.size() < 2 ||
      !std::regex_search(lines[0], m, std::regex(R"(([0-9.]+%) of the keyspace changes server)"))) {
    ADD_FAILURE() << "bad ring diff output:\n" << out;
    return std::nan("");
  }
  // The reload_warmup line (ring_tools.cc) comes between them.
  size_t header = 1;
  if (lines[header].starts_with("reload_warmup: ")) ++header;
  EXPECT_EQ(lines.at(header), "server\tgains\tloses\tnote");
  for (size_t i = header + 1; i < lines.size(); ++i) {
    std::vector<std::string> c = split_tabs(lines[i]);
    if (c.size() != 4) {
      ADD_FAILURE() << "bad row: " << lines[i];
      continue;
    }
    rows.push_back(DiffRow{c[0], percent(c[1]), percent(c[2]), c[3]});
  }
  return percent(m[1]);
}

TEST_F(Cli, RingDiffOneServerAdded) {
  for (size_t n : {3u, 4u, 7u}) {
    SCOPED_TRACE("servers before: " + std::to_string(n));
    std::string before = write_pool("old.yml", servers(n));
    std::string after = write_pool("new.yml", servers(n + 1));
    CommandResult r = memshard({"ring", "diff", before, after});
    ASSERT_EQ(r.exit_code, 0) << r.err;
    std::vector<DiffRow> rows;
    double moved = parse_diff(r.out, rows);
    double expected = 1.0 / static_cast<double>(n + 1);
    // Ketama moves about 1/(N+1) of the keys to the new server, only those.
    EXPECT_NEAR(moved, expected, expected * 0.35) << r.out;
    std::string added = "127.0.0.1:" + std::to_string(40001 + n);
    bool seen = false;
    for (const DiffRow& row : rows) {
      if (row.address == added) {
        seen = true;
        EXPECT_EQ(row.note, "added");
        EXPECT_NEAR(row.gains, moved, 0.0001) << r.out;
        EXPECT_EQ(row.loses, 0.0);
      } else {
        EXPECT_EQ(row.note, "") << row.address;
        EXPECT_EQ(row.gains, 0.0) << row.address << " gains keys when a server is added";
      }
    }
    EXPECT_TRUE(seen) << "the added server is not listed:\n" << r.out;
  }
}

TEST_F(Cli, RingDiffTellsWhatReloadWarmupWillFind) {
  std::string before = write_pool("old.yml", servers(3));
  std::string after = write_pool("new.yml", servers(4), {{"reload_warmup", "60000"}});
  CommandResult r = memshard({"ring", "diff", before, after});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  std::vector<DiffRow> rows;
  const double moved = parse_diff(r.out, rows);
  std::smatch m;
  ASSERT_TRUE(std::regex_search(
      r.out, m,
      std::regex(R"(reload_warmup: 60000 ms: reads of the ([0-9.]+%) of keys that move)")))
      << r.out;
  EXPECT_EQ(percent(m[1]), moved) << "the share the warm-up looks up is the moved share";
  EXPECT_GT(moved, 0.1);
  // Without it, nothing is said of it.
  std::string cold = write_pool("cold.yml", servers(4));
  CommandResult c = memshard({"ring", "diff", before, cold});
  EXPECT_EQ(c.out.find("reload_warmup"), std::string::npos) << c.out;
  CommandResult show = memshard({"ring", "show", "-c", after});
  EXPECT_NE(show.out.find("reload_warmup: 60000 ms"), std::string::npos) << show.out;
}

TEST_F(Cli, RingDiffOneServerRemoved) {
  std::string before = write_pool("old.yml", servers(5));
  std::string after = write_pool("new.yml", servers(4));
  CommandResult r = memshard({"ring", "diff", before, after});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  std::vector<DiffRow> rows;
  double moved = parse_diff(r.out, rows);
  EXPECT_NEAR(moved, 0.2, 0.07) << r.out;
  bool seen = false;
  for (const DiffRow& row : rows) {
    if (row.address == "127.0.0.1:40005") {
      seen = true;
      EXPECT_EQ(row.note, "removed");
      EXPECT_NEAR(row.loses, moved, 0.0001);
    }
  }
  EXPECT_TRUE(seen) << r.out;
}

TEST_F(Cli, RingDiffSameRingMovesNothing) {
  std::string before = write_pool("old.yml", servers(4));
  // Same servers, different non-ring settings.
  std::string after = write_pool("new.yml", servers(4), {{"timeout", "100"}});
  CommandResult r = memshard({"ring", "diff", before, after});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  std::vector<DiffRow> rows;
  EXPECT_EQ(parse_diff(r.out, rows), 0.0) << r.out;
}

// Fraction of `keys` whose server differs between two configs, by lookup.
double moved_by_lookup(const std::string& before, const std::string& after, size_t n) {
  std::vector<std::string> keys;
  for (size_t i = 0; i < n; ++i) keys.push_back("k" + std::to_string(i));
  std::vector<std::string> a = ring_lookup(before, keys), b = ring_lookup(after, keys);
  if (a.size() != n || b.size() != n) {
    ADD_FAILURE() << "ring lookup failed";
    return std::nan("");
  }
  size_t changed = 0;
  for (size_t i = 0; i < n; ++i) changed += a[i] != b[i];
  return static_cast<double>(changed) / static_cast<double>(n);
}

// Regression test for a memshard bug, fixed in 9c4a09c: `ring diff`
// compared which server owns each point of the 2^32 hash space and ignored
// that the two configs hash keys differently: changing `hash:` moves ~3/4
// of the keys (ring lookup shows it) while ring diff printed "0.0000% of
// the keyspace changes server".
TEST_F(Cli, RingDiffHashChangeMovesMostKeys) {
  std::string before = write_pool("old.yml", servers(4));
  std::string after = write_pool("new.yml", servers(4), {{"hash", "md5"}});
  double by_lookup = moved_by_lookup(before, after, 20000);
  EXPECT_GT(by_lookup, 0.6);  // a new hash reassigns keys at random: ~3/4 move
  CommandResult r = memshard({"ring", "diff", before, after});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  std::vector<DiffRow> rows;
  double moved = parse_diff(r.out, rows);
  EXPECT_NEAR(moved, by_lookup, 0.05) << r.out;
}

TEST_F(Cli, RingDiffHashTagChange) {
  std::string before = write_pool("old.yml", servers(4));
  std::string after = write_pool("new.yml", servers(4), {{"hash_tag", "\"{}\""}});
  CommandResult r = memshard({"ring", "diff", before, after});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  std::vector<DiffRow> rows;
  double moved = parse_diff(r.out, rows);
  // Keys without a tag do not move; tagged ones do. The tool cannot know
  // the mix, but it must not claim that nothing can move.
  EXPECT_GT(moved, 0.0) << r.out;
}

TEST_F(Cli, RingDiffAgreesWithLookups) {
  // The moved fraction printed is what `ring lookup` sees on real keys.
  std::string before = write_pool("old.yml", servers(4));
  std::string after = write_pool("new.yml", servers(5));
  CommandResult r = memshard({"ring", "diff", before, after});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  std::vector<DiffRow> rows;
  double moved = parse_diff(r.out, rows);
  EXPECT_NEAR(moved_by_lookup(before, after, 20000), moved, 0.015);
  std::vector<std::string> keys;
  for (int i = 0; i < 20000; ++i) keys.push_back("k" + std::to_string(i));
  std::vector<std::string> a = ring_lookup(before, keys), b = ring_lookup(after, keys);
  ASSERT_EQ(a.size(), keys.size());
  ASSERT_EQ(b.size(), keys.size());
  size_t changed = 0, between_old = 0;
  for (size_t i = 0; i < keys.size(); ++i) {
    if (a[i] == b[i]) continue;
    ++changed;
    if (b[i] != "127.0.0.1:40005") ++between_old;
  }
  EXPECT_EQ(between_old, 0u) << "keys moved between servers present in both rings";
  EXPECT_GT(changed, 0u);
}

}  // namespace
}  // namespace memshard::testing
