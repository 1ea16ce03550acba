// The background migration of reload warm-up (reload_migrate_rate) on its
// own: two real memcached servers, a pool built from two configs the way a
// reload builds it (the second with the first's ring as its past), and the
// walk on its thread. The writes the workers would have in flight are
// played on the pool's guard (warm_guard.h) by hand, which is what the walk
// reads of them.
#include "proxy/runtime/migration.h"

#include <gtest/gtest.h>

#include <chrono>
#include <functional>
#include <string>
#include <thread>
#include <vector>

#include "conf/config.h"
#include "harness.h"
#include "proxy/routes/topology.h"
#include "proxy/routes/warm_guard.h"
#include "proxy/support/clock.h"

namespace memshard::proxy {
namespace {

using namespace std::chrono_literals;
using memshard::testing::Memcached;
using memshard::testing::RawClient;

constexpr int kKeys = 300;

std::string key(int i) {
  return "walk:" + std::to_string(i);
}
std::string value(int i) {
  return "value-of-" + std::to_string(i);
}

std::string yaml(const std::vector<uint16_t>& ports) {
  // timeout 200 ms: a copy a write got in the way of is tried again 200 ms
  // later.
  std::string text =
      "alpha:\n"
      "  listen: 127.0.0.1:22199\n"
      "  hash: md5\n"
      "  timeout: 200\n"
      "  reload_warmup: 60000\n"
      "  reload_migrate_rate: 5000\n"
      "  servers:\n";
  for (uint16_t p : ports) text += "   - 127.0.0.1:" + std::to_string(p) + ":1\n";
  return text;
}

std::shared_ptr<const Topology> topology(const std::vector<uint16_t>& ports, uint64_t generation,
                                         const Topology* previous) {
  conf::LoadResult loaded = conf::parse_config(yaml(ports), "migration_test.yml");
  if (!loaded.errors.empty()) throw std::runtime_error(loaded.errors.front().to_string());
  return build_topology(*loaded.config, generation, previous, monotonic_usec());
}

bool eventually(const std::function<bool()>& done, std::chrono::milliseconds limit = 10s) {
  const auto deadline = std::chrono::steady_clock::now() + limit;
  while (std::chrono::steady_clock::now() < deadline) {
    if (done()) return true;
    std::this_thread::sleep_for(5ms);
  }
  return done();
}

class MigrationTest : public ::testing::Test {
 protected:
  void SetUp() override {
    // Every key on the old fleet's one server, then the fleet grows by one.
    RawClient c(old_server_.port());
    for (int i = 0; i < kKeys; ++i) {
      const std::string v = value(i);
      c.roundtrip("set " + key(i) + " 0 0 " + std::to_string(v.size()) + "\r\n" + v + "\r\n",
                  "STORED\r\n");
    }
    before_ = topology({old_server_.port()}, 1, nullptr);
    after_ = topology({old_server_.port(), new_server_.port()}, 2, before_.get());
    ASSERT_EQ(after_->pools.size(), 1u);
    pool_ = &after_->pools[0];
    ASSERT_FALSE(pool_->past.empty()) << "the reload kept no past ring";
    ASSERT_NE(pool_->guard, nullptr);
    for (int i = 0; i < kKeys; ++i) {
      if (pool_->ring.lookup(key(i)) == 1) moved_.push_back(i);
    }
    ASSERT_GT(moved_.size(), 20u);
  }

  // The value the new server holds for key i ("" when none).
  std::string on_new_server(int i) {
    RawClient c(new_server_.port());
    const std::string got = c.roundtrip("get " + key(i) + "\r\n", "END\r\n");
    const std::string head = "VALUE " + key(i) + " ";
    if (!got.starts_with(head)) return "";
    const size_t start = got.find("\r\n") + 2;
    return got.substr(start, got.find("\r\n", start) - start);
  }

