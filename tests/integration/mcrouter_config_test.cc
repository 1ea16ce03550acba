// mcrouter's JSON config run by the real memshard, against real memcached
// (issue 63): keys are set THROUGH memshard with an mcrouter config, then
// read directly from each server, and each must be where mcrouter puts it:
// the golden table made by mcrouter's own code (tests/ketama/data) names
// the server of each key for every hash and pool size used here. One test
// per supported handle, the wiki's example configs, and the command line:
// -t, --listen, convert, ring lookup and ring diff on mcrouter configs.
#include <gtest/gtest.h>

#include <chrono>
#include <fstream>
#include <map>
#include <memory>
#include <optional>
#include <regex>
#include <set>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "cli_util.h"
#include "harness.h"
#include "mcrouter_golden.h"

namespace memshard::testing {
namespace {

constexpr size_t kKeys = 40;  // the keys whose index the golden table lists

const std::vector<std::string>& keys() {
  static const std::vector<std::string> k = golden::mcrouter_keys(kKeys);
  return k;
}

// mcrouter's index of each key, for a variant of the table and a pool size.
std::vector<uint32_t> mcrouter_index(const std::string& variant, uint32_t servers) {
  static const std::vector<golden::Placement> table = golden::mcrouter_placements(
      std::string(MEMSHARD_KETAMA_TEST_DATA) + "/mcrouter_placements.txt");
  for (const golden::Placement& p : table)
    if (p.variant == variant && p.servers == servers) return p.first;
  ADD_FAILURE() << "no line for " << variant << " " << servers << " in the golden table";
  return std::vector<uint32_t>(kKeys, 0);
}

// A JSON list of the servers fleet[first .. first + n).
std::string servers_json(Fleet& fleet, size_t first, size_t n) {
  std::string out = "[";
  for (size_t i = 0; i < n; ++i)
    out += std::string(i ? ", " : "") + "\"" + fleet[first + i].address() + "\"";
  return out + "]";
}

// The wch3 weights of the golden table, as a JSON list.
std::string weights_json(size_t n) {
  std::string out = "[";
  for (uint32_t i = 0; i < n; ++i)
    out += std::string(i ? ", " : "") + golden::mcrouter_weight_text(i);
  return out + "]";
}

// memshard running an mcrouter config, listening where --listen says.
class Running {
 public:
  Running(const TempDir& dir, const std::string& json, const std::string& name = "mcrouter.json")
      : port_(free_port()), path_(dir.write(name, json)) {
    memshard_ = std::make_unique<Memshard>(
        path_, std::vector<std::string>{"--listen", "127.0.0.1:" + std::to_string(port_)}, port_);
  }
  uint16_t port() const { return port_; }
  const std::string& path() const { return path_; }

