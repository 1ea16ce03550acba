// The ring tools as functions (cli/ring_tools.h), on small configs in
// temporary files, their output checked against the rings the same text
// gives through conf::parse_config and ketama: where each key goes (and
// its copies), each server's points and exact share, and what a change of
// config moves. Errors go to the error stream with exit code 1.
#include "proxy/cli/ring_tools.h"

#include <gtest/gtest.h>
#include <stdlib.h>

#include <cstdio>
#include <filesystem>
#include <fstream>
#include <map>
#include <numeric>
#include <sstream>
#include <string>
#include <vector>

#include "conf/config.h"
#include "ketama/ring.h"

namespace memshard::proxy {
namespace {

constexpr double kHashSpace = 4294967296.0;

// A pool of `servers` of weight 1 on ports 21001..., then `extra` lines.
// Each pool listens on a port of its own: 22121 for alpha, 22122 for beta...
std::string pool_text(const std::string& name, int servers, const std::string& extra = "",
                      int first_port = 21001) {
  const int listen = 22121 + (name[0] - 'a');
  std::string text =
      name + ":\n  listen: 127.0.0.1:" + std::to_string(listen) + "\n" + extra + "  servers:\n";
  for (int i = 0; i < servers; ++i) {
    text += "   - 127.0.0.1:" + std::to_string(first_port + i) + ":1\n";
  }
  return text;
}

ketama::Ring ring_of(const std::string& text, const std::string& pool = "alpha") {
  conf::LoadResult r = conf::parse_config(text, "test.yml");
  EXPECT_TRUE(r.config) << (r.errors.empty() ? "" : r.errors.front().to_string());
  const conf::PoolConfig* p = r.config->find_pool(pool);
  std::vector<ketama::ServerEntry> entries;
  for (const auto& s : p->servers) entries.push_back(s.entry);
  return ketama::Ring::build(entries, p->ring);
}

std::vector<std::string> lines_of(const std::string& text) {
  std::vector<std::string> lines;
  std::istringstream in(text);
  for (std::string line; std::getline(in, line);) lines.push_back(line);
  return lines;
}

std::vector<std::string> fields(const std::string& line) {
  std::vector<std::string> out;
  std::istringstream in(line);
  for (std::string f; std::getline(in, f, '\t');) out.push_back(f);
  return out;
}

// "12.3456%" as a fraction.
double percent(const std::string& text) {
  EXPECT_TRUE(text.ends_with('%')) << text;
  return std::stod(text) / 100.0;
}

class RingToolsTest : public ::testing::Test {
 protected:
  RingToolsTest() {
    char dir[] = "/tmp/ring_tools_test_XXXXXX";
    EXPECT_NE(mkdtemp(dir), nullptr);
    dir_ = dir;
  }
  ~RingToolsTest() override { std::filesystem::remove_all(dir_); }

  std::string file(const std::string& name, const std::string& text) {
    const std::string path = dir_ + "/" + name;
    std::ofstream(path) << text;
    return path;
  }

  struct ToolRun {
    int code;
    std::string out, err;
  };
  ToolRun lookup(const std::string& path, const std::string& pool, std::vector<std::string> keys,
                 bool all = false, const std::string& stdin_text = "") {
    std::istringstream in(stdin_text);
    std::ostringstream out, err;
    const int code = ring_lookup(path, pool, keys, all, in, out, err);
    return {code, out.str(), err.str()};
  }
  ToolRun show(const std::string& path, const std::string& pool = "") {
    std::ostringstream out, err;
    const int code = ring_show(path, pool, out, err);
    return {code, out.str(), err.str()};
  }
  ToolRun diff(const std::string& before, const std::string& after, const std::string& pool = "") {
    std::ostringstream out, err;
    const int code = ring_diff(before, after, pool, out, err);
    return {code, out.str(), err.str()};
  }

