// mcrouter's placement through the real memshard, against real memcached:
// a pool with distribution ch3, wch3 or crc32 (and hash_salt) over five
// servers; keys are stored THROUGH memshard, then read directly from each
// server: every key must be on the server mcrouter's own code picks for it
// (the golden table made by mcrouter's code, tests/ketama/data/README.md)
// and on no other. `memshard ring lookup` must name the same servers.
#include <gtest/gtest.h>

#include <map>
#include <memory>
#include <string>
#include <vector>

#include "harness.h"
#include "mcrouter_golden.h"

namespace memshard::testing {
namespace {

using namespace std::chrono_literals;

constexpr size_t kServers = 5;
constexpr size_t kKeys = 40;  // the keys whose index the table lists

class McrouterHash : public ::testing::TestWithParam<std::string> {
 protected:
  void SetUp() override {
    for (const golden::Placement& p : golden::mcrouter_placements(
             std::string(MEMSHARD_KETAMA_TEST_DATA) + "/mcrouter_placements.txt")) {
      if (p.variant == GetParam() && p.servers == kServers) expected_ = p.first;
    }
    ASSERT_EQ(expected_.size(), kKeys) << "no line for " << GetParam() << " in the table";
  }

  std::vector<uint32_t> expected_;  // mcrouter's index of each key
  TempDir dir_;
};

TEST_P(McrouterHash, KeysAreWhereMcrouterPutsThem) {
  const std::string variant = GetParam();
  const bool wch3 = variant.starts_with("wch3");
  Fleet fleet(kServers);
  PoolSpec pool;
  pool.name = "mc";
  const uint16_t port = free_port();
  pool.listen = "127.0.0.1:" + std::to_string(port);
  pool.directives = {{"distribution", variant.substr(0, variant.find('+'))}};
  if (variant.ends_with("+salt")) pool.directives.emplace_back("hash_salt", golden::kMcrouterSalt);
  for (uint32_t i = 0; i < kServers; ++i) {
    // wch3 reads its weights from the lines, as mcrouter's "weights" list.
    pool.servers.push_back(fleet[i].address() + ":" +
                           (wch3 ? golden::mcrouter_weight_text(i) : "1"));
  }
  const std::string yaml = pool_yaml(pool);
  const std::string config = dir_.write("memshard.yml", yaml);
  SCOPED_TRACE("config:\n" + yaml);

  const std::vector<std::string> keys = golden::mcrouter_keys(kKeys);
  {
    Memshard memshard(config, {}, port);
    RawClient client(port);
    std::string request, want;
    for (size_t i = 0; i < keys.size(); ++i) {
      request += set_command(keys[i], "value-" + std::to_string(i));
      want += "STORED\r\n";
    }
    client.send(request);
    ASSERT_EQ(client.read_count("\r\n", keys.size()), want);
  }

  std::map<std::string, size_t> index_of_key;
  for (size_t i = 0; i < keys.size(); ++i) index_of_key[keys[i]] = i;
  std::vector<std::vector<size_t>> found_on(keys.size());
  std::vector<size_t> per_server(kServers, 0);
  for (size_t s = 0; s < kServers; ++s) {
    RawClient client(fleet[s].port());
    std::string request = "get";
    for (const std::string& k : keys) request += " " + k;
    std::vector<Value> values;
    ASSERT_TRUE(parse_values(client.roundtrip(request + "\r\n", "END\r\n"), values));
    for (const Value& v : values) {
      const size_t i = index_of_key.at(v.key);
      EXPECT_EQ(v.data, "value-" + std::to_string(i));
      found_on[i].push_back(s);
      ++per_server[s];
    }
  }
  for (size_t i = 0; i < keys.size(); ++i) {
    ASSERT_EQ(found_on[i].size(), 1u) << "key #" << i << " '" << keys[i] << "'";
    EXPECT_EQ(found_on[i][0], expected_[i])
        << "key #" << i << " '" << keys[i] << "': mcrouter puts it on server " << expected_[i]
        << ", memshard stored it on server " << found_on[i][0];
  }
  // Keys on four servers at least (wch3's first has weight 0.013).
  size_t used = 0;
  for (size_t n : per_server) used += n > 0 ? 1 : 0;
  EXPECT_GE(used, 4u) << "the case tests little";

  // The ring tool agrees with where the keys are.
  std::string error;
  const std::vector<std::string> owner = ring_lookup(config, keys, "", &error);
  ASSERT_EQ(owner.size(), keys.size()) << error;
  for (size_t i = 0; i < keys.size(); ++i) {
    EXPECT_EQ(owner[i], fleet[expected_[i]].address()) << "key #" << i;
  }
}

INSTANTIATE_TEST_SUITE_P(Mcrouter, McrouterHash,
                         ::testing::Values("ch3", "ch3+salt", "wch3", "wch3+salt", "crc32",
                                           "crc32+salt"),
                         [](const auto& p) {
                           std::string name = p.param;
                           if (name.ends_with("+salt")) name.replace(name.find('+'), 1, "_");
                           return name;
                         });

}  // namespace
}  // namespace memshard::testing