 private:
  uint16_t port_;
  std::string path_;
  std::unique_ptr<Memshard> memshard_;
};

std::string value_of(size_t i) {
  return "value-" + std::to_string(i);
}

void set_all(uint16_t port, const std::string& extra = "") {
  RawClient client(port);
  std::string request, want;
  for (size_t i = 0; i < keys().size(); ++i) {
    request += set_command(keys()[i], value_of(i), "set", 0, extra);
    want += "STORED\r\n";
  }
  client.send(request);
  ASSERT_EQ(client.read_count("\r\n", keys().size()), want);
}

// For each key, the servers among fleet[0 .. n) that hold it (with its value).
std::vector<std::set<size_t>> holders(Fleet& fleet, size_t n) {
  std::map<std::string, size_t> index_of_key;
  for (size_t i = 0; i < keys().size(); ++i) index_of_key[keys()[i]] = i;
  std::vector<std::set<size_t>> out(keys().size());
  for (size_t s = 0; s < n; ++s) {
    if (!fleet[s].process().running()) continue;
    RawClient client(fleet[s].port());
    std::string request = "get";
    for (const std::string& k : keys()) request += " " + k;
    std::vector<Value> values;
    EXPECT_TRUE(parse_values(client.roundtrip(request + "\r\n", "END\r\n"), values));
    for (const Value& v : values) {
      const size_t i = index_of_key.at(v.key);
      EXPECT_EQ(v.data, value_of(i));
      out[i].insert(s);
    }
  }
  return out;
}

// Each key on exactly the servers `want[i]` (fleet indexes).
void expect_placed(const std::vector<std::set<size_t>>& found,
                   const std::vector<std::set<size_t>>& want, const std::string& what) {
  ASSERT_EQ(found.size(), want.size());
  for (size_t i = 0; i < found.size(); ++i) {
    std::string have, expected;
    for (size_t s : found[i]) have += " " + std::to_string(s);
    for (size_t s : want[i]) expected += " " + std::to_string(s);
    EXPECT_EQ(found[i], want[i]) << what << ": key #" << i << " '" << printable(keys()[i])
                                 << "' is on servers" << have << ", mcrouter puts it on"
                                 << expected;
  }
}

// want[i] = {offset + index[i]}: one copy, where mcrouter's hash says.
std::vector<std::set<size_t>> one_copy(const std::vector<uint32_t>& index, size_t offset = 0) {
  std::vector<std::set<size_t>> out;
  for (uint32_t i : index) out.push_back({offset + i});
  return out;
}

std::string config_one_pool(const std::string& pool_extra, const std::string& route, Fleet& fleet,
                            size_t n) {
  return "{\n  // one pool\n  \"pools\": {\"A\": {\"servers\": " + servers_json(fleet, 0, n) +
         pool_extra + "}},\n  \"route\": " + route + ",\n}\n";
}

class McrouterConfig : public ::testing::Test {
 protected:
  TempDir dir_;
};

// ---- each handle ----

struct HashCase {
  std::string name;
  std::string pool_extra;  // after the pool's servers
  std::string route;
  std::string variant;  // of the golden table
};

class McrouterHashes : public McrouterConfig, public ::testing::WithParamInterface<HashCase> {};

TEST_P(McrouterHashes, KeysAreWhereMcrouterPutsThem) {
  const HashCase& c = GetParam();
  constexpr size_t n = 5;
  Fleet fleet(n);
  std::string pool_extra = c.pool_extra;
  if (pool_extra == "weights") pool_extra = ", \"weights\": " + weights_json(n);
  const std::string json = config_one_pool(pool_extra, c.route, fleet, n);
  SCOPED_TRACE(json);
  Running memshard(dir_, json);
  set_all(memshard.port());
  expect_placed(holders(fleet, n), one_copy(mcrouter_index(c.variant, n)), c.name);
}

INSTANTIATE_TEST_SUITE_P(
    Handles, McrouterHashes,
    ::testing::Values(
        HashCase{"PoolRoute", "", "\"PoolRoute|A\"", "ch3"},
        HashCase{"PoolRouteWeights", "weights", "\"PoolRoute|A\"", "wch3"},
        HashCase{"PoolRouteSalt", "",
                 R"({"type": "PoolRoute", "pool": "A", "hash": {"salt": "mc-salt"}})", "ch3+salt"},
        HashCase{"PoolRouteCrc32Salt", "",
                 R"({"type": "PoolRoute", "pool": "A",
                     "hash": {"hash_func": "Crc32", "salt": "mc-salt"}})",
                 "crc32+salt"},
        HashCase{"PoolRouteWeightsSalt", "weights",
                 R"({"type": "PoolRoute", "pool": "A", "hash": {"salt": "mc-salt"}})", "wch3+salt"},
        HashCase{"HashRouteShort", "weights", "\"HashRoute|Pool|A\"", "ch3"},
        HashCase{"HashRouteCrc32", "",
                 R"({"type": "HashRoute", "children": "Pool|A", "hash_func": "Crc32"})", "crc32"},
        HashCase{"HashRouteWch3Salt", "",
                 R"({"type": "HashRoute", "children": "Pool|A", "hash_func": "WeightedCh3",
                     "salt": "mc-salt", "weights": )" +
                     weights_json(5) + "}",
                 "wch3+salt"},
        HashCase{"OperationSelectorSameRoute", "",
                 R"({"type": "OperationSelectorRoute", "default_policy": "PoolRoute|A",
                     "operation_policies": {"get": "PoolRoute|A"}})",
                 "ch3"},
        HashCase{"NamedHandle", "", R"({"type": "PoolRoute", "name": "main", "pool": "A"})",
                 "ch3"}),
    [](const auto& p) { return p.param.name; });

