// describe() and diff(): exact numbers, checked against identities and
// against lookups of sampled hash values.
#include "ketama/analysis.h"

#include <gtest/gtest.h>

#include <cmath>
#include <map>

#include "test_support.h"

namespace memshard::ketama {
namespace {

using testing::Random;
using testing::server;

constexpr double kSpace = 4294967296.0;

RingOptions with(Distribution d, Mode mode = Mode::twemproxy) {
  RingOptions o;
  o.mode = mode;
  o.distribution = d;
  return o;
}

// Fraction of uniformly sampled hash values whose owner's address differs.
double sampled_moved(const Ring& a, const Ring& b, Random& random, size_t samples) {
  size_t moved = 0;
  for (size_t i = 0; i < samples; ++i) {
    auto h = static_cast<uint32_t>(random.below(uint64_t{1} << 32));
    size_t x = a.server_for_hash(h);
    size_t y = b.server_for_hash(h);
    bool same =
        x != Ring::npos && y != Ring::npos && a.servers()[x].address() == b.servers()[y].address();
    moved += same ? 0 : 1;
  }
  return static_cast<double>(moved) / static_cast<double>(samples);
}

// Five standard errors of a sampled fraction: loose enough never to flake,
// tight enough to catch a wrong formula.
double tolerance(double p, size_t samples) {
  return 5 * std::sqrt(std::max(p * (1 - p), 1e-6) / static_cast<double>(samples)) + 1e-9;
}

TEST(Describe, SharesMatchSampledLookups) {
  Random random(200);
  Ring ring = Ring::build(random.servers(20, true), RingOptions{});
  RingReport report = describe(ring);
  ASSERT_EQ(report.servers.size(), 20u);
  constexpr size_t kSamples = 400000;
  std::vector<size_t> hits(20, 0);
  for (size_t i = 0; i < kSamples; ++i) {
    ++hits[ring.server_for_hash(static_cast<uint32_t>(random.below(uint64_t{1} << 32)))];
  }
  for (size_t i = 0; i < 20; ++i) {
    const ServerShare& s = report.servers[i];
    EXPECT_EQ(s.address, ring.servers()[i].address());
    EXPECT_EQ(s.ring_name, ring.ring_name(i));
    EXPECT_EQ(s.points, ring.point_count(i));
    EXPECT_EQ(s.share, static_cast<double>(ring.owned_hashes()[i]) / kSpace);
    double sampled = static_cast<double>(hits[i]) / kSamples;
    EXPECT_NEAR(sampled, s.share, tolerance(s.share, kSamples)) << s.address;
  }
}

TEST(Describe, CoefficientOfVariation) {
  // modula with equal weights: shares differ by at most one value.
  Ring modula = Ring::build(testing::numbered_servers(4), with(Distribution::modula));
  EXPECT_LT(describe(modula).share_cv, 1e-9);
  // Weights 1 and 3 under modula: shares 1/4 and 3/4, CV = 0.25 / 0.5.
  Ring uneven = Ring::build({server("a", 1, 1), server("b", 1, 3)}, with(Distribution::modula));
  EXPECT_NEAR(describe(uneven).share_cv, 0.5, 1e-9);
  // Dead servers are left out.
  Ring ejected = Ring::build(testing::numbered_servers(4), with(Distribution::modula),
                             {true, true, false, true});
  RingReport r = describe(ejected);
  EXPECT_EQ(r.servers[2].share, 0.0);
  EXPECT_LT(r.share_cv, 1e-9);
}

TEST(Diff, IdenticalRingsMoveNothing) {
  Random random(201);
  std::vector<ServerEntry> servers = random.servers(30, true);
  Ring a = Ring::build(servers, RingOptions{});
  Ring b = Ring::build(servers, RingOptions{});
  RingDiff d = diff(a, b);
  EXPECT_EQ(d.moved, 0.0);
  for (const ServerMove& m : d.servers) {
    EXPECT_EQ(m.gained, 0.0);
    EXPECT_EQ(m.lost, 0.0);
    EXPECT_FALSE(m.only_in_old || m.only_in_new);
  }
}

// Servers are matched by address, not by position: reordering the list of a
// libmemcached ring changes tie-breaks at most, a twemproxy ring not at all.
TEST(Diff, MatchesServersByAddress) {
  std::vector<ServerEntry> servers = testing::numbered_servers(8);
  std::vector<ServerEntry> reversed(servers.rbegin(), servers.rend());
  RingDiff d = diff(Ring::build(servers, RingOptions{}), Ring::build(reversed, RingOptions{}));
  EXPECT_EQ(d.moved, 0.0);
  EXPECT_EQ(d.servers.size(), 8u);
  EXPECT_EQ(d.servers[0].address, servers[0].address());
}

struct Pair {
  const char* name;
  Distribution before;
  Distribution after;
};

class DiffAgainstSampling : public ::testing::TestWithParam<Pair> {};

INSTANTIATE_TEST_SUITE_P(
    Distributions, DiffAgainstSampling,
    ::testing::Values(Pair{"ketama_ketama", Distribution::ketama, Distribution::ketama},
                      Pair{"ketama_modula", Distribution::ketama, Distribution::modula},
                      Pair{"modula_ketama", Distribution::modula, Distribution::ketama},
                      Pair{"modula_modula", Distribution::modula, Distribution::modula}),
    [](const ::testing::TestParamInfo<Pair>& param) { return std::string(param.param.name); });

// A config change: some servers removed, some added, weights changed.
TEST_P(DiffAgainstSampling, ExactNumbersAgreeWithSampledHashes) {
  Random random(202);
  std::vector<ServerEntry> old_servers = random.servers(15, true);
  for (ServerEntry& s : old_servers) {
    s.weight = 1 + s.weight % 5;  // keep modula's slot lists short
  }
  std::vector<ServerEntry> new_servers(old_servers.begin() + 3, old_servers.end());
  new_servers[0].weight += 2;
  new_servers.push_back(server("10.200.0.1", 11211, 2));
  new_servers.push_back(server("10.200.0.2", 11212, 1));
  Ring before = Ring::build(old_servers, with(GetParam().before));
  Ring after = Ring::build(new_servers, with(GetParam().after));

  RingDiff d = diff(before, after);
  constexpr size_t kSamples = 300000;
  double sampled = sampled_moved(before, after, random, kSamples);
  EXPECT_NEAR(d.moved, sampled, tolerance(d.moved, kSamples));

  // Identities: what left old servers is what moved, and so is what arrived.
  double lost = 0;
  double gained = 0;
  for (const ServerMove& m : d.servers) {
    lost += m.lost;
    gained += m.gained;
    EXPECT_GE(m.lost, -1e-12);
    EXPECT_GE(m.gained, -1e-12);
  }
  EXPECT_NEAR(lost, d.moved, 1e-9);
  EXPECT_NEAR(gained, d.moved, 1e-9);
  ASSERT_EQ(d.servers.size(), 17u);
  for (size_t i = 0; i < 3; ++i) {
    EXPECT_TRUE(d.servers[i].only_in_old);
    EXPECT_EQ(d.servers[i].gained, 0.0);
  }
  EXPECT_TRUE(d.servers[15].only_in_new);
  EXPECT_TRUE(d.servers[16].only_in_new);
  EXPECT_EQ(d.servers[16].lost, 0.0);

  RingDiff back = diff(after, before);
  EXPECT_NEAR(back.moved, d.moved, 1e-12);
}

// Modula's owner depends on hash % L, so its diff is exact arithmetic:
// 2 servers -> 3 servers keeps value v where v % 2 == v % 3 (v % 6 in {0, 1}),
// i.e. 2/6 of the keyspace up to the remainder of 2^32 / 6.
TEST(Diff, ModulaGrowthIsExact) {
  std::vector<ServerEntry> two = {server("a", 1), server("b", 1)};
  std::vector<ServerEntry> three = {server("a", 1), server("b", 1), server("c", 1)};
  RingDiff d = diff(Ring::build(two, with(Distribution::modula)),
                    Ring::build(three, with(Distribution::modula)));
  // Residues 0 and 1 of 6: floor((2^32-1)/6)+1 and floor((2^32-2)/6)+1 values.
  double kept = static_cast<double>((uint64_t{1} << 32) / 6 + 1) * 2;  // 2^32 % 6 == 4
  EXPECT_DOUBLE_EQ(d.moved, (kSpace - kept) / kSpace);
}

// ketama -> modula, checked with an independent count: the values in
// [lo, hi] congruent to r mod L are those from the first one >= lo in steps
// of L.
TEST(Diff, KetamaToModulaIsExact) {
  std::vector<ServerEntry> servers = {server("a", 1), server("b", 1), server("c", 1)};
  Ring ketama_ring = Ring::build(servers, RingOptions{});
  Ring modula_ring = Ring::build(servers, with(Distribution::modula));
  const std::vector<uint32_t>& slots = modula_ring.slots();
  auto congruent_in = [](uint64_t lo, uint64_t hi, uint64_t r, uint64_t l) -> uint64_t {
    uint64_t first = lo + (r + l - lo % l) % l;
    return first > hi ? 0 : (hi - first) / l + 1;
  };
  double kept = 0;
  uint64_t lo = 0;
  for (const Arc& arc : ketama_ring.arcs()) {
    for (uint64_t r = 0; r < slots.size(); ++r) {
      if (slots[r] == arc.server) {
        kept += static_cast<double>(congruent_in(lo, arc.last, r, slots.size()));
      }
    }
    lo = uint64_t{arc.last} + 1;
  }
  EXPECT_DOUBLE_EQ(diff(ketama_ring, modula_ring).moved, (kSpace - kept) / kSpace);

  // One server owns everything; under modula over {a, b, c} it keeps the
  // values divisible by 3.
  Ring single = Ring::build({server("a", 1)}, RingOptions{});
  double thirds = static_cast<double>((uint64_t{1} << 32) / 3 + 1);
  EXPECT_DOUBLE_EQ(diff(single, modula_ring).moved, (kSpace - thirds) / kSpace);
}

TEST(Diff, RandomDistributionGivesExpectations) {
  Ring random_ring = Ring::build(testing::numbered_servers(4), with(Distribution::random));
  Ring ketama_ring = Ring::build(testing::numbered_servers(4), RingOptions{});
  // A value stays put with probability 1/4 whoever owns it on the ketama side.
  EXPECT_NEAR(diff(ketama_ring, random_ring).moved, 0.75, 1e-12);
  EXPECT_NEAR(diff(random_ring, random_ring).moved, 0.75, 1e-12);
}

TEST(Diff, FromOrToNothingLive) {
  std::vector<ServerEntry> servers = testing::numbered_servers(3);
  Ring none = Ring::build(servers, RingOptions{}, {false, false, false});
  Ring all = Ring::build(servers, RingOptions{});
  EXPECT_EQ(diff(none, all).moved, 1.0);
  EXPECT_EQ(diff(all, none).moved, 1.0);
  EXPECT_EQ(diff(all, none).servers[0].gained, 0.0);
  // Nothing live on either side (a routing pool's ring, which holds no
  // keys): no key had an owner or gets one, so none moved.
  EXPECT_EQ(diff(none, none).moved, 0.0);
  EXPECT_EQ(diff(Ring::none(), Ring::none()).moved, 0.0);
  EXPECT_EQ(diff(Ring::none(), all).moved, 1.0);
}

// A new key hash moves keys to new points, so comparing the continua point
// by point would say nothing moved. The diff must instead report what
// happens to real keys, which we sample here.
TEST(Diff, ChangingTheKeyHashIsMeasuredOnKeysNotPoints) {
  Random random(203);
  std::vector<ServerEntry> servers = random.servers(8, false);
  RingOptions fnv;
  RingOptions murmur;
  murmur.hash = HashFunction::murmur;
  Ring before = Ring::build(servers, fnv);
  Ring after = Ring::build(servers, murmur);
  RingDiff d = diff(before, after);
  EXPECT_FALSE(d.exact);
  constexpr size_t kSamples = 200000;
  size_t moved = 0;
  for (size_t i = 0; i < kSamples; ++i) {
    std::string key = "user:" + std::to_string(random.below(uint64_t{1} << 40));
    moved += before.lookup(key) == after.lookup(key) ? 0 : 1;
  }
  double sampled = static_cast<double>(moved) / kSamples;
  EXPECT_NEAR(d.moved, sampled, tolerance(d.moved, kSamples) + 0.01);
  EXPECT_GT(d.moved, 0.8);  // about 7/8 of the keys with 8 even servers
  // The same hash and ring: nothing moves, and the figure is exact.
  EXPECT_TRUE(diff(before, Ring::build(servers, fnv)).exact);
}

}  // namespace
}  // namespace memshard::ketama
