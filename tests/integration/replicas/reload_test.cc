// A reload (SIGHUP after rewriting the config) that changes `replicas`:
// 1 -> 2, then 2 -> 1. After each, fresh writes land on that many servers
// (the key's preference list, counted on the servers), keys written before
// still read back, and a load running across both reloads sees no error.
#include <gtest/gtest.h>

#include <algorithm>

#include "replica_util.h"

namespace memshard::testing::replicas {
namespace {

// Sets `keys` through the proxy, then counts them on the servers: each must
// be on exactly the first `replicas` servers of its preference list.
::testing::AssertionResult lands_on(uint16_t proxy_port, const std::string& config_text,
                                    size_t replicas, const std::vector<uint16_t>& ports,
                                    const std::vector<std::string>& keys) {
  {
    Client c(proxy_port);
    for (const std::string& k : keys) {
      std::string reply = c.set(k, value_of(k));
      if (reply != "STORED\r\n") {
        return ::testing::AssertionFailure()
               << "set " << k << ": '" << printable(reply) << "' " << c.error();
      }
    }
  }
  Copies copies(config_text, 3);
  std::map<std::string, std::vector<uint16_t>> held;
  for (uint16_t p : ports) {
    for (const auto& kv : values_on(p, keys)) held[kv.first].push_back(p);
  }
  size_t wrong = 0;
  std::string why;
  for (const std::string& k : keys) {
    std::vector<uint16_t> want = copies.of(k);
    want.resize(replicas);
    std::sort(want.begin(), want.end());
    std::sort(held[k].begin(), held[k].end());
    if (held[k] != want && ++wrong <= 5) {
      why += "  " + k + " on " + std::to_string(held[k].size()) + " server(s)\n";
    }
  }
  if (wrong > 0) {
    return ::testing::AssertionFailure() << wrong << " of " << keys.size() << " keys not on "
                                         << replicas << " server(s) of their list:\n" << why;
  }
  return ::testing::AssertionSuccess();
}

TEST(ReplicaReload, ReplicasOneToTwoAndBack) {
  Fleet fleet(3);
  std::vector<uint16_t> ports = {fleet[0].port(), fleet[1].port(), fleet[2].port()};
  const std::vector<std::string> two = {"replicas: 2", "timeout: 2000"};
  const std::vector<std::string> one = {"timeout: 2000"};
  uint16_t listen = 0;
  Proxy proxy([&](uint16_t l) {
    listen = l;
    return pool_config(l, ports, one);
  });
  ASSERT_TRUE(lands_on(proxy.port(), proxy.config_text(), 1, ports, random_keys("user-r1", 400)));

  std::vector<std::pair<std::string, std::string>> existing;
  {
    Client c(proxy.port());
    for (const std::string& k : random_keys("user-existing", 300)) {
      ASSERT_EQ(c.set(k, value_of(k, "existing")), "STORED\r\n");
      existing.emplace_back(k, value_of(k, "existing"));
    }
  }
  Load load(proxy.port(), existing, "user-reload-load", 2, 100000, 60s);
  std::this_thread::sleep_for(300ms);

  ASSERT_TRUE(proxy.reload(pool_config(listen, ports, two)));
  std::this_thread::sleep_for(300ms);
  EXPECT_TRUE(lands_on(proxy.port(), proxy.config_text(), 2, ports, random_keys("user-r2", 400)))
      << "after the reload to replicas 2";
  EXPECT_EQ(load.errors(), 0u) << "errors across the reload to 2:\n" << load.first_errors();

  ASSERT_TRUE(proxy.reload(pool_config(listen, ports, one)));
  std::this_thread::sleep_for(300ms);
  EXPECT_TRUE(lands_on(proxy.port(), proxy.config_text(), 1, ports, random_keys("user-r1b", 400)))
      << "after the reload back to replicas 1";
  uint64_t ops = load.ops();
  load.stop();
  EXPECT_GT(ops, 500u) << "the load hardly ran";
  EXPECT_EQ(load.errors(), 0u) << "errors across both reloads:\n" << load.first_errors();

  // The load's own keys read back, whichever config wrote them.
  Client c(proxy.port());
  size_t missing = 0;
  for (const auto& [k, v] : load.written()) {
    if (c.get(k) != v) ++missing;
  }
  EXPECT_EQ(missing, 0u) << "of " << load.written().size() << " keys the load wrote";
}

}  // namespace
}  // namespace memshard::testing::replicas