TEST_F(McrouterConfig, PrefixSelectorRoute) {
  Fleet fleet(8);  // A: 0-4, B: 5-7
  const std::string json = R"({"pools": {"A": {"servers": )" + servers_json(fleet, 0, 5) +
                           R"(}, "B": {"servers": )" + servers_json(fleet, 5, 3) +
                           R"(}}, "route": {"type": "PrefixSelectorRoute",
                           "policies": {"key:": "PoolRoute|B"}, "wildcard": "PoolRoute|A"}})";
  SCOPED_TRACE(json);
  Running memshard(dir_, json);
  set_all(memshard.port());
  const std::vector<uint32_t> in_a = mcrouter_index("ch3", 5), in_b = mcrouter_index("ch3", 3);
  std::vector<std::set<size_t>> want;
  for (size_t i = 0; i < kKeys; ++i) {
    const bool b = keys()[i].starts_with("key:");
    want.push_back({b ? 5 + in_b[i] : in_a[i]});
  }
  expect_placed(holders(fleet, 8), want, "PrefixSelectorRoute");
}

TEST_F(McrouterConfig, AllSyncOverAPoolIsACopyOnEachServer) {
  Fleet fleet(3);
  const std::string json = config_one_pool("", R"({"type": "OperationSelectorRoute",
      "operation_policies": {"get": "LatestRoute|Pool|A"},
      "default_policy": "AllSyncRoute|Pool|A"})",
                                           fleet, 3);
  SCOPED_TRACE(json);
  Running memshard(dir_, json);
  set_all(memshard.port());
  expect_placed(holders(fleet, 3), std::vector<std::set<size_t>>(kKeys, {0, 1, 2}),
                "AllSyncRoute|Pool|A");
  // A copy gone: the reads find the others (LatestRoute fails over).
  fleet[0].process().stop();
  RawClient client(memshard.port());
  EXPECT_EQ(client.roundtrip("get " + keys()[0] + "\r\n", "END\r\n"),
            "VALUE " + keys()[0] + " 0 " + std::to_string(value_of(0).size()) + "\r\n" +
                value_of(0) + "\r\nEND\r\n");
}

TEST_F(McrouterConfig, AllSyncOverPoolRoutesIsACopyInEachPool) {
  Fleet fleet(8);
  const std::string json = R"({"pools": {"A": {"servers": )" + servers_json(fleet, 0, 5) +
                           R"(}, "B": {"servers": )" + servers_json(fleet, 5, 3) +
                           R"(}}, "route": {"type": "AllSyncRoute",
                           "children": ["PoolRoute|A", "PoolRoute|B"]}})";
  SCOPED_TRACE(json);
  Running memshard(dir_, json);
  set_all(memshard.port());
  const std::vector<uint32_t> in_a = mcrouter_index("ch3", 5), in_b = mcrouter_index("ch3", 3);
  std::vector<std::set<size_t>> want;
  for (size_t i = 0; i < kKeys; ++i) want.push_back({in_a[i], 5 + in_b[i]});
  expect_placed(holders(fleet, 8), want, "AllSyncRoute over PoolRoutes");
}

