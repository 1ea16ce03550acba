// Hot keys end to end: a skewed load through two workers, then what
// memshard says about it, and what its cache does to the hot key's server.
#include <gtest/gtest.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <fstream>
#include <map>
#include <random>
#include <sstream>
#include <thread>

#include "binary_util.h"
#include "ops_util.h"

namespace memshard::testing::ops {
namespace {

using Clock = std::chrono::steady_clock;

struct HotKey {
  std::string key, server;
  double share = 0, error = 0;
};

std::map<std::string, HotKey> stats_hotkeys(uint16_t port, const std::string& pool) {
  RawClient c(port);
  std::string reply = c.roundtrip("stats hotkeys\r\n", "END\r\n");
  std::map<std::string, HotKey> out;
  for (int rank = 0;; ++rank) {
    std::string p = pool + ":hot_key:" + std::to_string(rank) + ":";
    auto key = stat_value(reply, p + "key");
    if (!key) break;
    HotKey k{*key, stat_value(reply, p + "server").value_or(""),
             std::stod(stat_value(reply, p + "share").value_or("0")),
             std::stod(stat_value(reply, p + "error").value_or("0"))};
    out[k.key] = k;
  }
  return out;
}

class HotKeys : public ::testing::Test {
 protected:
  void start(std::vector<std::pair<std::string, std::string>> directives) {
    fleet_ = std::make_unique<Fleet>(3);
    port_ = free_port();
    PoolSpec alpha{"alpha", "127.0.0.1:" + std::to_string(port_), std::move(directives),
                   fleet_->server_lines()};
    // Both workers take connections, one client each, as these tests were
    // written for: each worker's sketch sees its own client's traffic.
    proxy_ = start_proxy(dir_, config_yaml({alpha}), port_, {"--threads", "2", "--fixed-threads"},
                         dir_.path() + "/stderr.log");
    for (int i = 0; i < 2; ++i) clients_.push_back(std::make_unique<RawClient>(port_));
  }

  // `n` gets spread over both clients in pipelined batches: `hot` of them
  // for "hot-a", `warm` for "warm-b", the rest over 5000 other keys.
  // Counts what it sent.
  void load(int n, double hot, double warm) {
    std::uniform_real_distribution<double> u(0, 1);
    std::uniform_int_distribution<int> tail(0, 4999);
    constexpr int kBatch = 100;
    for (int sent = 0; sent < n; sent += kBatch) {
      RawClient& c = *clients_[(sent / kBatch) % clients_.size()];
      std::string batch;
      for (int i = 0; i < kBatch; ++i) {
        double r = u(rng_);
        std::string k = r < hot          ? "hot-a"
                        : r < hot + warm ? "warm-b"
                                         : "tail-" + std::to_string(tail(rng_));
        ++sent_[k];
        ++total_;
        batch.append("get ").append(k).append("\r\n");
      }
      c.send(batch);
      std::string got = c.read_count("END\r\n", kBatch);
      ASSERT_EQ(std::count(got.begin(), got.end(), '\n') >= kBatch, true);
    }
  }

  std::string server_of(const std::string& key) {
    auto s = ring_lookup(proxy_->config_path, {key}, "alpha");
    return s.empty() ? "" : s[0];
  }

  std::string log() {
    std::ifstream f(dir_.path() + "/stderr.log");
    std::stringstream s;
    s << f.rdbuf();
    return s.str();
  }

