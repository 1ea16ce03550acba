// ReplicaPlacement and CopyPlacement (routes/replica_placement.h): a key's
// copies are its preference list on the ring of every server, ejected ones
// skipped, so an ejection moves no copy of a key that did not have it.
#include "proxy/routes/replica_placement.h"

#include <gtest/gtest.h>

#include <array>
#include <string>

#include "tests/proxy/routes/route_fakes.h"

namespace memshard::proxy::testing_fakes {
namespace {

ketama::Ring ring_of(size_t n) {
  std::vector<ketama::ServerEntry> servers;
  for (size_t i = 0; i < n; ++i) {
    ketama::ServerEntry e;
    e.host = "10.0.0." + std::to_string(i + 1);
    servers.push_back(e);
  }
  return ketama::Ring::build(servers, {});
}

class ReplicaPlacementTest : public testing::Test {
 protected:
  std::array<FakeServer, 4> fakes_;
  std::vector<Server*> servers_{&fakes_[0], &fakes_[1], &fakes_[2], &fakes_[3]};
  ketama::Ring ring_ = ring_of(4);
};

TEST_F(ReplicaPlacementTest, CopiesAreThePreferenceListFirstCopyTheRingsOwner) {
  ReplicaPlacement replicas(ring_, {}, 3, servers_);
  for (int i = 0; i < 500; ++i) {
    const std::string key = "key:" + std::to_string(i);
    std::array<size_t, kMaxReplicas> copies;
    ASSERT_EQ(replicas.copies(key, copies), 3u);
    EXPECT_EQ(copies[0], ring_.lookup(key)) << key;
    const std::vector<size_t> list = ring_.preference_list(key, 3);
    EXPECT_EQ(std::vector<size_t>(copies.begin(), copies.begin() + 3), list) << key;
    for (size_t c = 0; c < 3; ++c) {
      EXPECT_EQ(CopyPlacement(replicas, c).place(key), copies[c]);
    }
    EXPECT_EQ(CopyPlacement(replicas, 3).place(key), Placement::npos)
        << "a copy beyond the replicas has no server";
  }
}

TEST_F(ReplicaPlacementTest, EjectedServerIsSkippedAndNoOtherCopyMoves) {
  ReplicaPlacement all(ring_, {}, 2, servers_);
  ReplicaPlacement one_out(ring_, {true, false, true, true}, 2, servers_);
  int held = 0;
  for (int i = 0; i < 500; ++i) {
    const std::string key = "key:" + std::to_string(i);
    std::array<size_t, kMaxReplicas> before, after;
    ASSERT_EQ(all.copies(key, before), 2u);
    const size_t n = one_out.copies(key, after);
    if (before[0] == 1 || before[1] == 1) {
      ++held;
      ASSERT_EQ(n, 1u) << key << ": the key loses the ejected copy, and gains none";
      EXPECT_EQ(after[0], before[0] == 1 ? before[1] : before[0]);
    } else {
      ASSERT_EQ(n, 2u);
      EXPECT_EQ(after[0], before[0]) << key;
      EXPECT_EQ(after[1], before[1]) << key;
    }
  }
  EXPECT_GT(held, 0);
}

// Unlike rebuilding the ring without a server (which moves other keys
// where the compat mode's point counts depend on the total weight), an
// ejection in a replicated pool moves nothing else, whatever the weights
// and the mode: the ring is the same, the ejected server only skipped.
TEST_F(ReplicaPlacementTest, EjectionMovesNoOtherCopyInEveryModeWithUnequalWeights) {
  for (ketama::Mode mode :
       {ketama::Mode::twemproxy, ketama::Mode::libmemcached_weighted, ketama::Mode::libmemcached,
        ketama::Mode::libmemcached_spy, ketama::Mode::libketama, ketama::Mode::spymemcached}) {
    std::vector<ketama::ServerEntry> entries;
    for (uint32_t i = 0; i < 4; ++i) {
      ketama::ServerEntry e;
      e.host = "10.0.1." + std::to_string(i + 1);
      e.weight = i + 1;
      entries.push_back(e);
    }
    ketama::RingOptions options;
    options.mode = mode;
    const ketama::Ring ring = ketama::Ring::build(entries, options);
    ReplicaPlacement all(ring, {}, 3, servers_);
    ReplicaPlacement one_out(ring, {true, true, false, true}, 3, servers_);
    for (int i = 0; i < 300; ++i) {
      const std::string key = "user:" + std::to_string(i * 7919);
      std::array<size_t, kMaxReplicas> before, after;
      const size_t n = all.copies(key, before);
      const size_t m = one_out.copies(key, after);
      std::vector<size_t> expected;
      for (size_t c = 0; c < n; ++c) {
        if (before[c] != 2) expected.push_back(before[c]);
      }
      EXPECT_EQ(std::vector<size_t>(after.begin(), after.begin() + m), expected)
          << ketama::mode_name(mode) << " " << key;
    }
  }
}

}  // namespace
}  // namespace memshard::proxy::testing_fakes