TEST_F(McrouterConfig, MissFailoverReadsTheNextPool) {
  Fleet fleet(5);  // A: 0-2, B: 3-4
  const std::string json = R"({"pools": {"A": {"servers": )" + servers_json(fleet, 0, 3) +
                           R"(}, "B": {"servers": )" + servers_json(fleet, 3, 2) +
                           R"(}}, "route": {"type": "OperationSelectorRoute",
      "operation_policies": {"get": {"type": "MissFailoverRoute",
                                     "children": ["PoolRoute|A", "PoolRoute|B"]}},
      "default_policy": {"type": "AllInitialRoute", "children": ["PoolRoute|A", "PoolRoute|B"]}}})";
  SCOPED_TRACE(json);
  Running memshard(dir_, json);
  set_all(memshard.port());
  const std::vector<uint32_t> in_a = mcrouter_index("ch3", 3), in_b = mcrouter_index("ch3", 2);
  std::vector<std::set<size_t>> want;
  for (size_t i = 0; i < kKeys; ++i) want.push_back({in_a[i], 3 + in_b[i]});
  expect_placed(holders(fleet, 5), want, "AllInitialRoute over PoolRoutes");
  // Gone from A (deleted there directly): the get finds it in B.
  RawClient direct(fleet[in_a[0]].port());
  ASSERT_EQ(direct.roundtrip("delete " + keys()[0] + "\r\n"), "DELETED\r\n");
  RawClient client(memshard.port());
  EXPECT_NE(client.roundtrip("get " + keys()[0] + "\r\n", "END\r\n").find(value_of(0)),
            std::string::npos);
}

TEST_F(McrouterConfig, FailoverWithExptimeIsTheGutter) {
  Fleet fleet(5);  // A: 0-2, G: 3-4
  const std::string json = R"({"pools": {"A": {"servers": )" + servers_json(fleet, 0, 3) +
                           R"(}, "G": {"servers": )" + servers_json(fleet, 3, 2) +
                           R"(}}, "route": {"type": "FailoverWithExptimeRoute",
      "normal": "PoolRoute|A", "failover": "PoolRoute|G", "failover_exptime": 30}})";
  SCOPED_TRACE(json);
  Running memshard(dir_, json);
  set_all(memshard.port());
  const std::vector<uint32_t> in_a = mcrouter_index("ch3", 3), in_g = mcrouter_index("ch3", 2);
  expect_placed(holders(fleet, 5), one_copy(in_a), "FailoverWithExptimeRoute, all up");
  // A's server 1 down: its keys fail over to G, where mcrouter's hash over
  // G puts them, their expiry capped at failover_exptime.
  fleet.flush_all();
  fleet[1].process().stop();
  set_all(memshard.port());
  std::vector<std::set<size_t>> want;
  for (size_t i = 0; i < kKeys; ++i) want.push_back({in_a[i] == 1 ? 3 + in_g[i] : in_a[i]});
  expect_placed(holders(fleet, 5), want, "FailoverWithExptimeRoute, A's server 1 down");
  for (size_t i = 0; i < kKeys; ++i) {
    if (in_a[i] != 1 || !keys()[i].starts_with("key:")) continue;
    RawClient g(fleet[3 + in_g[i]].port());
    const std::string reply = g.roundtrip("mg " + keys()[i] + " t\r\n");
    ASSERT_TRUE(reply.starts_with("HD t")) << reply;
    const int ttl = std::stoi(reply.substr(4));
    EXPECT_GT(ttl, 0);
    EXPECT_LE(ttl, 30);
  }
}

// ---- the wiki's examples ----

