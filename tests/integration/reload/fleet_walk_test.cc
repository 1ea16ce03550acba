// reload_migrate_rate in a fleet: the instances that made the same change
// walk each old server once between them (a lease kept in that server,
// proxy/runtime/walk_lease.h), and when the instance walking a server dies
// another takes the walk over once its lease lapses. Two memshard
// processes switching together (reload_switch_at) in front of real
// memcached servers; what each walks is read from its `stats`.
#include <gtest/gtest.h>

#include <csignal>
#include <set>
#include <thread>

#include "fleet_util.h"

namespace memshard::testing::reload {
namespace {

using Clock = std::chrono::steady_clock;

const std::vector<size_t> kThree = {0, 1, 2};
const std::vector<size_t> kFour = {0, 1, 2, 3};

std::vector<std::string> directives(int rate, int64_t at = 0) {
  std::vector<std::string> d = {"reload_warmup: 60000",
                                "reload_migrate_rate: " + std::to_string(rate)};
  if (at != 0) d.push_back("reload_switch_at: " + std::to_string(at));
  return d;
}

// What an instance's stats say of one old server's walk.
struct Walk {
  std::string walker, state;
  bool here = false;
  uint64_t moved = 0;
};
Walk walk_of(const std::map<std::string, std::string>& stats, uint16_t server) {
  const std::string prefix = "main:migrate_walk:127.0.0.1:" + std::to_string(server) + ":";
  const auto get = [&](const std::string& name) {
    auto it = stats.find(prefix + name);
    return it == stats.end() ? std::string() : it->second;
  };
  Walk w;
  w.walker = get("walker");
  w.state = get("state");
  w.here = get("here") == "1";
  w.moved = get("moved").empty() ? 0 : std::stoull(get("moved"));
  return w;
}

class FleetWalk : public ::testing::Test {
 protected:
  // 3000 keys on servers 0-2 through instance 0; the keys a fourth server
  // takes.
  void write_keys() {
    Conn c(fleet_.port(0));
    for (uint64_t i = 0; i < 3000; ++i) {
      const std::string k = key_of("walk", i);
      ASSERT_TRUE(c.set(k, value_for(k, 0))) << c.error();
      keys_.push_back(k);
    }
    const Placement before(fleet_.config(0, kThree, directives(1)));
    const Placement after(fleet_.config(0, kFour, directives(1)));
    for (const std::string& k : keys_) {
      if (before.port_of(k) != after.port_of(k)) moved_.push_back(k);
    }
    ASSERT_GT(moved_.size(), 300u);
  }

  // Both instances reload onto four servers, switching together soon.
  void reload_both(int rate) {
    const int64_t at = unix_now() + 3;
    for (size_t i = 0; i < fleet_.size(); ++i) {
      ASSERT_TRUE(fleet_.reload(i, kFour, directives(rate, at)));
    }
  }

  // Waits (bounded) until every moved key is on its new server.
  ::testing::AssertionResult on_new_servers(std::chrono::seconds limit) {
    const Placement after(fleet_.config(0, kFour, directives(1)));
    const auto deadline = Clock::now() + limit;
    size_t missing = 0;
    while (Clock::now() < deadline) {
      missing = 0;
      for (const std::string& k : moved_) missing += direct_get(after.port_of(k), k) ? 0 : 1;
      if (missing == 0) return ::testing::AssertionSuccess();
      std::this_thread::sleep_for(200ms);
    }
    return ::testing::AssertionFailure()
           << missing << " of " << moved_.size() << " moved keys are not on their new server";
  }

  Fleet fleet_{4};
  std::vector<std::string> keys_, moved_;
};

TEST_F(FleetWalk, TwoInstancesWalkEachOldServerOnce) {
  ASSERT_TRUE(fleet_.start(2, kThree, directives(2000)));
  write_keys();
  reload_both(2000);
  // Both walks end: every old server walked here or there.
  for (size_t i = 0; i < 2; ++i) {
    ASSERT_TRUE(wait_stat(
        fleet_.port(i), "main:switches", [](uint64_t v) { return v == 1; }, 20s));
    ASSERT_TRUE(wait_stat(
        fleet_.port(i), "main:migrate_running", [](uint64_t v) { return v == 0; }, 30s))
        << "instance " << i << " still walking";
  }
  EXPECT_TRUE(on_new_servers(10s));
  const auto a = fleet_.stats(0), b = fleet_.stats(1);
  EXPECT_EQ(stat_of(a, "main:migrate_moved") + stat_of(b, "main:migrate_moved"), moved_.size())
      << "each moved key copied once in the fleet";
  EXPECT_EQ(stat_of(a, "main:migrate_seen") + stat_of(b, "main:migrate_seen"), keys_.size())
      << "each server listed once";
  for (size_t s : kThree) {
    const Walk wa = walk_of(a, fleet_.server_port(s)), wb = walk_of(b, fleet_.server_port(s));
    EXPECT_EQ(wa.state, "done") << "server " << s;
    EXPECT_EQ(wb.state, "done") << "server " << s;
    EXPECT_FALSE(wa.walker.empty()) << "server " << s;
    EXPECT_EQ(wa.walker, wb.walker) << "both know who walked server " << s;
    EXPECT_NE(wa.here, wb.here) << "one of them walked server " << s;
    EXPECT_EQ(wa.moved, wb.moved) << "and both know how far it got";
  }
}

TEST_F(FleetWalk, WhenTheWalkerDiesAnotherInstanceTakesItsWalkOver) {
  // Slow enough that the walk is caught half done: a walker's stats show
  // its progress when it renews its lease (every 2 s), and a server's ~250
  // moved keys take over 6 s at 40 keys/s. At 100 keys/s the walk could end
  // between the stats read and the kill (seen under the sanitized run).
  ASSERT_TRUE(fleet_.start(2, kThree, directives(40)));
  write_keys();
  reload_both(40);
  // Whichever instance is walking a server first is killed mid-walk.
  size_t victim = 2;
  uint16_t walked = 0;
  const auto deadline = Clock::now() + 30s;
  while (victim == 2 && Clock::now() < deadline) {
    for (size_t i = 0; i < 2 && victim == 2; ++i) {
      const auto s = fleet_.stats(i);
      for (size_t srv : kThree) {
        const Walk w = walk_of(s, fleet_.server_port(srv));
        if (w.here && w.state == "walking" && w.moved > 0) {
          victim = i;
          walked = fleet_.server_port(srv);
          break;
        }
      }
    }
    std::this_thread::sleep_for(50ms);
  }
  ASSERT_NE(victim, 2u) << "no instance was seen walking";
  fleet_.process(victim).signal(SIGKILL);
  const size_t survivor = 1 - victim;
  // The survivor ends every walk, the dead one's included once its lease
  // lapsed, and every moved key is on its new server.
  ASSERT_TRUE(wait_stat(
      fleet_.port(survivor), "main:migrate_running", [](uint64_t v) { return v == 0; }, 90s))
      << "the survivor's walk did not end";
  const auto s = fleet_.stats(survivor);
  const Walk taken = walk_of(s, walked);
  EXPECT_EQ(taken.state, "done");
  EXPECT_TRUE(taken.here) << "the survivor took over the walk of " << walked;
  EXPECT_NE(fleet_.log(survivor).find("migration"), std::string::npos);
  EXPECT_TRUE(on_new_servers(10s));
}

}  // namespace
}  // namespace memshard::testing::reload
