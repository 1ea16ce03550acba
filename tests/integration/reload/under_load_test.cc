// 50+ SIGHUP reloads under continuous load from several client connections,
// cycling through server lists that grow, shrink, swap and reweight, with a
// malformed and a semantically wrong config in the middle. Clients must see
// no error, no dropped connection and no wrong value; the last config must
// be in force; memshard must not keep file descriptors it no longer needs.
#include <gtest/gtest.h>

#include <algorithm>
#include <atomic>
#include <csignal>
#include <deque>
#include <random>
#include <regex>
#include <thread>

#include "ketama/analysis.h"
#include "reload_util.h"

namespace memshard::testing::reload {
namespace {

using Clock = std::chrono::steady_clock;

// What one load connection saw.
struct LoadReport {
  uint64_t sets = 0;
  uint64_t gets = 0;
  uint64_t get_hits = 0;
  uint64_t multi_gets = 0;
  uint64_t multi_get_keys = 0;
  uint64_t multi_get_hits = 0;
  std::vector<std::string> errors;
};

// One client connection, pipelining: each write carries 4 rounds of (set a
// fresh key, get one recent key) and, every 8th round, a multi-get over all
// recent keys plus keys never set; then the replies are read in order. A
// reload can thus fall between requests of one write, whose replies must
// still come back in request order. Each key is set exactly once, so "the
// last value this thread set" is unambiguous even when a reload moves the
// key back to a server that holds an older copy. A miss is fine (keys
// move); anything else must be exact.
void run_load(int id, uint16_t port, const std::atomic<bool>& stop, Clock::time_point deadline,
              LoadReport& report) {
  Conn c(port, 10s);
  auto error = [&](const std::string& what) { report.errors.push_back(what); };
  if (!c.ok()) return error("client " + std::to_string(id) + ": " + c.error());
  std::mt19937 rng(static_cast<unsigned>(id) * 7919u + 17u);
  std::deque<std::pair<std::string, uint64_t>> recent;
  struct Pending {
    enum { set, get, multi } kind;
    std::string key;                          // set, get
    std::vector<std::string> keys;            // multi
    std::map<std::string, uint64_t> counter;  // get, multi: counter of each key set
  };
  constexpr uint64_t kMaxRounds = 2'000'000;
  constexpr int kRoundsPerWrite = 4;
  uint64_t n = 0;
  std::vector<Hit> hits;
  std::string line;
  while (n < kMaxRounds && !stop.load() && Clock::now() < deadline) {
    std::string out;
    std::vector<Pending> pending;
    for (int r = 0; r < kRoundsPerWrite; ++r, ++n) {
      std::string key = key_of("L" + std::to_string(id), n);
      std::string value = value_for(key, n);
      out += "set " + key + " 0 0 " + std::to_string(value.size()) + "\r\n" + value + "\r\n";
      pending.push_back({Pending::set, key, {}, {}});
      recent.emplace_back(key, n);
      if (recent.size() > 64) recent.pop_front();

      const auto& [pick, counter] = recent[rng() % recent.size()];
      out += "get " + pick + "\r\n";
      pending.push_back({Pending::get, pick, {}, {{pick, counter}}});

      if (n % 8 != 7) continue;
      Pending m{Pending::multi, "", {}, {}};
      for (size_t i = 0; i < recent.size(); ++i) {
        m.keys.push_back(recent[i].first);
        m.counter[recent[i].first] = recent[i].second;
        if (i % 5 == 0)
          m.keys.push_back(key_of("never:" + std::to_string(id) + ":" + std::to_string(i), n));
      }
      out += "get";
      for (const auto& k : m.keys) out += " " + k;
      out += "\r\n";
      pending.push_back(std::move(m));
    }
    if (!c.send(out)) return error("send: " + c.error());
    for (const Pending& p : pending) {
      if (p.kind == Pending::set) {
        if (!c.read_line(line)) return error("set " + p.key + ": " + c.error());
        if (line != "STORED") return error("set " + p.key + ": got '" + line + "'");
        ++report.sets;
        continue;
      }
      if (!c.read_values(hits)) {
        return error((p.kind == Pending::get ? "get " + p.key : "multi-get") + ": " + c.error());
      }
      if (p.kind == Pending::get) {
        ++report.gets;
        if (hits.size() > 1 ||
            (hits.size() == 1 &&
             (hits[0].key != p.key || hits[0].data != value_for(p.key, p.counter.at(p.key))))) {
          return error("get " + p.key + ": wrong reply (" + std::to_string(hits.size()) +
                       " values, first key '" + hits[0].key + "', " +
                       std::to_string(hits[0].data.size()) + " bytes)");
        }
        report.get_hits += hits.size();
        continue;
      }
      ++report.multi_gets;
      report.multi_get_keys += p.keys.size();
      // Hits must come in the order asked, each once, each exact.
      size_t next = 0;
      for (const Hit& h : hits) {
        while (next < p.keys.size() && p.keys[next] != h.key) ++next;
        if (next == p.keys.size())
          return error("multi-get: '" + h.key + "' out of order or not asked");
        ++next;
        auto it = p.counter.find(h.key);
        if (it == p.counter.end()) return error("multi-get: a value for never-set key " + h.key);
        if (h.data != value_for(h.key, it->second)) {
          return error("multi-get: wrong value for " + h.key + " (" +
                       std::to_string(h.data.size()) + " bytes)");
        }
      }
      report.multi_get_hits += hits.size();
    }
  }
}

std::vector<double> logged_moves(const std::string& log) {
  std::vector<double> out;
  std::regex re(R"(pool 'main': ([0-9.]+)% of the keyspace changes server)");
  for (auto it = std::sregex_iterator(log.begin(), log.end(), re); it != std::sregex_iterator();
       ++it) {
    out.push_back(std::stod((*it)[1].str()));
  }
  return out;
}

TEST(ReloadUnderLoad, FiftyReloadsGrowShrinkSwapReweightWithBrokenConfigs) {
  std::vector<std::unique_ptr<Memcached>> mc;
  std::vector<uint16_t> ports;
  for (int i = 0; i < 5; ++i) {
    mc.push_back(std::make_unique<Memcached>());
    ports.push_back(mc.back()->port());
  }
  TempDir dir;
  uint16_t port = free_port();
  auto config = [&](std::vector<std::pair<int, uint32_t>> servers) {
    PoolDef p;
    p.listen = listen_on(port);
    for (auto [i, w] : servers) p.servers.push_back(ServerRef{ports[static_cast<size_t>(i)], w});
    return yaml(p);
  };
  const std::string initial = config({{0, 1}, {1, 1}, {2, 1}});
  // Each a change from the one before it: grow, grow, shrink, shrink, swap,
  // reweight, grow + reweight, reorder only, swap, reweight, one server,
  // all with distinct weights.
  const std::vector<std::string> cycle = {
      config({{0, 1}, {1, 1}, {2, 1}, {3, 1}}),
      config({{0, 1}, {1, 1}, {2, 1}, {3, 1}, {4, 1}}),
      config({{1, 1}, {2, 1}, {3, 1}, {4, 1}}),
      config({{2, 1}, {3, 1}, {4, 1}}),
      config({{0, 1}, {1, 1}, {3, 1}}),
      config({{0, 1}, {1, 3}, {3, 1}}),
      config({{0, 2}, {1, 1}, {3, 1}, {4, 2}}),
      config({{4, 2}, {3, 1}, {1, 1}, {0, 2}}),
      config({{3, 1}, {4, 1}}),
      config({{0, 1}, {2, 1}, {4, 3}}),
      config({{1, 1}}),
      config({{0, 1}, {1, 2}, {2, 3}, {3, 4}, {4, 5}}),
  };
  const std::string malformed = "main:\n  listen: " + listen_on(port) +
                                "\n  servers: [127.0.0.1:" + std::to_string(ports[0]) + ":1\n";
  std::string semantic = config({{0, 1}, {4, 1}});
  semantic.replace(semantic.find("fnv1a_64"), 8, "no_such_hash");

  struct Step {
    std::string text;
    bool broken;
  };
  std::vector<Step> steps;
  for (size_t i = 0; i < 51; ++i) {
    if (i == 17) steps.push_back({malformed, true});
    if (i == 34) steps.push_back({semantic, true});
    steps.push_back({cycle[i % cycle.size()], false});
  }
  // Last: away to servers the initial config does not use, then back to the
  // initial config, so the descriptor count is taken in the same state.
  steps.push_back({config({{3, 1}, {4, 1}}), false});
  steps.push_back({initial, false});
  ASSERT_GE(steps.size(), 50u);

  const std::string path = dir.write("memshard.yml", initial);
  const std::string log = dir.path() + "/memshard.log";
  Memshard ms(path, memshard_args({"--threads", "2", "--fixed-threads", "-o", log, "-v", "6"}),
              port);
  ASSERT_TRUE(wait_ready(port)) << "memshard does not answer stats";
  const pid_t pid = ms.process().pid();
  const std::vector<uint16_t> initial_servers = {ports[0], ports[1], ports[2]};

  // Baseline: every worker connected to every server of the initial config,
  // no client open.
  ASSERT_TRUE(warm_every_worker(port, pid, initial_servers));
  const int fds_before = settled_fds(pid, 500ms, 5s);
  ASSERT_GT(fds_before, 0);

  std::atomic<bool> stop{false};
  const auto load_deadline = Clock::now() + 90s;
  constexpr int kClients = 4;
  std::vector<LoadReport> reports(kClients);
  std::vector<std::thread> threads;
  for (int i = 0; i < kClients; ++i) {
    threads.emplace_back(run_load, i, port, std::cref(stop), load_deadline, std::ref(reports[i]));
  }
  // Traffic first, so the first reload already happens under load.
  std::this_thread::sleep_for(200ms);

  uint64_t generation = 1, failures = 0, good = 0;
  std::vector<double> expected_moves;
  std::string in_force = initial;
  for (size_t i = 0; i < steps.size(); ++i) {
    const Step& step = steps[i];
    dir.write("memshard.yml", step.text);
    ms.process().signal(SIGHUP);
    if (step.broken) {
      auto f = wait_stat(port, "config_reload_failures", [&](uint64_t v) { return v > failures; });
      ASSERT_TRUE(f.has_value()) << "step " << i << ": broken config, failures never moved";
      ASSERT_EQ(*f, failures + 1) << "step " << i;
      failures = *f;
      auto g = stat_of(proxy_stats(port), "config_generation");
      ASSERT_EQ(g, generation) << "step " << i << ": a broken config changed the generation";
    } else {
      auto g = wait_stat(port, "config_generation", [&](uint64_t v) { return v > generation; });
      ASSERT_TRUE(g.has_value()) << "step " << i << ": generation never moved past " << generation;
      ASSERT_EQ(*g, generation + 1) << "step " << i;
      generation = *g;
      ++good;
      Placement a(in_force), b(step.text);
      expected_moves.push_back(ketama::diff(a.ring(), b.ring()).moved * 100.0);
      in_force = step.text;
    }
    ASSERT_TRUE(ms.process().running()) << "memshard died at step " << i;
    std::this_thread::sleep_for(30ms);
  }
  // A little more traffic on the final config, then stop the load.
  std::this_thread::sleep_for(300ms);
  stop = true;
  for (auto& t : threads) t.join();

  LoadReport total;
  for (int i = 0; i < kClients; ++i) {
    const LoadReport& r = reports[i];
    for (const auto& e : r.errors) ADD_FAILURE() << "client " << i << ": " << e;
    EXPECT_GT(r.sets, 50u) << "client " << i << " hardly ran";
    EXPECT_GT(r.multi_gets, 5u) << "client " << i;
    total.sets += r.sets;
    total.gets += r.gets;
    total.get_hits += r.get_hits;
    total.multi_gets += r.multi_gets;
    total.multi_get_keys += r.multi_get_keys;
    total.multi_get_hits += r.multi_get_hits;
  }
  EXPECT_GT(total.get_hits, 0u);
  EXPECT_GT(total.multi_get_hits, 0u);
  std::cout << "load: " << total.sets << " sets, " << total.gets << " gets (" << total.get_hits
            << " hits), " << total.multi_gets << " multi-gets over " << total.multi_get_keys
            << " keys (" << total.multi_get_hits << " hits) during " << steps.size()
            << " reloads\n";

  auto s = proxy_stats(port);
  ASSERT_FALSE(s.empty());
  EXPECT_EQ(stat_of(s, "config_generation"), 1 + good);
  EXPECT_EQ(stat_of(s, "config_reloads"), good);
  EXPECT_EQ(stat_of(s, "config_reload_failures"), 2u);
  EXPECT_EQ(stat_of(s, "forward_error"), 0u);
  EXPECT_EQ(stat_of(s, "client_errors"), 0u);

  // The final list is in force.
  EXPECT_TRUE(keys_land_per_config(port, initial, ports, "final:", 100));

  // The log gives, per reload, the fraction of the keyspace that moved.
  std::vector<double> moves = logged_moves(read_file(log));
  ASSERT_EQ(moves.size(), expected_moves.size()) << read_file(log);
  for (size_t i = 0; i < moves.size(); ++i) {
    EXPECT_NEAR(moves[i], expected_moves[i], 0.0001) << "reload " << i + 1;
  }

  // Same config, same warm-up, no client open: no more descriptors than before.
  ASSERT_TRUE(warm_every_worker(port, pid, initial_servers));
  int fds_after = settled_fds(pid, 500ms, 5s);
  for (int i = 0; i < 40 && fds_after > fds_before; ++i) {  // draining backends go within ~1 s
    std::this_thread::sleep_for(100ms);
    fds_after = count_fds(pid);
  }
  std::cout << "memshard descriptors: " << fds_before << " before the reloads, " << fds_after
            << " after\n";
  EXPECT_LE(fds_after, fds_before)
      << "descriptors before the reloads: " << fds_before << ", after: " << fds_after;
  EXPECT_TRUE(ms.process().running());
}

}  // namespace
}  // namespace memshard::testing::reload