// The example with its servers replaced, in order, by the fleet's.
std::string example_on(const std::string& name, Fleet& fleet, size_t* used) {
  std::ifstream in(std::string(MEMSHARD_CONF_EXAMPLES_DIR) + "/mcrouter/" + name);
  std::stringstream text;
  text << in.rdbuf();
  const std::string json = text.str();
  static const std::regex server(R"("(\[[0-9a-fA-F:]+\]|[0-9.]+):[0-9]+")");
  std::string out;
  size_t next = 0;
  auto it = std::sregex_iterator(json.begin(), json.end(), server);
  size_t last = 0;
  for (; it != std::sregex_iterator(); ++it) {
    out += json.substr(last, static_cast<size_t>(it->position()) - last);
    out += "\"" + fleet[next++].address() + "\"";
    last = static_cast<size_t>(it->position() + it->length());
  }
  out += json.substr(last);
  *used = next;
  return out;
}

TEST_F(McrouterConfig, WikiShardedPools) {
  Fleet fleet(2);
  size_t used = 0;
  const std::string json = example_on("sharded.json", fleet, &used);
  ASSERT_EQ(used, 2u);
  Running memshard(dir_, json);
  set_all(memshard.port());
  expect_placed(holders(fleet, 2), one_copy(mcrouter_index("ch3", 2)), "sharded.json");
}

TEST_F(McrouterConfig, WikiReplicatedPools) {
  Fleet fleet(2);
  size_t used = 0;
  const std::string json = example_on("replicated.json", fleet, &used);
  ASSERT_EQ(used, 2u);
  Running memshard(dir_, json);
  set_all(memshard.port());
  expect_placed(holders(fleet, 2), std::vector<std::set<size_t>>(kKeys, {0, 1}), "replicated.json");
}

TEST_F(McrouterConfig, WikiPrefixRouting) {
  Fleet fleet(8);  // workload1, workload2, workload3, common_cache: two servers each
  size_t used = 0;
  const std::string json = example_on("prefix-routing.json", fleet, &used);
  ASSERT_EQ(used, 8u);
  Running memshard(dir_, json);
  set_all(memshard.port());
  const std::vector<uint32_t> in2 = mcrouter_index("ch3", 2);
  std::vector<std::set<size_t>> want;
  for (size_t i = 0; i < kKeys; ++i) {
    const std::string& k = keys()[i];
    const size_t pool = k.starts_with("ab")  ? 2
                        : k.starts_with("a") ? 0
                        : k.starts_with("b") ? 1
                                             : 3;
    want.push_back({pool * 2 + in2[i]});
  }
  expect_placed(holders(fleet, 8), want, "prefix-routing.json");
}

// The TTL a server keeps for `key` (-1: none; nullopt: not there).
std::optional<long> ttl_on(uint16_t port, const std::string& key) {
  RawClient c(port);
  const std::string reply = c.roundtrip("mg " + key + " t\r\nmn\r\n", "MN\r\n");
  if (reply.rfind("HD t", 0) != 0) return std::nullopt;
  return std::stol(reply.substr(4));
}