  TempDir dir_;
  std::unique_ptr<Fleet> fleet_;
  uint16_t port_ = 0;
  std::unique_ptr<Proxy> proxy_;
  std::vector<std::unique_ptr<RawClient>> clients_;
  std::mt19937 rng_{7};
  std::map<std::string, uint64_t> sent_;
  uint64_t total_ = 0;
};

TEST_F(HotKeys, ReportsBothHotKeysWithinTheirBoundAndNothingElse) {
  start({});
  load(30000, 0.30, 0.05);
  ASSERT_FALSE(HasFailure());
  auto hot = stats_hotkeys(port_, "alpha");
  ASSERT_EQ(hot.size(), 2u) << "expected hot-a and warm-b only";
  for (const char* k : {"hot-a", "warm-b"}) {
    ASSERT_TRUE(hot.contains(k)) << k;
    double truth = static_cast<double>(sent_[k]) / static_cast<double>(total_);
    EXPECT_LE(std::abs(hot[k].share - truth), hot[k].error) << k << " truth " << truth;
    EXPECT_LT(hot[k].error, 0.05) << k;
    EXPECT_EQ(hot[k].server, server_of(k)) << k;
  }

  // The JSON stats and /metrics say the same.
  std::string error;
  auto doc = fetch_stats_json(proxy_->stats_port, &error);
  ASSERT_TRUE(doc) << error;
  const Json* list = doc->get("hotkeys");
  ASSERT_TRUE(list != nullptr && list->kind == Json::Kind::array);
  ASSERT_EQ(list->items.size(), 2u);
  EXPECT_EQ(list->items[0].get("key")->string, "hot-a");
  EXPECT_EQ(list->items[0].get("server")->string, server_of("hot-a"));
  auto metrics = http_get(proxy_->stats_port, "/metrics");
  std::vector<Sample> samples;
  ASSERT_TRUE(parse_prometheus(metrics.body, samples, &error)) << error;
  auto share = metric(samples, "memshard_hot_key_share", {{"pool", "alpha"}, {"key", "hot-a"}});
  ASSERT_TRUE(share);
  EXPECT_NEAR(*share, hot["hot-a"].share, 0.05);
  EXPECT_EQ(samples_of(samples, "memshard_hot_key_share").size(), 2u);

  // The log names the hot key once its worker's tick has passed.
  auto until = Clock::now() + std::chrono::seconds(5);
  while (log().find("hot key in pool alpha: hot-a") == std::string::npos && Clock::now() < until) {
    std::this_thread::sleep_for(std::chrono::milliseconds(200));
    load(1000, 0.30, 0.05);
  }
  std::string l = log();
  EXPECT_NE(l.find("hot key in pool alpha: hot-a"), std::string::npos) << l;
  EXPECT_EQ(l.find("tail-"), std::string::npos) << l;
}

TEST_F(HotKeys, SpreadSendsAHotKeysGetsToEachOfItsCopies) {
  start({{"replicas", "2"}, {"hot_key_spread", "true"}});
  ASSERT_EQ(clients_[0]->roundtrip(set_command("hot-a", "v")), "STORED\r\n");
  // Only hot-a is stored: the servers' get_hits count its reads alone.
  auto until = Clock::now() + std::chrono::milliseconds(1300);
  while (Clock::now() < until) load(1000, 0.9, 0);
  std::vector<uint64_t> before;
  for (size_t i = 0; i < fleet_->size(); ++i) before.push_back((*fleet_)[i].stat("get_hits"));
  auto sent_before = sent_["hot-a"];
  load(4000, 0.9, 0);
  uint64_t hot_gets = sent_["hot-a"] - sent_before;
  std::vector<uint64_t> hits;
  for (size_t i = 0; i < fleet_->size(); ++i)
    hits.push_back((*fleet_)[i].stat("get_hits") - before[i]);
  std::sort(hits.begin(), hits.end());
  // Two copies, each about half; the third server holds none.
  EXPECT_EQ(hits[0], 0u);
  EXPECT_GT(hits[1], hot_gets / 4) << hits[1] << " of " << hot_gets;
  EXPECT_GT(hits[2], hot_gets / 4) << hits[2] << " of " << hot_gets;
  EXPECT_EQ(hits[1] + hits[2], hot_gets);
}

class HotKeyCacheTest : public HotKeys {
 protected:
  void SetUp() override { start({{"hot_key_cache", "1"}, {"hot_key_ttl", "1500"}}); }

