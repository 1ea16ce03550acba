// kill -9 one of three servers under load with `replicas: 2`: every key
// written before the kill reads back (no misses, no client errors) while it
// is down; a bounded read/write load running through the outage and the
// restart sees no error; keys written during the outage read back after the
// server restarts empty (read_failover_on_miss), and with read_repair the
// restarted server then holds the keys it is the first copy of.
#include <gtest/gtest.h>
#include <signal.h>

#include <map>
#include <set>

#include "replica_util.h"

namespace memshard::testing::replicas {
namespace {

struct OutageCase {
  const char* name;
  bool eject;
  bool repair;
};

class ReplicaOutage : public ::testing::TestWithParam<OutageCase> {};

// Every key reads back through the proxy with its value: multi-gets of 50
// and, for every 10th key, a single get. Returns the number of misses and
// wrong replies (each described in `why`, the first few).
size_t read_back(uint16_t port, const std::vector<std::pair<std::string, std::string>>& kv,
                 std::string& why) {
  size_t bad = 0;
  auto note = [&](const std::string& s) {
    if (++bad <= 10) why += "  " + s + "\n";
  };
  Client c(port);
  for (size_t at = 0; at < kv.size(); at += 50) {
    std::string req = "get";
    size_t end = std::min(at + 50, kv.size());
    for (size_t i = at; i < end; ++i) req += " " + kv[i].first;
    std::string reply = c.call(req + "\r\n");
    std::vector<Value> got;
    if (!parse_values(reply, got)) {
      note("multi-get: '" + printable(reply, 300) + "' " + c.error());
      if (!c.ok()) return bad + (kv.size() - end);
      continue;
    }
    std::map<std::string, std::string> by_key;
    for (const Value& v : got) by_key[v.key] = v.data;
    for (size_t i = at; i < end; ++i) {
      auto it = by_key.find(kv[i].first);
      if (it == by_key.end()) {
        note("miss: " + kv[i].first);
      } else if (it->second != kv[i].second) {
        note("wrong value for " + kv[i].first);
      }
    }
  }
  for (size_t i = 0; i < kv.size(); i += 10) {
    std::string reply = c.call("get " + kv[i].first + "\r\n");
    std::vector<Value> got;
    if (!parse_values(reply, got) || got.size() != 1 || got[0].data != kv[i].second) {
      note("get " + kv[i].first + ": '" + printable(reply, 200) + "' " + c.error());
      if (!c.ok()) return bad;
    }
  }
  return bad;
}

TEST_P(ReplicaOutage, KillNineUnderLoad) {
  const OutageCase& oc = GetParam();
  Fleet fleet(3);
  std::vector<uint16_t> ports = {fleet[0].port(), fleet[1].port(), fleet[2].port()};
  std::vector<std::string> d = {"replicas: 2", "timeout: 400", "read_failover_on_miss: true"};
  if (oc.repair) d.push_back("read_repair: true");
  if (oc.eject) {
    d.insert(d.end(),
             {"auto_eject_hosts: true", "server_retry_timeout: 500", "server_failure_limit: 1"});
  }
  Proxy proxy([&](uint16_t listen) { return pool_config(listen, ports, d); });
  Copies copies(proxy.config_text(), 2);

  std::vector<std::pair<std::string, std::string>> before;
  {
    Client c(proxy.port());
    for (const std::string& k : random_keys(std::string("user-before-") + oc.name, 1500)) {
      std::string v = value_of(k, "before");
      ASSERT_EQ(c.set(k, v), "STORED\r\n") << k << " " << c.error();
      before.emplace_back(k, v);
    }
  }
  const size_t victim = 1;
  const uint16_t vport = ports[victim];

  // Bounded by count and time; the count leaves room for a slow machine
  // whose test thread waits a while for a core (a starved thread once saw
  // the load end at its count before the kill).
  Load load(proxy.port(), before, std::string("user-during-") + oc.name, 2, 2000000, 60s);
  for (const auto until = std::chrono::steady_clock::now() + 10s;
       load.ops() < 500 && std::chrono::steady_clock::now() < until;) {
    std::this_thread::sleep_for(10ms);
  }
  const uint64_t held_at_kill = fleet[victim].stat("curr_items");
  fleet[victim].process().signal(SIGKILL);
  ASSERT_NE(fleet[victim].process().wait_exit(5s), -1) << "memcached survived kill -9";
  uint64_t ops_at_kill = load.ops();

  // The outage: every key written before reads back.
  std::this_thread::sleep_for(500ms);
  std::string why;
  size_t bad = read_back(proxy.port(), before, why);
  EXPECT_EQ(bad, 0u) << "keys written before the kill, read during the outage:\n" << why;
  for (const auto until = std::chrono::steady_clock::now() + 10s;
       load.ops() <= ops_at_kill + 200 && std::chrono::steady_clock::now() < until;) {
    std::this_thread::sleep_for(10ms);
  }
  EXPECT_GT(load.ops(), ops_at_kill + 200) << "the load made little progress during the outage";
  EXPECT_EQ(load.errors(), 0u) << "the load's errors during the outage:\n" << load.first_errors();
  std::vector<std::pair<std::string, std::string>> during = load.written();

  // Back, empty. The load goes on and memshard reconnects at once, so a
  // few of its writes (and, with read repair, repairs) may already have
  // landed when the count is read: "empty" is "far below what it held".
  fleet[victim].restart();
  ASSERT_GT(held_at_kill, 500u);
  ASSERT_LT(fleet[victim].stat("curr_items"), held_at_kill / 4)
      << "the restarted server did not come back empty";
  // Until memshard writes to it again: fresh keys whose first copy it is.
  std::vector<std::string> probes;
  for (uint64_t i = 0; probes.size() < 20 && i < 2000; ++i) {
    std::string k = random_key("probe", i);
    if (copies.of(k)[0] == vport) probes.push_back(k);
  }
  ASSERT_EQ(probes.size(), 20u);
  size_t next_probe = 0;
  bool back = eventually(
      [&] {
        const std::string& k = probes[next_probe++ % probes.size()];
        Client c(proxy.port());
        if (c.set(k, "p") != "STORED\r\n") return false;
        return held_on(vport, k).has_value();
      },
      15s);
  ASSERT_TRUE(back) << "memshard never wrote to the restarted server";
  std::this_thread::sleep_for(300ms);
  load.stop();
  EXPECT_EQ(load.errors(), 0u) << "the load's errors, kill to restart:\n" << load.first_errors();
  during = load.written();
  ASSERT_GT(during.size(), 50u) << "too few keys written during the outage";

  // Everything reads back after the restart, through the proxy.
  why.clear();
  EXPECT_EQ(read_back(proxy.port(), before, why), 0u)
      << "keys written before the kill, read after the restart:\n"
      << why;
  why.clear();
  EXPECT_EQ(read_back(proxy.port(), during, why), 0u)
      << "keys written during the outage, read after the restart:\n"
      << why;

  // The keys the restarted server is the first copy of: with read repair it
  // holds them once they have been read (repairs are not waited for, so
  // this reads again until they land, bounded); without, it holds none of
  // those written before the kill.
  std::vector<std::pair<std::string, std::string>> its;
  for (const auto& kv : before) {
    if (copies.of(kv.first)[0] == vport) its.push_back(kv);
  }
  size_t its_before = its.size();
  for (const auto& kv : during) {
    if (copies.of(kv.first)[0] == vport) its.push_back(kv);
  }
  ASSERT_GT(its_before, 100u);
  std::vector<std::string> its_keys;
  for (const auto& kv : its) its_keys.push_back(kv.first);
  if (oc.repair) {
    std::map<std::string, std::string> held;
    bool repaired = eventually(
        [&] {
          held = values_on(vport, its_keys);
          if (held.size() == its.size()) return true;
          std::string ignored;
          std::vector<std::pair<std::string, std::string>> missing;
          for (const auto& kv : its) {
            if (!held.count(kv.first)) missing.push_back(kv);
          }
          read_back(proxy.port(), missing, ignored);
          return false;
        },
        10s);
    EXPECT_TRUE(repaired) << "the restarted server holds " << held.size() << " of the "
                          << its.size() << " keys it is the first copy of, after reading them";
    size_t wrong = 0;
    for (const auto& kv : its) {
      auto it = held.find(kv.first);
      if (it != held.end() && it->second != kv.second) ++wrong;
    }
    EXPECT_EQ(wrong, 0u) << "repaired copies with a wrong value";
    EXPECT_GT(json_pool_counter(proxy.stats_port(), "read_repairs").value_or(0), its_before / 2);
  } else {
    std::vector<std::string> before_keys(its_keys.begin(),
                                         its_keys.begin() + static_cast<ptrdiff_t>(its_before));
    EXPECT_EQ(values_on(vport, before_keys).size(), 0u)
        << "without read_repair, keys written before the kill reappeared on the restarted server";
    EXPECT_EQ(json_pool_counter(proxy.stats_port(), "read_repairs").value_or(1), 0u);
  }
  EXPECT_GT(json_pool_counter(proxy.stats_port(), "read_failovers").value_or(0), 0u);
}

INSTANTIATE_TEST_SUITE_P(Modes, ReplicaOutage,
                         ::testing::Values(OutageCase{"plain", false, false},
                                           OutageCase{"repair", false, true},
                                           OutageCase{"eject_repair", true, true}),
                         [](const ::testing::TestParamInfo<OutageCase>& i) {
                           return std::string(i.param.name);
                         });

}  // namespace
}  // namespace memshard::testing::replicas