// Waits until `key` is on the server at `port` (a get's copy lands
// behind its answer).
bool lands(uint16_t port, const std::string& key) {
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(5);
  while (!ttl_on(port, key)) {
    if (std::chrono::steady_clock::now() > deadline) return false;
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  return true;
}

// The wiki's "Cold cache warm up": a key only in the warm pool is read
// through memshard, then found on its cold server (mcrouter's ch3
// placement) with the route's exptime; a write goes to the cold pool only.
TEST_F(McrouterConfig, WikiColdCacheWarmUp) {
  Fleet fleet(4);  // cold: 0, 1; warm: 2, 3
  size_t used = 0;
  const std::string json = example_on("cold-cache-warmup.json", fleet, &used);
  ASSERT_EQ(used, 4u);
  const std::vector<uint32_t> in2 = mcrouter_index("ch3", 2);
  const size_t half = kKeys / 2;
  for (size_t i = 0; i < half; ++i) {
    RawClient warm(fleet[2 + in2[i]].port());
    ASSERT_EQ(warm.roundtrip(set_command(keys()[i], value_of(i))), "STORED\r\n");
  }
  Running memshard(dir_, json);
  RawClient client(memshard.port());
  std::string request = "get";
  for (const std::string& k : keys()) request += " " + k;
  std::vector<Value> values;
  ASSERT_TRUE(parse_values(client.roundtrip(request + "\r\n", "END\r\n"), values));
  ASSERT_EQ(values.size(), half) << "the warm keys, and none of the others";
  for (size_t i = 0; i < half; ++i) {
    EXPECT_EQ(values[i].key, keys()[i]);
    EXPECT_EQ(values[i].data, value_of(i));
    ASSERT_TRUE(lands(fleet[in2[i]].port(), keys()[i])) << "key #" << i << " not copied cold";
    const auto ttl = ttl_on(fleet[in2[i]].port(), keys()[i]);
    EXPECT_LE(*ttl, 3600) << i;
    EXPECT_GE(*ttl, 3590) << i;
  }
  // Writes: the cold pool only, where mcrouter's ch3 puts each key.
  for (size_t i = half; i < kKeys; ++i)
    ASSERT_EQ(client.roundtrip(set_command(keys()[i], value_of(i))), "STORED\r\n");
  std::vector<std::set<size_t>> want;
  for (size_t i = 0; i < kKeys; ++i)
    want.push_back(i < half ? std::set<size_t>{in2[i], 2 + in2[i]} : std::set<size_t>{in2[i]});
  expect_placed(holders(fleet, 4), want, "cold-cache-warmup.json");
}

// The wiki's "Two level caching": writes go to the shared pool (where
// mcrouter's ch3 puts each key) and to the local server with a 10 s
// expiry; a read that misses locally is found shared and copied local
// with the WarmUpRoute's 10 s.
TEST_F(McrouterConfig, WikiTwoLevelCaching) {
  Fleet fleet(3);  // shared: 0, 1; local: 2
  size_t used = 0;
  const std::string json = example_on("two-level-caching.json", fleet, &used);
  ASSERT_EQ(used, 3u);
  const std::vector<uint32_t> in2 = mcrouter_index("ch3", 2);
  // Only shared holds the first key: read through memshard, copied local.
  {
    RawClient shared(fleet[in2[0]].port());
    ASSERT_EQ(shared.roundtrip(set_command(keys()[0], value_of(0))), "STORED\r\n");
  }
  Running memshard(dir_, json);
  RawClient client(memshard.port());
  EXPECT_EQ(client.roundtrip("get " + keys()[0] + "\r\n", "END\r\n"),
            "VALUE " + keys()[0] + " 0 " + std::to_string(value_of(0).size()) + "\r\n" +
                value_of(0) + "\r\nEND\r\n");
  ASSERT_TRUE(lands(fleet[2].port(), keys()[0])) << "not copied to the local pool";
  EXPECT_LE(*ttl_on(fleet[2].port(), keys()[0]), 10);
  EXPECT_EQ(ttl_on(fleet[in2[0]].port(), keys()[0]), -1L) << "the shared copy is left alone";
  // Writes: both pools, the local copy with its expiry set to 10 s.
  set_all(memshard.port());
  std::vector<std::set<size_t>> want;
  for (size_t i = 0; i < kKeys; ++i) want.push_back({in2[i], 2});
  expect_placed(holders(fleet, 3), want, "two-level-caching.json");
  for (size_t i = 0; i < kKeys; ++i) {
    const auto local = ttl_on(fleet[2].port(), keys()[i]);
    ASSERT_TRUE(local) << i;
    EXPECT_LE(*local, 10) << i;
    EXPECT_GE(*local, 5) << i;
    EXPECT_EQ(ttl_on(fleet[in2[i]].port(), keys()[i]), -1L) << i;
  }
  // Reads: the local copy first.
  {
    RawClient local(fleet[2].port());
    ASSERT_EQ(local.roundtrip(set_command(keys()[1], "local-only")), "STORED\r\n");
  }
  EXPECT_EQ(client.roundtrip("get " + keys()[1] + "\r\n", "END\r\n"),
            "VALUE " + keys()[1] + " 0 10\r\nlocal-only\r\nEND\r\n");
}

// NullRoute for a prefix: those keys are answered by memshard, as
// NullRoute answers them, and stored nowhere; the others are placed as
// mcrouter places them.
TEST_F(McrouterConfig, NullRouteForAPrefix) {
  Fleet fleet(2);
  Running memshard(dir_, config_one_pool("", R"({"type": "PrefixSelectorRoute",
      "policies": {"junk:": "NullRoute"}, "wildcard": "PoolRoute|A"})",
                                         fleet, 2));
  RawClient client(memshard.port());
  EXPECT_EQ(client.roundtrip(set_command("junk:1", "x")), "NOT_STORED\r\n");
  EXPECT_EQ(client.roundtrip("get junk:1\r\n", "END\r\n"), "END\r\n");
  EXPECT_EQ(client.roundtrip("delete junk:1\r\n"), "NOT_FOUND\r\n");
  for (size_t s = 0; s < 2; ++s) EXPECT_FALSE(ttl_on(fleet[s].port(), "junk:1")) << s;
  set_all(memshard.port());
  expect_placed(holders(fleet, 2), one_copy(mcrouter_index("ch3", 2)), "NullRoute beside A");
}