  std::string dir_;
};

std::vector<std::string> sample_keys(int n) {
  std::vector<std::string> keys;
  for (int i = 0; i < n; ++i) keys.push_back("user:" + std::to_string(i));
  return keys;
}

TEST_F(RingToolsTest, LookupNamesEachKeysServer) {
  const std::string text = pool_text("alpha", 4);
  const std::string path = file("a.yml", text);
  const ketama::Ring ring = ring_of(text);
  const std::vector<std::string> keys = sample_keys(200);
  const ToolRun r = lookup(path, "", keys);
  EXPECT_EQ(r.code, 0) << r.err;
  const std::vector<std::string> lines = lines_of(r.out);
  ASSERT_EQ(lines.size(), keys.size());
  for (size_t i = 0; i < keys.size(); ++i) {
    EXPECT_EQ(lines[i], keys[i] + "\t" + ring.servers()[ring.lookup(keys[i])].address());
  }
}

TEST_F(RingToolsTest, LookupReadsKeysFromInputWhenNoneAreGiven) {
  const std::string path = file("a.yml", pool_text("alpha", 3));
  const std::vector<std::string> keys = sample_keys(20);
  std::string input;
  for (const std::string& k : keys) input += k + "\r\n";  // CRLF too
  const ToolRun from_args = lookup(path, "alpha", keys);
  const ToolRun from_input = lookup(path, "alpha", {}, false, input);
  EXPECT_EQ(from_input.code, 0);
  EXPECT_EQ(from_input.out, from_args.out);
}

TEST_F(RingToolsTest, LookupAllListsEveryCopyFirstCopyFirst) {
  const std::string text = pool_text("alpha", 4, "  replicas: 3\n");
  const std::string path = file("r.yml", text);
  const ketama::Ring ring = ring_of(text);
  const std::vector<std::string> keys = sample_keys(100);
  const std::vector<std::string> all = lines_of(lookup(path, "", keys, true).out);
  const std::vector<std::string> first = lines_of(lookup(path, "", keys, false).out);
  ASSERT_EQ(all.size(), keys.size());
  ASSERT_EQ(first.size(), keys.size());
  for (size_t i = 0; i < keys.size(); ++i) {
    std::string want = keys[i] + "\t";
    const std::vector<size_t> list = ring.preference_list(keys[i], 3);
    ASSERT_EQ(list.size(), 3u);
    for (size_t c = 0; c < list.size(); ++c) {
      want += (c ? " " : "") + ring.servers()[list[c]].address();
    }
    EXPECT_EQ(all[i], want);
    EXPECT_EQ(first[i], keys[i] + "\t" + ring.servers()[list[0]].address())
        << "without --all, the first copy alone";
  }
}

TEST_F(RingToolsTest, APoolMustBeNamedWhenThereAreSeveralAndMustExist) {
  const std::string path = file("two.yml", pool_text("alpha", 2) + pool_text("beta", 2));
  const ToolRun unnamed = lookup(path, "", {"k"});
  EXPECT_EQ(unnamed.code, 1);
  EXPECT_EQ(unnamed.out, "");
  EXPECT_NE(unnamed.err.find("alpha"), std::string::npos) << unnamed.err;
  EXPECT_NE(unnamed.err.find("beta"), std::string::npos) << unnamed.err;
  const ToolRun unknown = lookup(path, "gamma", {"k"});
  EXPECT_EQ(unknown.code, 1);
  EXPECT_NE(unknown.err.find("gamma"), std::string::npos) << unknown.err;
  EXPECT_EQ(lookup(path, "beta", {"k"}).code, 0);
  EXPECT_EQ(show(path).code, 1);
}

TEST_F(RingToolsTest, AConfigThatDoesNotLoadIsReportedWithItsError) {
  const std::string path = file("bad.yml", "alpha:\n  listen: 127.0.0.1:22121\n");
  const ToolRun r = lookup(path, "", {"k"});
  EXPECT_EQ(r.code, 1);
  EXPECT_EQ(r.out, "");
  EXPECT_NE(r.err.find("servers"), std::string::npos) << r.err;
  EXPECT_EQ(lookup(dir_ + "/missing.yml", "", {"k"}).code, 1);
  EXPECT_EQ(show(path).code, 1);
  EXPECT_EQ(diff(path, path).code, 1);
}

TEST_F(RingToolsTest, APoolWhoseServersComeFromDnsHasNoRingInTheFile) {
  const std::string path =
      file("dns.yml", "alpha:\n  listen: 127.0.0.1:22121\n  servers_srv: _memcache._tcp.m.test\n");
  for (const ToolRun& r : {lookup(path, "", {"k"}), show(path), diff(path, path)}) {
    EXPECT_EQ(r.code, 1);
    EXPECT_EQ(r.out, "");
    EXPECT_NE(r.err.find("takes its servers from DNS (servers_srv _memcache._tcp.m.test)"),
              std::string::npos)
        << r.err;
  }
}

TEST_F(RingToolsTest, ARouteIntoAPoolWhoseServersComeFromDnsHasNoServerInTheFile) {
  const std::string path = file("routed-dns.yml",
                                "front:\n  listen: 127.0.0.1:22121\n  routes:\n    - pool: main\n"
                                "main:\n  servers_srv: _memcache._tcp.m.test\n");
  const ToolRun r = lookup(path, "front", {"k"});
  EXPECT_EQ(r.code, 0) << r.err;
  EXPECT_EQ(r.out, "k\t(default)\tmain\t-\n");
}

TEST_F(RingToolsTest, ShowGivesEachServersPointsAndExactShare) {
  const std::string text =
      "alpha:\n  listen: 127.0.0.1:22121\n  servers:\n   - 127.0.0.1:21001:1\n"
      "   - 127.0.0.1:21002:2 big\n   - 127.0.0.1:21003:1\n";
  const std::string path = file("w.yml", text);
  const ketama::Ring ring = ring_of(text);
  const ToolRun r = show(path);
  ASSERT_EQ(r.code, 0) << r.err;
  const std::vector<std::string> lines = lines_of(r.out);
  ASSERT_GE(lines.size(), 2u + ring.servers().size());
  EXPECT_EQ(lines[0], "pool alpha: twemproxy mode, ketama distribution, hash fnv1a_64, " +
                          std::to_string(ring.points().size()) + " points");
  EXPECT_EQ(lines[1], "server\tring_name\tweight\tpoints\tshare");
  // The exact share: the hash values of the arcs each server owns.
  std::vector<double> owned(ring.servers().size(), 0.0);
  uint64_t start = 0;
  for (const ketama::Arc& arc : ring.arcs()) {
    owned[arc.server] += static_cast<double>(uint64_t{arc.last} + 1 - start);
    start = uint64_t{arc.last} + 1;
  }
  size_t points = 0;
  double shares = 0;
  for (size_t i = 0; i < ring.servers().size(); ++i) {
    const std::vector<std::string> f = fields(lines[2 + i]);
    ASSERT_EQ(f.size(), 5u) << lines[2 + i];
    EXPECT_EQ(f[0], ring.servers()[i].address());
    EXPECT_EQ(f[1], ring.ring_name(i));
    EXPECT_EQ(f[2], std::to_string(ring.servers()[i].weight));
    EXPECT_EQ(f[3], std::to_string(ring.point_count(i)));
    EXPECT_NEAR(percent(f[4]), owned[i] / kHashSpace, 5e-7) << f[0];
    points += std::stoul(f[3]);
    shares += percent(f[4]);
  }
  EXPECT_EQ(points, ring.points().size());
  EXPECT_NEAR(shares, 1.0, 1e-5);
  EXPECT_EQ(fields(lines[3])[1], "big") << "twemproxy names a server by its name";
  EXPECT_GT(std::stoul(fields(lines[3])[3]), std::stoul(fields(lines[2])[3])) << "weight 2";
}

TEST_F(RingToolsTest, ShowOfAReplicatedPoolAddsEachServersShareOfCopies) {
  const std::string text = pool_text("alpha", 4, "  replicas: 2\n");
  const ToolRun r = show(file("r.yml", text));
  ASSERT_EQ(r.code, 0) << r.err;
  const std::vector<std::string> lines = lines_of(r.out);
  EXPECT_NE(lines[0].find(", replicas: 2"), std::string::npos) << lines[0];
  EXPECT_EQ(lines[1], "server\tring_name\tweight\tpoints\tshare\tcopies");
  double shares = 0, copies = 0;
  for (size_t i = 0; i < 4; ++i) {
    const std::vector<std::string> f = fields(lines[2 + i]);
    ASSERT_EQ(f.size(), 6u) << lines[2 + i];
    shares += percent(f[4]);
    copies += percent(f[5]);
  }
  EXPECT_NEAR(shares, 1.0, 1e-5);
  EXPECT_NEAR(copies, 1.0, 1e-5) << "every copy of every key counted once";
  EXPECT_EQ(r.out.find("warning"), std::string::npos) << "4 servers hold 2 copies";
}

TEST_F(RingToolsTest, DiffOfTheSameRingMovesNothing) {
  const std::string text = pool_text("alpha", 3);
  const ToolRun r = diff(file("a.yml", text), file("b.yml", text));
  ASSERT_EQ(r.code, 0) << r.err;
  const std::vector<std::string> lines = lines_of(r.out);
  EXPECT_EQ(lines[0], "pool alpha: 0.0000% of the keyspace changes server");
  for (size_t i = 2; i < lines.size(); ++i) {
    const std::vector<std::string> f = fields(lines[i]);
    ASSERT_GE(f.size(), 3u) << lines[i];
    EXPECT_EQ(f[1], "0.0000%") << lines[i];
    EXPECT_EQ(f[2], "0.0000%") << lines[i];
  }
}

TEST_F(RingToolsTest, DiffOfARemovedServerMovesItsShareOntoTheOthers) {
  // Equal weights in twemproxy mode: the servers that stay keep their
  // points (160 each), so exactly the removed server's keys move.
  const std::string before_text = pool_text("alpha", 3);
  const std::string after_text = pool_text("alpha", 2);
  const std::string before = file("a.yml", before_text);
  const std::vector<std::string> shown = lines_of(show(before).out);
  const std::string removed_share = fields(shown[4])[4];  // the third server's
  const ToolRun r = diff(before, file("b.yml", after_text));
  ASSERT_EQ(r.code, 0) << r.err;
  const std::vector<std::string> lines = lines_of(r.out);
  EXPECT_EQ(lines[0], "pool alpha: " + removed_share + " of the keyspace changes server");
  EXPECT_EQ(lines[1], "server\tgains\tloses\tnote");
  std::map<std::string, std::vector<std::string>> by_server;
  for (size_t i = 2; i < lines.size(); ++i) by_server[fields(lines[i])[0]] = fields(lines[i]);
  ASSERT_EQ(by_server.size(), 3u);
  const std::vector<std::string>& gone = by_server["127.0.0.1:21003"];
  ASSERT_EQ(gone.size(), 4u);
  EXPECT_EQ(gone[2], removed_share);
  EXPECT_EQ(gone[3], "removed");
  double gained = 0;
  for (const char* stays : {"127.0.0.1:21001", "127.0.0.1:21002"}) {
    EXPECT_EQ(by_server[stays][2], "0.0000%") << stays << " loses nothing";
    gained += percent(by_server[stays][1]);
  }
  EXPECT_NEAR(gained, percent(removed_share), 1e-5) << "what left went to those that stay";
}

TEST_F(RingToolsTest, DiffToMoreReplicasMovesNoCopyAndFillsTheNewOnes) {
  // From one copy to two on the same servers: every old copy is still in
  // its key's list (moved 0), and half the new copies are second copies
  // that start cold.
  const ToolRun r = diff(file("a.yml", pool_text("alpha", 3)),
                         file("b.yml", pool_text("alpha", 3, "  replicas: 2\n")));
  ASSERT_EQ(r.code, 0) << r.err;
  EXPECT_NE(r.out.find("\nreplicas: 1 -> 2\n"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("\nprimaries moved: 0.0000% of keys"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("\ncopies moved: 0.0000% of copies"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("\ncopies to fill: 50.0000% of the new copies"), std::string::npos) << r.out;
}

TEST_F(RingToolsTest, DiffWithoutAPoolComparesThePoolOfTheSameName) {
  const std::string before = file("a.yml", pool_text("beta", 2));
  const std::string after = file("b.yml", pool_text("alpha", 2) + pool_text("beta", 3));
  const ToolRun r = diff(before, after);
  ASSERT_EQ(r.code, 0) << r.err;
  EXPECT_TRUE(r.out.starts_with("pool beta: ")) << r.out;
  EXPECT_NE(r.out.find("127.0.0.1:21003\t"), std::string::npos) << "beta's added server";
  EXPECT_NE(r.out.find("added"), std::string::npos);
  const ToolRun missing = diff(file("c.yml", pool_text("gamma", 2)), after);
  EXPECT_EQ(missing.code, 1);
  EXPECT_NE(missing.err.find("gamma"), std::string::npos) << missing.err;
}

// mcrouter's hashes: the key's index in the list is mcrouter's, the shares
// are expectations, and a diff samples keys.
TEST_F(RingToolsTest, LookupOfAnMcrouterPoolPicksMcroutersIndex) {
  const std::string text = pool_text("alpha", 5, "  distribution: ch3\n  hash_salt: s\n");
  const ToolRun r = lookup(file("a.yml", text), "", {"user:1", "user:2|#|x", "user:3"});
  ASSERT_EQ(r.code, 0) << r.err;
  EXPECT_EQ(lines_of(show(file("a.yml", text)).out)[0],
            "pool alpha: ch3 distribution (mcrouter's), hash furc_hash, hash_salt: \"s\"");
  const ketama::Ring ring = ring_of(text);
  const std::vector<std::string> lines = lines_of(r.out);
  ASSERT_EQ(lines.size(), 3u);
  EXPECT_EQ(lines[1], "user:2|#|x\t" + ring.servers()[ring.lookup("user:2")].address());
  for (const std::string& line : lines) {
    const std::vector<std::string> f = fields(line);
    EXPECT_EQ(f[1], ring.servers()[ring.lookup(f[0])].address()) << line;
  }
}

TEST_F(RingToolsTest, ShowOfAWch3PoolGivesItsWeightsAndExpectedShares) {
  const std::string text =
      "alpha:\n  listen: 127.0.0.1:22121\n  distribution: wch3\n  servers:\n"
      "   - 127.0.0.1:21001:1\n   - 127.0.0.1:21002:0.5\n   - 127.0.0.1:21003:0\n";
  const ToolRun r = show(file("a.yml", text));
  ASSERT_EQ(r.code, 0) << r.err;
  const std::vector<std::string> lines = lines_of(r.out);
  ASSERT_GE(lines.size(), 6u) << r.out;
  EXPECT_EQ(lines[0], "pool alpha: wch3 distribution (mcrouter's), hash furc_hash");
  EXPECT_EQ(fields(lines[2])[2], "1");
  EXPECT_EQ(fields(lines[3])[2], "0.5");
  EXPECT_EQ(fields(lines[4])[2], "0");
  // Kept by weight: 1 and 0.5 split about 2:1, the zero weight nearly none.
  EXPECT_NEAR(percent(fields(lines[2])[4]), 2.0 / 3.0, 0.02);
  EXPECT_NEAR(percent(fields(lines[3])[4]), 1.0 / 3.0, 0.02);
  EXPECT_LT(percent(fields(lines[4])[4]), 1e-4);
  EXPECT_NE(r.out.find("\nshares: expected for keys that hash independently"), std::string::npos)
      << r.out;
}

TEST_F(RingToolsTest, DiffOfAnMcrouterPoolIsSampled) {
  // ch3 from 4 servers to 5: furc moves a fifth of the keys, all onto the
  // new server.
  const ToolRun r = diff(file("a.yml", pool_text("alpha", 4, "  distribution: ch3\n")),
                         file("b.yml", pool_text("alpha", 5, "  distribution: ch3\n")));
  ASSERT_EQ(r.code, 0) << r.err;
  const std::vector<std::string> lines = lines_of(r.out);
  EXPECT_TRUE(
      lines[0].ends_with(" of the keyspace changes server (sampled: 100000 keys looked up "
                         "in both, as mcrouter's hashes have no ring to compare)"))
      << lines[0];
  EXPECT_NEAR(percent(lines[0].substr(12, lines[0].find(' ', 12) - 12)), 0.2, 0.01) << lines[0];
  for (size_t i = 2; i < lines.size(); ++i) {
    const std::vector<std::string> f = fields(lines[i]);
    if (f[0] != "127.0.0.1:21005") {
      EXPECT_EQ(f[1], "0.0000%") << lines[i];
    }
  }
  // With copies: sampled too.
  const ToolRun c =
      diff(file("c.yml", pool_text("alpha", 4, "  distribution: ch3\n  replicas: 2\n")),
           file("d.yml", pool_text("alpha", 4, "  distribution: ch3\n  replicas: 2\n")));
  ASSERT_EQ(c.code, 0) << c.err;
  EXPECT_NE(c.out.find("\ncopies moved: 0.0000% of copies (a copy moves when a server of the "
                       "key's old list is not in its new list) (sampled: 100000 keys)"),
            std::string::npos)
      << c.out;
}

}  // namespace
}  // namespace memshard::proxy
