// reload_warmup: after a reload that moves keys, reads of moved keys find
// them where they were (and copy them over), writes and deletes of moved
// keys win over the old copies, and once the window ends nothing is looked
// up any more. Real memcached servers, a real memshard, real SIGHUPs.
#include <gtest/gtest.h>

#include <atomic>
#include <csignal>
#include <memory>
#include <optional>
#include <set>
#include <stdexcept>
#include <thread>

#include "reload_util.h"

namespace memshard::testing::reload {
namespace {

using Clock = std::chrono::steady_clock;

constexpr int kKeys = 20000;

class ReloadWarmup : public ::testing::Test {
 protected:
  void SetUp() override {
    for (int i = 0; i < 5; ++i) {
      mc_.push_back(std::make_unique<Memcached>());
      ports_.push_back(mc_.back()->port());
    }
  }

  PoolDef pool(std::vector<size_t> servers, int warmup_ms, std::vector<std::string> extra = {}) {
    PoolDef p;
    p.listen = listen_on(port_);
    for (size_t s : servers) p.servers.push_back({ports_[s], 1});
    p.directives = {"reload_warmup: " + std::to_string(warmup_ms)};
    for (auto& d : extra) p.directives.push_back(d);
    return p;
  }

  void start(const PoolDef& p) {
    dir_.write("memshard.yml", yaml(p));
    ms_ = std::make_unique<Memshard>(dir_.path() + "/memshard.yml",
                                     memshard_args({"--threads", "2"}), port_);
    ASSERT_TRUE(wait_ready(port_));
  }

  void reload(const PoolDef& p) {
    const uint64_t g = stat_of(proxy_stats(port_), "config_generation");
    dir_.write("memshard.yml", yaml(p));
    ms_->process().signal(SIGHUP);
    ASSERT_TRUE(
        wait_stat(port_, "config_generation", [&](uint64_t v) { return v == g + 1; }).has_value())
        << "the reload did not happen";
    // Both workers switch between two requests: give them that moment.
    std::this_thread::sleep_for(100ms);
  }

  static std::vector<std::string> keys(const std::string& tag, int n = kKeys) {
    std::vector<std::string> out;
    for (int i = 0; i < n; ++i) out.push_back(key_of(tag, static_cast<uint64_t>(i)));
    return out;
  }

  // Values depend on the key (and `suffix`) alone, so any subset can be
  // checked. Sets every key through memshard, pipelined (noreply), then one
  // acknowledged set so that all of them have landed.
  void write_all(const std::vector<std::string>& ks, const std::string& suffix = "") {
    Conn c(port_);
    std::string batch;
    for (size_t i = 0; i < ks.size(); ++i) {
      const std::string v = value_for(ks[i] + suffix, 0);
      batch += "set " + ks[i] + " 0 0 " + std::to_string(v.size()) + " noreply\r\n" + v + "\r\n";
      if (batch.size() > 64 * 1024) {
        ASSERT_TRUE(c.send(batch)) << c.error();
        batch.clear();
      }
    }
    ASSERT_TRUE(c.send(batch)) << c.error();
    ASSERT_TRUE(c.set("write_all:sync", "x")) << c.error();
  }

  // Reads every key through memshard in multi-gets of 100: the keys that
  // hit with the value written for them (any other value fails the test).
  std::set<std::string> read_all(const std::vector<std::string>& ks,
                                 const std::string& suffix = "") {
    std::set<std::string> hit;
    Conn c(port_);
    for (size_t at = 0; at < ks.size(); at += 100) {
      std::vector<std::string> batch(ks.begin() + static_cast<long>(at),
                                     ks.begin() + static_cast<long>(std::min(at + 100, ks.size())));
      std::vector<Hit> hits;
      EXPECT_TRUE(c.get(batch, hits)) << c.error();
      if (!c.ok()) return hit;
      // In the client's key order, each with its own value.
      size_t b = 0;
      for (size_t i = 0; i < batch.size() && b < hits.size(); ++i) {
        if (hits[b].key != batch[i]) continue;
        EXPECT_EQ(hits[b].data, value_for(batch[i] + suffix, 0)) << batch[i];
        hit.insert(batch[i]);
        ++b;
      }
      EXPECT_EQ(b, hits.size()) << "hits out of the client's key order";
    }
    return hit;
  }

  // Keys whose server differs between two configs.
  static std::vector<std::string> moved(const std::vector<std::string>& ks, const PoolDef& a,
                                        const PoolDef& b) {
    Placement pa(yaml(a)), pb(yaml(b));
    std::vector<std::string> out;
    for (const auto& k : ks) {
      if (pa.port_of(k) != pb.port_of(k)) out.push_back(k);
    }
    return out;
  }