// ---- the command line ----

TEST_F(McrouterConfig, TestConfAndListen) {
  Fleet fleet(2);
  const std::string path = dir_.write("mc.json", config_one_pool("", "\"PoolRoute|A\"", fleet, 2));
  CommandResult r = memshard({"-t", "-c", path});
  EXPECT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.out.find("syntax is ok"), std::string::npos);
  EXPECT_NE(r.err.find("--listen"), std::string::npos) << r.err;
  // Run without --listen: refused, saying why.
  r = memshard({"-c", path});
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_NE(r.err.find("has no listen address"), std::string::npos) << r.err;
  // --listen beside memshard's own YAML: refused.
  const std::string yml = dir_.write(
      "m.yml", "main:\n  listen: 127.0.0.1:1\n  servers:\n    - " + fleet[0].address() + ":1\n");
  r = memshard({"-t", "-c", yml, "--listen", "127.0.0.1:5000"});
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_NE(r.err.find("--listen"), std::string::npos) << r.err;
  // A refused handle: its JSON path, its line, the reason.
  const std::string bad =
      dir_.write("bad.json", config_one_pool("", "{\"type\": \"RandomRoute\"}", fleet, 2));
  r = memshard({"-t", "-c", bad});
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_NE(r.err.find("bad.json:4: route: RandomRoute"), std::string::npos) << r.err;
}

TEST_F(McrouterConfig, ListenServesTextMetaAndBinaryClients) {
  Fleet fleet(2);
  Running memshard(dir_, config_one_pool("", "\"PoolRoute|A\"", fleet, 2));
  RawClient text(memshard.port());
  EXPECT_EQ(text.roundtrip(set_command("k1", "v1")), "STORED\r\n");
  EXPECT_EQ(text.roundtrip("mg k1 v\r\n", "v1\r\n"), "VA 2\r\nv1\r\n");
  // Binary: a GET of k1 (opcode 0x00), answered with status 0 and the value.
  std::string get(24, '\0');
  get[0] = '\x80';
  get[3] = 2;   // key length
  get[11] = 2;  // total body
  get += "k1";
  RawClient binary(memshard.port());
  binary.send(get);
  const std::string reply = binary.read_exact(24 + 4 + 2);
  ASSERT_EQ(reply.size(), 30u);
  EXPECT_EQ(reply[0], '\x81');
  EXPECT_EQ(reply.substr(28), "v1");
}

