// DiscoveryMembership: the damping of DNS discovery, fed lookup results and
// their moments by hand (no DNS, no clock).
#include "proxy/runtime/discovery_membership.h"

#include <gtest/gtest.h>

#include <optional>
#include <string>
#include <vector>

#include "proxy/runtime/discovery.h"
#include "proxy/runtime/dns_client.h"

namespace memshard::proxy {
namespace {

using Event = DiscoveryMembership::Event;

DiscoveredMember m(const std::string& host, uint32_t weight = 1) {
  return DiscoveredMember{host, 11211, weight};
}

Members servers(std::initializer_list<const char*> hosts) {
  Members out;
  for (const char* h : hosts) out.push_back(m(h));
  return out;
}

std::vector<std::string> ids(const Members& ms) {
  std::vector<std::string> out;
  for (const auto& x : ms) out.push_back(x.identity());
  return out;
}

DiscoveryMembership::Settings settings(int64_t hold, double cap = 0.5, int64_t lead = 0) {
  DiscoveryMembership::Settings s;
  s.hold_ms = hold;
  s.max_change = cap;
  s.lead_ms = lead;
  return s;
}

TEST(DiscoveryMembership, TheSameRecordsChangeNothing) {
  DiscoveryMembership d(settings(1000), servers({"b", "a"}));
  EXPECT_EQ(ids(d.current()), (std::vector<std::string>{"a:11211", "b:11211"}));
  EXPECT_EQ(d.observe(0, servers({"a", "b"})), Event::unchanged);
  EXPECT_EQ(d.observe(1000, servers({"b", "a", "a"})), Event::unchanged);
  EXPECT_EQ(d.applied(), 0u);
  EXPECT_FALSE(d.has_candidate());
}

TEST(DiscoveryMembership, AJoinIsAppliedOnceSeenForTheHold) {
  DiscoveryMembership d(settings(3000), servers({"a", "b"}));
  EXPECT_EQ(d.observe(10000, servers({"a", "b", "c"})), Event::seen);
  EXPECT_TRUE(d.has_candidate());
  EXPECT_EQ(d.candidate_since_ms(), 10000);
  EXPECT_EQ(d.observe(11000, servers({"a", "b", "c"})), Event::waiting);
  EXPECT_EQ(d.observe(12000, servers({"a", "b", "c"})), Event::waiting);
  EXPECT_EQ(ids(d.current()).size(), 2u);
  ASSERT_EQ(d.observe(13000, servers({"a", "b", "c"})), Event::step);
  EXPECT_EQ(d.step().joined, (std::vector<std::string>{"c:11211"}));
  EXPECT_TRUE(d.step().left.empty());
  EXPECT_EQ(d.step().seen_ms, 10000);
  EXPECT_EQ(d.step().confirmed_ms, 13000);
  EXPECT_EQ(ids(d.current()).size(), 3u);
  EXPECT_EQ(d.applied(), 1u);
  EXPECT_EQ(d.held(), 0u);
  EXPECT_EQ(d.observe(14000, servers({"a", "b", "c"})), Event::unchanged);
}

TEST(DiscoveryMembership, ALeaveIsAppliedOnceSeenForTheHold) {
  DiscoveryMembership d(settings(2000), servers({"a", "b", "c"}));
  EXPECT_EQ(d.observe(0, servers({"a", "c"})), Event::seen);
  ASSERT_EQ(d.observe(2000, servers({"a", "c"})), Event::step);
  EXPECT_EQ(d.step().left, (std::vector<std::string>{"b:11211"}));
  EXPECT_EQ(ids(d.current()), (std::vector<std::string>{"a:11211", "c:11211"}));
}

TEST(DiscoveryMembership, AFlapShorterThanTheHoldChangesNothing) {
  DiscoveryMembership d(settings(5000), servers({"a", "b", "c"}));
  EXPECT_EQ(d.observe(0, servers({"a", "b"})), Event::seen);
  EXPECT_EQ(d.observe(1000, servers({"a", "b"})), Event::waiting);
  EXPECT_EQ(d.observe(2000, servers({"a", "b", "c"})), Event::dropped);
  EXPECT_FALSE(d.has_candidate());
  EXPECT_EQ(d.observe(6000, servers({"a", "b", "c"})), Event::unchanged);
  EXPECT_EQ(d.applied(), 0u);
  EXPECT_EQ(d.held(), 1u);
  EXPECT_EQ(ids(d.current()).size(), 3u);
}

TEST(DiscoveryMembership, AFailedOrEmptyLookupKeepsTheMembershipAndTheHold) {
  DiscoveryMembership d(settings(3000), servers({"a", "b"}));
  EXPECT_EQ(d.observe(0, std::nullopt), Event::failed);
  EXPECT_EQ(d.observe(1000, Members{}), Event::failed);
  EXPECT_EQ(d.failures(), 2u);
  EXPECT_EQ(ids(d.current()).size(), 2u);
  // A candidate keeps the moment it was first seen across failures.
  EXPECT_EQ(d.observe(2000, servers({"a", "b", "c"})), Event::seen);
  EXPECT_EQ(d.observe(3000, std::nullopt), Event::failed);
  EXPECT_EQ(d.observe(4000, Members{}), Event::failed);
  EXPECT_TRUE(d.has_candidate());
  ASSERT_EQ(d.observe(5000, servers({"a", "b", "c"})), Event::step);
  EXPECT_EQ(d.step().seen_ms, 2000);
}

TEST(DiscoveryMembership, AnotherChangeStartsTheHoldAnew) {
  DiscoveryMembership d(settings(2000), servers({"a"}));
  EXPECT_EQ(d.observe(0, servers({"a", "b"})), Event::seen);
  EXPECT_EQ(d.observe(1000, servers({"a", "b", "c"})), Event::replaced);
  EXPECT_EQ(d.held(), 1u);
  EXPECT_EQ(d.observe(2000, servers({"a", "b", "c"})), Event::waiting);
  EXPECT_EQ(d.observe(3000, servers({"a", "b", "c"})), Event::step);
  EXPECT_EQ(d.step().seen_ms, 1000);
}

TEST(DiscoveryMembership, HoldZeroAppliesAtTheFirstSight) {
  DiscoveryMembership d(settings(0), servers({"a", "b"}));
  ASSERT_EQ(d.observe(500, servers({"a", "c"})), Event::step);
  EXPECT_EQ(d.step().joined, (std::vector<std::string>{"c:11211"}));
  EXPECT_EQ(d.step().left, (std::vector<std::string>{"b:11211"}));
}

TEST(DiscoveryMembership, AChangeOverTheCapIsAppliedInStepsOneHoldApart) {
  // Four servers, 50%: at most two join and two leave per step.
  DiscoveryMembership d(settings(1000, 0.5, 500), servers({"a", "b", "c", "d"}));
  const Members target = servers({"a", "b", "c", "d", "e", "f", "g", "h", "i"});
  EXPECT_EQ(d.observe(0, target), Event::seen);
  ASSERT_EQ(d.observe(1000, target), Event::step);
  EXPECT_EQ(d.step().joined, (std::vector<std::string>{"e:11211", "f:11211"}));
  EXPECT_EQ(d.step().waiting, 3u);
  EXPECT_EQ(d.step().moment_ms, 1500);
  EXPECT_EQ(d.held(), 1u);
  EXPECT_EQ(d.current().size(), 6u);
  EXPECT_TRUE(d.has_candidate());
  // The next step's hold counts from the first one's switch (1500).
  EXPECT_EQ(d.observe(2000, target), Event::waiting);
  ASSERT_EQ(d.observe(2500, target), Event::step);
  // Six in force now: three may join.
  EXPECT_EQ(d.step().joined, (std::vector<std::string>{"g:11211", "h:11211", "i:11211"}));
  EXPECT_EQ(d.step().waiting, 0u);
  EXPECT_EQ(ids(d.current()), ids(target));
  EXPECT_FALSE(d.has_candidate());
  EXPECT_EQ(d.applied(), 2u);
}

TEST(DiscoveryMembership, TheCapNeverStopsAChangeOfOneServer) {
  DiscoveryMembership d(settings(0, 0.1), servers({"a"}));
  ASSERT_EQ(d.observe(0, servers({"b"})), Event::step);
  EXPECT_EQ(ids(d.current()), (std::vector<std::string>{"b:11211"}));
}

TEST(DiscoveryMembership, NoCapAppliesEverythingAtOnce) {
  DiscoveryMembership d(settings(0, 0), servers({"a"}));
  ASSERT_EQ(d.observe(0, servers({"a", "b", "c", "d", "e"})), Event::step);
  EXPECT_EQ(d.step().waiting, 0u);
  EXPECT_EQ(d.current().size(), 5u);
}

TEST(DiscoveryMembership, AWeightChangeIsAChange) {
  DiscoveryMembership d(settings(0), Members{m("a", 10), m("b", 10)});
  ASSERT_EQ(d.observe(0, Members{m("a", 10), m("b", 20)}), Event::step);
  EXPECT_EQ(d.step().reweighted, (std::vector<std::string>{"b:11211"}));
  EXPECT_EQ(d.current()[1].weight, 20u);
}

TEST(DiscoveryMembership, InstancesThatSeeTheSameRecordsDecideTheSameSteps) {
  // One instance missed a lookup (it failed): it confirms a grid tick later
  // but its steps keep the same moments.
  const Members target = servers({"a", "b", "c", "d", "e", "f"});
  DiscoveryMembership one(settings(2000, 0.5, 1000), servers({"a", "b"}));
  DiscoveryMembership two(settings(2000, 0.5, 1000), servers({"a", "b"}));
  std::vector<int64_t> moments_one, moments_two;
  for (int64_t t = 0; t <= 20000; t += 1000) {
    if (one.observe(t, target) == Event::step) moments_one.push_back(one.step().moment_ms);
    const bool fails = t == 2000;
    if (two.observe(t, fails ? std::nullopt : std::optional<Members>(target)) == Event::step)
      moments_two.push_back(two.step().moment_ms);
  }
  ASSERT_EQ(moments_one.size(), 3u);  // 2 -> 3 -> 4 -> 6
  EXPECT_EQ(moments_one, moments_two);
  EXPECT_EQ(ids(one.current()), ids(two.current()));
}

TEST(DiscoveryMembership, ResetPutsAMembershipInForceAndDropsTheCandidate) {
  DiscoveryMembership d(settings(1000), servers({"a"}));
  EXPECT_EQ(d.observe(0, servers({"a", "b"})), Event::seen);
  d.reset(servers({"c"}));
  EXPECT_FALSE(d.has_candidate());
  EXPECT_EQ(ids(d.current()), (std::vector<std::string>{"c:11211"}));
}

TEST(DiscoveryMembership, DescribesAChange) {
  std::vector<std::string> j, l, r;
  diff_members(servers({"a", "b"}), Members{m("b", 3), m("c")}, j, l, r);
  EXPECT_EQ(describe_change(j, l, r), "joined: c:11211; left: a:11211; new weight: b:11211");
  EXPECT_EQ(describe_change({}, {}, {}), "no change");
  EXPECT_EQ((DiscoveredMember{"::1", 11211, 1}).identity(), "[::1]:11211");
}

}  // namespace
}  // namespace memshard::proxy