  // Waits (bounded) until every key is on its server in `p`.
  ::testing::AssertionResult on_new_servers(const std::vector<std::string>& ks, const PoolDef& p) {
    Placement place(yaml(p));
    const auto deadline = Clock::now() + 10s;
    size_t missing = 0;
    std::string some;
    while (Clock::now() < deadline) {
      missing = 0;
      some.clear();
      for (const auto& k : ks) {
        if (direct_get(place.port_of(k), k)) continue;
        if (++missing <= 5) some += " " + k;
      }
      if (missing == 0) return ::testing::AssertionSuccess();
      std::this_thread::sleep_for(200ms);
    }
    return ::testing::AssertionFailure()
           << missing << " of " << ks.size() << " moved keys are not on their new server:" << some;
  }

  uint16_t port_ = free_port();
  TempDir dir_;
  std::vector<std::unique_ptr<Memcached>> mc_;
  std::vector<uint16_t> ports_;
  std::unique_ptr<Memshard> ms_;
};

TEST_F(ReloadWarmup, GrowingTheFleetKeepsTheCacheWarm) {
  const PoolDef three = pool({0, 1, 2}, 60000), four = pool({0, 1, 2, 3}, 60000);
  start(three);
  const auto ks = keys("grow");
  write_all(ks);
  const auto move = moved(ks, three, four);
  // Consistent hashing moves about a quarter of the keys to the 4th server.
  ASSERT_GT(move.size(), ks.size() / 20);
  reload(four);
  const auto hit = read_all(ks);
  EXPECT_GE(hit.size(), ks.size() * 999 / 1000) << "of " << move.size() << " moved keys";
  EXPECT_TRUE(on_new_servers(move, four));
  const auto stats = proxy_stats(port_);
  EXPECT_GE(stat_of(stats, "main:warmup_hits"), move.size() * 999 / 1000);
  EXPECT_GE(stat_of(stats, "main:warmup_copies"), move.size() * 999 / 1000);
  // A second read finds them all on their new server: nothing looked up.
  const uint64_t lookups = stat_of(stats, "main:warmup_lookups");
  EXPECT_GE(read_all(move).size(), move.size() * 999 / 1000);
  EXPECT_EQ(stat_of(proxy_stats(port_), "main:warmup_lookups"), lookups);
}

TEST_F(ReloadWarmup, BinaryClientsGetsFindMovedKeysToo) {
  const PoolDef three = pool({0, 1, 2}, 60000), four = pool({0, 1, 2, 3}, 60000);
  start(three);
  const auto ks = keys("binary", 2000);
  write_all(ks);
  const auto move = moved(ks, three, four);
  ASSERT_GT(move.size(), ks.size() / 20);
  reload(four);
  RawClient c(port_);
  size_t found = 0;
  for (const auto& k : move) {
    const auto v = binary_get(c, k);
    if (v && *v == value_for(k, 0)) ++found;
  }
  EXPECT_EQ(found, move.size());
  EXPECT_TRUE(on_new_servers(move, four));
}

TEST_F(ReloadWarmup, ShrinkingTheFleetReadsTheLeavingServer) {
  const PoolDef four = pool({0, 1, 2, 3}, 60000), three = pool({0, 1, 2}, 60000);
  start(four);
  const auto ks = keys("shrink");
  write_all(ks);
  const auto move = moved(ks, four, three);
  ASSERT_GT(move.size(), ks.size() / 20);
  reload(three);  // server 3 leaves the config but keeps running
  const auto hit = read_all(ks);
  EXPECT_GE(hit.size(), ks.size() * 999 / 1000) << "of " << move.size() << " moved keys";
  EXPECT_TRUE(on_new_servers(move, three));
}

TEST_F(ReloadWarmup, WritesAndDeletesOfMovedKeysWinOverTheOldCopies) {
  const int window_ms = 4000;
  const PoolDef three = pool({0, 1, 2}, window_ms), four = pool({0, 1, 2, 3}, window_ms);
  start(three);
  const auto ks = keys("wins", 8000);
  write_all(ks);
  const auto move = moved(ks, three, four);
  ASSERT_GE(move.size(), 600u);
  const std::vector<std::string> overwritten(move.begin(), move.begin() + 300);
  const std::vector<std::string> deleted(move.begin() + 300, move.begin() + 600);
  const auto reloaded = Clock::now();
  reload(four);
  {
    Conn c(port_);
    for (size_t i = 0; i < overwritten.size(); ++i) {
      ASSERT_TRUE(c.set(overwritten[i], value_for(overwritten[i] + ":new", 0))) << c.error();
    }
    for (const auto& k : deleted) {
      ASSERT_TRUE(c.send("delete " + k + "\r\n"));
      std::string line;
      ASSERT_TRUE(c.read_line(line)) << c.error();
      // Not on the new server yet, so NOT_FOUND there: what memcached says.
      EXPECT_TRUE(line == "NOT_FOUND" || line == "DELETED") << line;
    }
  }
  // The old servers no longer hold either.
  Placement before(yaml(three));
  for (const auto* set : {&overwritten, &deleted}) {
    for (const auto& k : *set) EXPECT_FALSE(direct_get(before.port_of(k), k)) << k;
  }
  const auto check = [&] {
    EXPECT_EQ(read_all(overwritten, ":new").size(), overwritten.size());
    EXPECT_TRUE(read_all(deleted).empty());
  };
  check();  // inside the window
  std::this_thread::sleep_until(reloaded + std::chrono::milliseconds(window_ms) + 1s);
  check();  // after it
}

TEST_F(ReloadWarmup, OnceTheWindowEndsMissesArePlainMisses) {
  const int window_ms = 1500;
  const PoolDef three = pool({0, 1, 2}, window_ms), four = pool({0, 1, 2, 3}, window_ms);
  start(three);
  const auto ks = keys("ends", 2000);
  write_all(ks);
  const auto move = moved(ks, three, four);
  ASSERT_GT(move.size(), ks.size() / 20);
  reload(four);
  // Inside the window a moved key is found.
  EXPECT_EQ(read_all({move[0]}).size(), 1u);
  std::this_thread::sleep_for(std::chrono::milliseconds(window_ms) + 1s);
  const uint64_t lookups = stat_of(proxy_stats(port_), "main:warmup_lookups");
  std::vector<uint64_t> gets;
  for (size_t s = 0; s < 3; ++s) gets.push_back(mc_[s]->stat("cmd_get"));
  const std::vector<std::string> rest(move.begin() + 1, move.end());
  EXPECT_TRUE(read_all(rest).empty()) << "moved keys still found after the window";
  EXPECT_EQ(stat_of(proxy_stats(port_), "main:warmup_lookups"), lookups);
  // The old servers were not asked: no extra round trip.
  Placement before(yaml(three));
  std::set<uint16_t> old_owners;
  for (const auto& k : rest) old_owners.insert(before.port_of(k));
  for (size_t s = 0; s < 3; ++s) {
    EXPECT_EQ(mc_[s]->stat("cmd_get"), gets[s]) << "server " << s << " was asked";
  }
}

TEST_F(ReloadWarmup, SeveralReloadsInARowLookInEveryConfigOfTheWindow) {
  const PoolDef a = pool({0, 1, 2}, 60000), b = pool({0, 1, 2, 3}, 60000),
                c = pool({0, 1, 2, 3, 4}, 60000);
  start(a);
  const auto ks = keys("chain", 6000);
  write_all(ks);
  reload(b);
  reload(c);
  const auto move = moved(ks, a, c);
  ASSERT_GT(move.size(), ks.size() / 10);
  EXPECT_GE(read_all(ks).size(), ks.size() * 999 / 1000);
  EXPECT_TRUE(on_new_servers(move, c));
}

TEST_F(ReloadWarmup, ReplicatedPoolsTryTheOldPreferenceList) {
  const std::vector<std::string> r2 = {"replicas: 2"};
  const PoolDef three = pool({0, 1, 2}, 60000, r2), four = pool({0, 1, 2, 3}, 60000, r2);
  start(three);
  const auto ks = keys("copies", 6000);
  write_all(ks);
  reload(four);
  EXPECT_GE(read_all(ks).size(), ks.size() * 999 / 1000);
}

TEST_F(ReloadWarmup, ADeadOldServerIsAMissNotAnError) {
  const PoolDef four = pool({0, 1, 2, 3}, 60000, {"timeout: 2000"}),
                three = pool({0, 1, 2}, 60000, {"timeout: 2000"});
  start(four);
  const auto ks = keys("dead", 3000);
  write_all(ks);
  const auto move = moved(ks, four, three);
  ASSERT_GT(move.size(), ks.size() / 20);
  reload(three);
  mc_[3]->process().stop();  // the server that left, gone
  // Every read answers (misses for its keys), none with an error.
  const auto hit = read_all(ks);
  EXPECT_EQ(hit.size(), ks.size() - move.size());
}

TEST_F(ReloadWarmup, BackgroundMigrationCopiesMovedKeysAtTheSetRate) {
  const int rate = 500;
  const std::vector<std::string> migrate = {"reload_migrate_rate: " + std::to_string(rate)};
  const PoolDef three = pool({0, 1, 2}, 60000, migrate), four = pool({0, 1, 2, 3}, 60000, migrate);
  start(three);
  const auto ks = keys("walk", 6000);
  write_all(ks);
  const auto move = moved(ks, three, four);
  ASSERT_GT(move.size(), ks.size() / 20);

  // Clients keep working throughout, on keys of their own: any error fails.
  std::atomic<bool> done{false};
  std::atomic<uint64_t> requests{0}, errors{0};
  std::vector<std::thread> load;
  for (int t = 0; t < 2; ++t) {
    load.emplace_back([&, t] {
      Conn c(port_);
      const auto deadline = Clock::now() + 60s;
      for (uint64_t i = 0; !done && Clock::now() < deadline; ++i) {
        const std::string k = key_of("load" + std::to_string(t), i % 500);
        std::vector<Hit> hits;
        if (!c.set(k, value_for(k, 0)) || !c.get({k}, hits) || hits.size() != 1) {
          errors.fetch_add(1);
          return;
        }
        requests.fetch_add(2);
      }
    });
  }
  reload(four);
  const auto began = Clock::now();
  // Samples of the moved count until the walk ends (bounded), each with
  // the times just before and after it was asked for: the count was taken
  // somewhere in between.
  struct Sample {
    double asked, answered;
    uint64_t moved;
  };
  const auto since = [&] { return std::chrono::duration<double>(Clock::now() - began).count(); };
  std::vector<Sample> samples;
  uint64_t running = 1;
  while (running != 0 && Clock::now() - began < 40s) {
    std::this_thread::sleep_for(250ms);
    const double asked = since();
    const auto stats = proxy_stats(port_);
    running = stat_of(stats, "main:migrate_running");
    samples.push_back({asked, since(), stat_of(stats, "main:migrate_moved")});
  }
  done = true;
  for (auto& th : load) th.join();
  EXPECT_EQ(running, 0u) << "the walk did not finish";
  EXPECT_EQ(errors.load(), 0u) << "of " << requests.load() << " requests during the walk";
  EXPECT_GT(requests.load(), 100u);
  const auto stats = proxy_stats(port_);
  EXPECT_GE(stat_of(stats, "main:migrate_moved"), move.size() * 999 / 1000);
  EXPECT_EQ(stat_of(stats, "main:migrate_failed"), 0u);
  EXPECT_GE(stat_of(stats, "main:migrate_seen"), ks.size());
  // No second of the walk went faster than the rate (a 50 ms burst aside),
  // over the longest time two samples' counts can have been apart.
  for (size_t i = 0; i < samples.size(); ++i) {
    for (size_t j = i + 1; j < samples.size(); ++j) {
      const double span = samples[j].answered - samples[i].asked;
      if (span < 1.0) continue;
      const double copied = static_cast<double>(samples[j].moved - samples[i].moved);
      EXPECT_LE(copied, rate * span + rate / 20.0 + 1) << "over " << span << " s";
      break;
    }
  }
  // The moved keys are on their new servers, though no client read them
  // (on_new_servers asks the servers directly). The clients' writes of
  // moved keys share guard slots with some of them: those copies are put
  // off until the write is over, not dropped.
  EXPECT_TRUE(on_new_servers(move, four))
      << "migrate_skipped " << stat_of(stats, "main:migrate_skipped") << ", migrate_moved "
      << stat_of(stats, "main:migrate_moved") << " of " << move.size();
}

// Keys a binary client sends that a text line cannot carry (a space): the
// warm-up's lookups, its copies and the deletes that guard them, and the
// background migration all name them base64 with `b` (own_requests.h).
// Before, the copies and the walk skipped such keys, and a delete written
// with the raw key would have named another key.
std::vector<std::string> spaced_keys(const std::string& tag, int n) {
  std::vector<std::string> out;
  // The number first, as key_of does: fnv1a_64 puts keys that differ only
  // at their end on nearby points, and "tag key 0" .. "tag key 799" could
  // all fall on one arc that an added server does not touch.
  for (int i = 0; i < n; ++i) out.push_back(std::to_string(i) + " key " + tag);
  return out;
}

// Every key set through memshard over the binary protocol.
void binary_write(uint16_t port, const std::vector<std::string>& ks, const std::string& suffix) {
  RawClient c(port);
  for (const auto& k : ks) ASSERT_EQ(binary_set(c, k, value_for(k + suffix, 0)), 0) << k;
}

::testing::AssertionResult spaced_on_servers(const std::vector<std::string>& ks, const PoolDef& p,
                                             const std::string& suffix) {
  Placement place(yaml(p));
  const auto deadline = Clock::now() + 15s;
  size_t missing = 0;
  std::string some;
  while (Clock::now() < deadline) {
    missing = 0;
    some.clear();
    for (const auto& k : ks) {
      const auto v = direct_meta_get(place.port_of(k), k);
      if (v && *v == value_for(k + suffix, 0)) continue;
      if (++missing <= 3) some += " '" + k + "'";
    }
    if (missing == 0) return ::testing::AssertionSuccess();
    std::this_thread::sleep_for(200ms);
  }
  return ::testing::AssertionFailure()
         << missing << " of " << ks.size() << " keys are not on their new server:" << some;
}

TEST_F(ReloadWarmup, KeysWithSpacesAreFoundAndCopiedThroughAWarmReload) {
  const PoolDef three = pool({0, 1, 2}, 60000), four = pool({0, 1, 2, 3}, 60000);
  start(three);
  const auto ks = spaced_keys("warm", 800);
  binary_write(port_, ks, "");
  const auto move = moved(ks, three, four);
  ASSERT_GT(move.size(), ks.size() / 20);
  reload(four);
  RawClient c(port_);
  size_t found = 0;
  for (const auto& k : move) {
    const auto v = binary_get(c, k);
    if (v && *v == value_for(k, 0)) ++found;
  }
  EXPECT_EQ(found, move.size()) << "moved keys with a space read through the warm-up";
  EXPECT_TRUE(spaced_on_servers(move, four, "")) << "copied to their new servers";
}

TEST_F(ReloadWarmup, KeysWithSpacesAreMovedByTheBackgroundMigration) {
  const std::vector<std::string> migrate = {"reload_migrate_rate: 2000"};
  const PoolDef three = pool({0, 1, 2}, 60000, migrate), four = pool({0, 1, 2, 3}, 60000, migrate);
  start(three);
  const auto ks = spaced_keys("walk", 800);
  binary_write(port_, ks, "");
  const auto move = moved(ks, three, four);
  ASSERT_GT(move.size(), ks.size() / 20);
  reload(four);
  // Nobody reads them: the walk alone brings them over.
  EXPECT_TRUE(spaced_on_servers(move, four, ""));
  const auto stats = proxy_stats(port_);
  EXPECT_EQ(stat_of(stats, "main:migrate_failed"), 0u);
}

// Reads of moved keys (which copy them over) race writes and deletes of
// the same keys: whatever the order, once the writes are answered the new
// server holds what was written, and a deleted key stays deleted.
TEST_F(ReloadWarmup, AWriteRacingAWarmCopyOfAKeyWithASpaceWins) {
  const PoolDef three = pool({0, 1, 2}, 60000), four = pool({0, 1, 2, 3}, 60000);
  start(three);
  const auto ks = spaced_keys("race", 1200);
  binary_write(port_, ks, "");
  const auto move = moved(ks, three, four);
  ASSERT_GT(move.size(), ks.size() / 20);
  const size_t half = move.size() / 2;
  const std::vector<std::string> rewritten(move.begin(), move.begin() + static_cast<long>(half));
  const std::vector<std::string> deleted(move.begin() + static_cast<long>(half), move.end());
  reload(four);
  std::atomic<bool> done{false};
  std::thread reader([&] {
    RawClient c(port_);
    const auto deadline = Clock::now() + 30s;
    for (size_t i = 0; !done && Clock::now() < deadline; ++i) binary_get(c, move[i % move.size()]);
  });
  {
    RawClient c(port_);
    for (const auto& k : rewritten) EXPECT_EQ(binary_set(c, k, value_for(k + ":new", 0)), 0);
    for (const auto& k : deleted) {
      const uint16_t status = binary_delete(c, k);
      EXPECT_TRUE(status == 0 || status == 1) << status;
    }
  }
  done = true;
  reader.join();
  Placement now(yaml(four));
  EXPECT_TRUE(spaced_on_servers(rewritten, four, ":new"));
  RawClient c(port_);
  for (const auto& k : deleted) {
    EXPECT_FALSE(direct_meta_get(now.port_of(k), k)) << "'" << k << "' came back on its server";
    EXPECT_FALSE(binary_get(c, k)) << "'" << k << "' came back through memshard";
  }
}

}  // namespace
}  // namespace memshard::testing::reload