TEST_F(McrouterConfig, ConvertPrintsYamlThatPlacesKeysAlike) {
  constexpr size_t n = 5;
  Fleet fleet(n);
  const std::string json_path = dir_.write(
      "mc.json", config_one_pool(", \"weights\": " + weights_json(n), "\"PoolRoute|A\"", fleet, n));
  const uint16_t port = free_port();
  const CommandResult c =
      memshard({"convert", json_path, "--listen", "127.0.0.1:" + std::to_string(port)});
  ASSERT_EQ(c.exit_code, 0) << c.err;
  EXPECT_NE(c.out.find("distribution: wch3"), std::string::npos) << c.out;
  const std::string yml = dir_.write("converted.yml", c.out);
  {
    Memshard memshard(yml, {}, port);
    set_all(port);
  }
  expect_placed(holders(fleet, n), one_copy(mcrouter_index("wch3", n)), "converted YAML");
  // The ring tools read both alike.
  std::string error;
  const std::vector<std::string> from_json = ring_lookup(json_path, keys(), "", &error);
  ASSERT_EQ(from_json.size(), kKeys) << error;
  const std::vector<uint32_t> want = mcrouter_index("wch3", n);
  for (size_t i = 0; i < kKeys; ++i) EXPECT_EQ(from_json[i], fleet[want[i]].address()) << i;
  EXPECT_EQ(ring_lookup(yml, keys()), from_json);
  const CommandResult same = memshard({"ring", "diff", json_path, yml});
  EXPECT_EQ(same.exit_code, 0) << same.err;
  EXPECT_NE(same.out.find(" 0.0000% of the keyspace changes server"), std::string::npos)
      << same.out;
  // A file that is memshard's already is not converted.
  const CommandResult again = memshard({"convert", yml});
  EXPECT_EQ(again.exit_code, 1);
}

TEST_F(McrouterConfig, RingToolsOnAnMcrouterConfig) {
  constexpr size_t n = 5;
  Fleet fleet(n);
  const std::string json_path =
      dir_.write("mc.json", config_one_pool("", "\"PoolRoute|A\"", fleet, n));
  CommandResult show = memshard({"ring", "show", "-c", json_path});
  EXPECT_EQ(show.exit_code, 0) << show.err;
  EXPECT_NE(show.out.find("pool A"), std::string::npos) << show.out;
  EXPECT_NE(show.out.find("ch3"), std::string::npos) << show.out;
  // memshard's config for the same servers less the last: ring diff shows
  // what moves (mcrouter's ch3: only the last server's keys).
  std::string yaml = "A:\n  listen: 127.0.0.1:5000\n  distribution: ch3\n  servers:\n";
  for (size_t i = 0; i + 1 < n; ++i) yaml += "    - " + fleet[i].address() + ":1\n";
  const std::string yml = dir_.write("smaller.yml", yaml);
  const CommandResult diff = memshard({"ring", "diff", json_path, yml});
  EXPECT_EQ(diff.exit_code, 0) << diff.err;
  EXPECT_EQ(diff.out.find(" 0.0000% of the keyspace changes server"), std::string::npos)
      << diff.out;
  EXPECT_NE(diff.out.find(fleet[n - 1].address()), std::string::npos) << diff.out;
  // Routed lookup through the listener of a PrefixSelectorRoute.
  const std::string routed =
      dir_.write("routed.json", R"({"pools": {"A": {"servers": )" + servers_json(fleet, 0, 3) +
                                    R"(}, "B": {"servers": )" + servers_json(fleet, 3, 2) +
                                    R"(}}, "route": {"type": "PrefixSelectorRoute",
                         "policies": {"key:": "PoolRoute|B"}, "wildcard": "PoolRoute|A"}})");
  const CommandResult lookup =
      memshard({"ring", "lookup", "-c", routed, "--pool", "mcrouter", "key:0"});
  EXPECT_EQ(lookup.exit_code, 0) << lookup.err;
  EXPECT_EQ(lookup.out,
            "key:0\tkey:\tB\t" + fleet[3 + mcrouter_index("ch3", 2)[0]].address() + "\n");
}

}  // namespace
}  // namespace memshard::testing