// How an SRV answer becomes members (discovery.h): the lowest priority
// number only, weights as published, weight 0 left out unless all are 0.
namespace memshard::proxy {
namespace {

TEST(SrvMembers, TheLowestPriorityNumberWithItsWeights) {
  std::vector<std::string> notes;
  const Members ms = srv_members({{"b.test", 11211, 10, 20},
                                  {"a.test", 11212, 10, 10},
                                  {"backup.test", 11211, 20, 10},
                                  {"drained.test", 11211, 10, 0}},
                                 &notes);
  ASSERT_EQ(ms.size(), 2u);
  EXPECT_EQ(ms[0].identity(), "a.test:11212");
  EXPECT_EQ(ms[0].weight, 10u);
  EXPECT_EQ(ms[1].identity(), "b.test:11211");
  EXPECT_EQ(ms[1].weight, 20u);
  ASSERT_EQ(notes.size(), 2u);
  EXPECT_NE(notes[0].find("backup.test:11211: priority 20"), std::string::npos) << notes[0];
  EXPECT_NE(notes[1].find("drained.test:11211: weight 0"), std::string::npos) << notes[1];
}

TEST(SrvMembers, AllWeightsZeroCountAsOne) {
  const Members ms = srv_members({{"a.test", 1, 0, 0}, {"b.test", 1, 0, 0}}, nullptr);
  ASSERT_EQ(ms.size(), 2u);
  EXPECT_EQ(ms[0].weight, 1u);
  EXPECT_EQ(ms[1].weight, 1u);
}

TEST(SrvMembers, NothingUsableIsEmpty) {
  EXPECT_TRUE(srv_members({}, nullptr).empty());
  EXPECT_TRUE(srv_members({{"", 11211, 0, 1}, {".", 11211, 0, 1}}, nullptr).empty());
  // The same target and port twice is one server.
  EXPECT_EQ(srv_members({{"a.test", 1, 0, 5}, {"a.test", 1, 0, 5}}, nullptr).size(), 1u);
}

TEST(SrvMembers, TheRingNameIsTheEntryAddress) {
  EXPECT_EQ(entry_address(DiscoveredMember{"a.test", 11211, 1}), "a.test:11211");
  EXPECT_EQ(entry_address(DiscoveredMember{"10.0.0.1", 11212, 1}), "10.0.0.1:11212");
}

}  // namespace
}  // namespace memshard::proxy

// --dns-server's values (dns_client.h): an address, with or without a port.
namespace memshard::proxy {
namespace {

TEST(DnsServerFlag, AddressesWithOrWithoutAPort) {
  EXPECT_EQ(check_dns_server("127.0.0.1:5353"), "");
  EXPECT_EQ(check_dns_server("10.96.0.10"), "");
  EXPECT_EQ(check_dns_server("[::1]:53"), "");
  EXPECT_EQ(check_dns_server("[fd00::a]"), "");
  EXPECT_NE(check_dns_server("::1:53"), "");  // IPv6 goes in brackets
  EXPECT_NE(check_dns_server("dns.example:53"), "");
  EXPECT_NE(check_dns_server("127.0.0.1:0"), "");
  EXPECT_NE(check_dns_server("127.0.0.1:70000"), "");
  EXPECT_NE(check_dns_server("127.0.0.1:"), "");
  EXPECT_NE(check_dns_server("[::1"), "");
}

}  // namespace
}  // namespace memshard::proxy