  Memcached old_server_, new_server_;
  std::shared_ptr<const Topology> before_, after_;
  const Pool* pool_ = nullptr;
  std::vector<int> moved_;
};

TEST_F(MigrationTest, CopiesEveryMovedKeyAndOnlyThose) {
  Migration m(*pool_);
  ASSERT_TRUE(eventually([&] { return !m.progress().running; }));
  const auto p = m.progress();
  EXPECT_EQ(p.moved, moved_.size());
  EXPECT_EQ(p.skipped, 0u);
  EXPECT_EQ(p.failed, 0u);
  EXPECT_EQ(p.pending, 0u);
  EXPECT_EQ(p.seen, static_cast<uint64_t>(kKeys));
  for (int i : moved_) EXPECT_EQ(on_new_server(i), value(i)) << key(i);
  // A key that stays on the old server is not copied.
  for (int i = 0; i < kKeys; ++i) {
    if (pool_->ring.lookup(key(i)) == 0) {
      EXPECT_EQ(on_new_server(i), "") << key(i);
      break;
    }
  }
}

// A write in flight when the walk reaches its key puts the copy off, not
// away: once the write is over, the key is copied like the others.
TEST_F(MigrationTest, AKeyBeingWrittenIsCopiedOnceTheWriteIsOver) {
  const int k = moved_.front();
  pool_->guard->begin(key(k));
  Migration m(*pool_);
  // Everything else copied, this one waiting for its next try.
  const bool waiting = eventually([&] {
    const auto p = m.progress();
    return p.moved == moved_.size() - 1 && p.pending == 1;
  });
  pool_->guard->end(key(k));
  EXPECT_TRUE(waiting) << "the key was not put off: moved " << m.progress().moved << " of "
                       << moved_.size() << ", skipped " << m.progress().skipped;
  ASSERT_TRUE(eventually([&] { return !m.progress().running; }));
  const auto p = m.progress();
  EXPECT_EQ(p.moved, moved_.size());
  EXPECT_EQ(p.skipped, 0u);
  EXPECT_EQ(on_new_server(k), value(k));
}

// A write that never ends (its server hangs past every try) costs that
// one key, counted as skipped; the walk still ends.
TEST_F(MigrationTest, AKeyWrittenPastEveryTryIsSkippedAndTheWalkEnds) {
  const int k = moved_.front();
  pool_->guard->begin(key(k));
  Migration m(*pool_);
  // Four tries, 200 ms apart.
  ASSERT_TRUE(eventually([&] { return !m.progress().running; }));
  const auto p = m.progress();
  EXPECT_EQ(p.moved, moved_.size() - 1);
  EXPECT_EQ(p.skipped, 1u);
  EXPECT_EQ(p.pending, 0u);
  EXPECT_EQ(on_new_server(k), "");
  pool_->guard->end(key(k));
}

// An old copy that may be stale (a write could not delete it) is never
// brought over.
TEST_F(MigrationTest, APoisonedKeyIsNeverCopied) {
  const int k = moved_.front();
  pool_->guard->poison(key(k));
  Migration m(*pool_);
  ASSERT_TRUE(eventually([&] { return !m.progress().running; }));
  const auto p = m.progress();
  EXPECT_EQ(p.moved, moved_.size() - 1);
  EXPECT_EQ(p.skipped, 1u);
  EXPECT_EQ(on_new_server(k), "");
}

// A fleet walks each old server once: two instances that made the same
// change (the same pool) run their walks at once; the lease in the old
// server lets one of them copy its keys, and the other sees who did.
TEST_F(MigrationTest, TwoInstancesWalkTheServerOnce) {
  Migration a(*pool_, "host-a:1"), b(*pool_, "host-b:2");
  ASSERT_TRUE(eventually([&] { return !a.progress().running && !b.progress().running; }));
  const auto pa = a.progress(), pb = b.progress();
  EXPECT_EQ(pa.moved + pb.moved, moved_.size()) << "each moved key copied once in the fleet";
  EXPECT_EQ(pa.seen + pb.seen, static_cast<uint64_t>(kKeys)) << "the server listed once";
  ASSERT_EQ(pa.walks.size(), 1u);
  ASSERT_EQ(pb.walks.size(), 1u);
  const std::string walker = pa.moved > 0 ? "host-a:1" : "host-b:2";
  for (const auto* p : {&pa, &pb}) {
    EXPECT_EQ(p->walks[0].server, old_server_.address());
    EXPECT_EQ(p->walks[0].walker, walker);
    EXPECT_EQ(p->walks[0].state, "done");
    EXPECT_EQ(p->walks[0].moved, moved_.size()) << "as the lease says";
  }
  for (int i : moved_) EXPECT_EQ(on_new_server(i), value(i)) << key(i);
}

// An instance that reloads after the walk is done skips it.
TEST_F(MigrationTest, AWalkDoneElsewhereIsNotWalkedAgain) {
  {
    Migration first(*pool_, "host-a:1");
    ASSERT_TRUE(eventually([&] { return !first.progress().running; }));
    ASSERT_EQ(first.progress().moved, moved_.size());
  }
  Migration later(*pool_, "host-b:2");
  ASSERT_TRUE(eventually([&] { return !later.progress().running; }));
  const auto p = later.progress();
  EXPECT_EQ(p.moved, 0u);
  EXPECT_EQ(p.seen, 0u);
  ASSERT_EQ(p.walks.size(), 1u);
  EXPECT_EQ(p.walks[0].walker, "host-a:1");
  EXPECT_EQ(p.walks[0].state, "done");
}

// A walker that died holds its lease until it lapses; then the next
// instance takes the walk over and copies everything.
TEST_F(MigrationTest, AWalkWhoseWalkerDiedIsTakenOverOnceItsLeaseLapses) {
  const ServerInfo& old = pool_->past.front().servers.front();
  const std::string lease = WalkLease::key_for(*pool_, old);
  const std::string dead = "walking host-dead:9 120 7";
  RawClient c(old_server_.port());
  c.roundtrip("ms " + lease + " " + std::to_string(dead.size()) + " T2\r\n" + dead + "\r\n",
              "HD\r\n");
  Migration m(*pool_, "host-b:2");
  ASSERT_TRUE(eventually([&] {
    const auto p = m.progress();
    return !p.walks.empty() && p.walks[0].walker == "host-dead:9";
  })) << "the dead walker's lease was not seen";
  EXPECT_EQ(m.progress().walks[0].seen, 120u) << "how far the lease says it got";
  EXPECT_EQ(m.progress().moved, 0u) << "nothing copied while the lease holds";
  ASSERT_TRUE(eventually([&] { return !m.progress().running; }, 15s));
  const auto p = m.progress();
  EXPECT_EQ(p.moved, moved_.size());
  EXPECT_EQ(p.walks[0].walker, "host-b:2");
  EXPECT_EQ(p.walks[0].state, "done");
  for (int i : moved_) EXPECT_EQ(on_new_server(i), value(i)) << key(i);
}

}  // namespace
}  // namespace memshard::proxy