  // Drives gets of "hot-a" (90%) until memshard counts it hot, then keeps
  // it cached.
  void warm_up() {
    auto until = Clock::now() + std::chrono::milliseconds(1300);
    while (Clock::now() < until) load(1000, 0.9, 0);
    load(1000, 0.9, 0);
  }
  std::string get(RawClient& c, const std::string& key) {
    return c.roundtrip("get " + key + "\r\n", "END\r\n");
  }
  uint64_t hits() {
    RawClient c(port_);
    auto v = stat_value(c.roundtrip("stats\r\n", "END\r\n"), "alpha:hot_key_hits");
    return v ? std::stoull(*v) : 0;
  }
};

TEST_F(HotKeyCacheTest, TheHotKeysServerSeesAFractionOfItsGets) {
  ASSERT_EQ(clients_[0]->roundtrip(set_command("hot-a", "v1")), "STORED\r\n");
  warm_up();
  size_t server = fleet_->index_of(server_of("hot-a"));
  ASSERT_LT(server, fleet_->size());
  uint64_t before = (*fleet_)[server].stat("get_hits");
  uint64_t hits_before = hits();
  auto sent_before = sent_["hot-a"];
  load(5000, 0.9, 0);
  uint64_t hot_gets = sent_["hot-a"] - sent_before;
  uint64_t on_server = (*fleet_)[server].stat("get_hits") - before;
  EXPECT_LT(on_server, hot_gets / 4) << on_server << " of " << hot_gets << " hot gets";
  EXPECT_GE(hits() - hits_before, hot_gets / 2);
}

TEST_F(HotKeyCacheTest, WritesThroughMemshardAreSeenAtOnce) {
  ASSERT_EQ(clients_[0]->roundtrip(set_command("hot-a", "v0")), "STORED\r\n");
  warm_up();
  RawClient& a = *clients_[0];
  RawClient& b = *clients_[1];
  for (int i = 1; i <= 40; ++i) {
    std::string v = "v" + std::to_string(i);
    // The old value is cached on both workers' side first.
    for (int j = 0; j < 5; ++j) {
      get(a, "hot-a");
      get(b, "hot-a");
    }
    RawClient& writer = i % 2 ? a : b;
    if (i % 3 == 0) {
      // A meta set, as binary clients' sets are sent too.
      ASSERT_EQ(writer.roundtrip("ms hot-a " + std::to_string(v.size()) + "\r\n" + v + "\r\n"),
                "HD\r\n");
    } else {
      ASSERT_EQ(writer.roundtrip(set_command("hot-a", v)), "STORED\r\n");
    }
    std::string want = "VALUE hot-a 0 " + std::to_string(v.size()) + "\r\n" + v + "\r\nEND\r\n";
    ASSERT_EQ(get(b, "hot-a"), want) << "after write " << i;
    ASSERT_EQ(get(a, "hot-a"), want) << "after write " << i;
  }
  EXPECT_GT(hits(), 0u);

  // A delete is a miss at once, from either client.
  get(a, "hot-a");
  get(b, "hot-a");
  ASSERT_EQ(a.roundtrip("delete hot-a\r\n"), "DELETED\r\n");
  EXPECT_EQ(get(b, "hot-a"), "END\r\n");
  EXPECT_EQ(get(a, "hot-a"), "END\r\n");

  // And so is a flush_all.
  ASSERT_EQ(a.roundtrip(set_command("hot-a", "again")), "STORED\r\n");
  for (int j = 0; j < 5; ++j) get(b, "hot-a");
  ASSERT_EQ(a.roundtrip("flush_all\r\n"), "OK\r\n");
  EXPECT_EQ(get(b, "hot-a"), "END\r\n");
}

TEST_F(HotKeyCacheTest, BinaryWritesAreSeenAtOnce) {
  ASSERT_EQ(clients_[0]->roundtrip(set_command("hot-a", "v0")), "STORED\r\n");
  warm_up();
  RawClient binary(port_);
  RawClient& text = *clients_[1];
  auto cached = [&] {
    for (int j = 0; j < 10; ++j) get(text, "hot-a");
  };
  const std::string_view ops[] = {"set", "append", "delete", "flush"};
  for (int round = 0; round < 5; ++round) {
    for (std::string_view op : ops) {
      ASSERT_EQ(clients_[0]->roundtrip(set_command("hot-a", "old")), "STORED\r\n");
      cached();
      std::string frame, want;
      if (op == "set") {
        frame = bin::request(bin::kSet, "hot-a", bin::store_extras(0, 0), "new");
        want = "VALUE hot-a 0 3\r\nnew\r\nEND\r\n";
      } else if (op == "append") {
        frame = bin::request(bin::kAppend, "hot-a", {}, "+");
        want = "VALUE hot-a 0 4\r\nold+\r\nEND\r\n";
      } else if (op == "delete") {
        frame = bin::request(bin::kDelete, "hot-a");
        want = "END\r\n";
      } else {
        frame = bin::request(bin::kFlush);
        want = "END\r\n";
      }
      binary.send(frame);
      auto reply = bin::read_frame(binary);
      ASSERT_TRUE(reply) << op;
      ASSERT_EQ(reply->status, bin::kOk) << op;
      EXPECT_EQ(get(text, "hot-a"), want) << op << " round " << round;
    }
  }
}

TEST_F(HotKeyCacheTest, BinaryGetsAndTextGetsAreAnsweredFromTheCacheWithTheServersCas) {
  ASSERT_EQ(clients_[0]->roundtrip(set_command("hot-a", "v1")), "STORED\r\n");
  warm_up();
  size_t server = fleet_->index_of(server_of("hot-a"));
  ASSERT_LT(server, fleet_->size());
  RawClient direct((*fleet_)[server].port());
  std::string on_server = direct.roundtrip("gets hot-a\r\n", "END\r\n");
  std::vector<Value> want;
  ASSERT_TRUE(parse_values(on_server, want));
  ASSERT_EQ(want.size(), 1u);
  uint64_t hits_before = (*fleet_)[server].stat("get_hits");
  RawClient binary(port_);
  constexpr int kReads = 200;
  for (int i = 0; i < kReads; ++i) {
    EXPECT_EQ(clients_[i % 2]->roundtrip("gets hot-a\r\n", "END\r\n"), on_server) << i;
    binary.send(bin::request(bin::kGet, "hot-a"));
    auto reply = bin::read_frame(binary);
    ASSERT_TRUE(reply);
    ASSERT_EQ(reply->status, bin::kOk);
    EXPECT_EQ(reply->value, "v1");
    EXPECT_EQ(std::to_string(reply->cas), want[0].cas);
  }
  // One fill (or a few, racing) rather than a read per request.
  EXPECT_LT((*fleet_)[server].stat("get_hits") - hits_before, uint64_t{kReads});
  // A cas with the unique read from the cache succeeds, and the next read
  // sees its value.
  ASSERT_EQ(clients_[0]->roundtrip(set_command("hot-a", "v2", "cas", 0, want[0].cas)),
            "STORED\r\n");
  EXPECT_EQ(get(*clients_[1], "hot-a"), "VALUE hot-a 0 2\r\nv2\r\nEND\r\n");
}

TEST_F(HotKeyCacheTest, AWriteOnTheServerIsSeenAfterTheTtl) {
  ASSERT_EQ(clients_[0]->roundtrip(set_command("hot-a", "proxy")), "STORED\r\n");
  warm_up();
  size_t server = fleet_->index_of(server_of("hot-a"));
  ASSERT_LT(server, fleet_->size());
  RawClient direct((*fleet_)[server].port());
  ASSERT_EQ(direct.roundtrip(set_command("hot-a", "direct")), "STORED\r\n");
  auto written = Clock::now();
  const std::string fresh = "VALUE hot-a 0 6\r\ndirect\r\nEND\r\n";
  // Within the TTL it may still be the cached value; past it, never.
  std::string seen = get(*clients_[0], "hot-a");
  EXPECT_TRUE(seen == fresh || seen == "VALUE hot-a 0 5\r\nproxy\r\nEND\r\n") << seen;
  std::this_thread::sleep_until(written + std::chrono::milliseconds(1600));
  for (int i = 0; i < 20; ++i) {
    EXPECT_EQ(get(*clients_[i % 2], "hot-a"), fresh) << i;
  }
}

}  // namespace
}  // namespace memshard::testing::ops
