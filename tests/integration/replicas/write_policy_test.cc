// Each write policy with one of a key's copies down (SIGSTOP with a short
// timeout, or kill -9): `first` succeeds while any copy takes the write;
// `majority` needs more than half of the copies (1 of 2 is not, 2 of 3
// is); `all` fails when any copy fails. Whatever the client hears, the
// copies still up were written (the write goes to every live copy at once).
#include <gtest/gtest.h>

#include <signal.h>

#include <algorithm>

#include "replica_util.h"

namespace memshard::testing::replicas {
namespace {

enum class Fault { stop, kill };

struct PolicyCase {
  const char* name;
  const char* policy;
  size_t replicas;
  size_t down_copy;  // which copy of the keys is down: 0 first, 1 second...
  Fault fault;
  bool succeeds;
};

// Resumes a stopped server when the test ends, however it ends.
struct Resume {
  Memcached& m;
  bool stopped = false;
  ~Resume() {
    if (stopped) m.process().resume();
  }
};

class ReplicaWritePolicy : public ::testing::TestWithParam<PolicyCase> {};

TEST_P(ReplicaWritePolicy, OneCopyDown) {
  const PolicyCase& pc = GetParam();
  Fleet fleet(3);
  std::vector<uint16_t> ports = {fleet[0].port(), fleet[1].port(), fleet[2].port()};
  Proxy proxy([&](uint16_t listen) {
    return pool_config(listen, ports,
                       {"replicas: " + std::to_string(pc.replicas),
                        std::string("write_policy: ") + pc.policy, "timeout: 300"});
  });
  Copies copies(proxy.config_text(), pc.replicas);
  const uint16_t down = ports[0];
  std::vector<std::string> keys;
  for (uint64_t i = 0; keys.size() < 6 && i < 5000; ++i) {
    std::string k = random_key(std::string("user-") + pc.name, i);
    if (copies.of(k)[pc.down_copy] == down) keys.push_back(k);
  }
  ASSERT_EQ(keys.size(), 6u);

  Client c(proxy.port(), 10s);
  // All up: every policy succeeds, every copy holds the value.
  for (const std::string& k : keys) {
    ASSERT_EQ(c.set(k, "old-" + k), "STORED\r\n") << k << " " << c.error();
    for (uint16_t p : copies.of(k)) {
      std::optional<Held> h = held_on(p, k);
      ASSERT_TRUE(h.has_value()) << k << " missing on copy " << p;
      EXPECT_EQ(h->data, "old-" + k);
    }
  }

  Resume resume{fleet[0]};
  if (pc.fault == Fault::stop) {
    ASSERT_TRUE(fleet[0].process().suspend()) << "memcached did not stop";
    resume.stopped = true;
  } else {
    fleet[0].process().signal(SIGKILL);
    ASSERT_NE(fleet[0].process().wait_exit(5s), -1);
  }

  for (size_t i = 0; i < keys.size(); ++i) {
    const std::string& k = keys[i];
    auto t0 = Clock::now();
    std::string reply = c.set(k, "new-" + k);
    auto took = std::chrono::duration_cast<std::chrono::milliseconds>(Clock::now() - t0);
    if (pc.succeeds) {
      EXPECT_EQ(reply, "STORED\r\n") << "set " << k << " (copy " << pc.down_copy << " down): "
                                     << c.error();
    } else {
      EXPECT_TRUE(reply.starts_with("SERVER_ERROR")) << "set " << k << " (copy " << pc.down_copy
                                                      << " down): '" << printable(reply) << "' "
                                                      << c.error();
    }
    EXPECT_LT(took.count(), 3000) << "a write waited far longer than the 300 ms timeout";
    ASSERT_TRUE(c.ok()) << c.error();
    // The copies still up hold the new value, whatever the client was told.
    for (uint16_t p : copies.of(k)) {
      if (p == down) continue;
      std::optional<Held> h = held_on(p, k);
      ASSERT_TRUE(h.has_value()) << k << " missing on surviving copy " << p;
      EXPECT_EQ(h->data, "new-" + k) << "surviving copy " << p << " of " << k;
    }
    // No server outside the key's copies gained it.
    for (uint16_t p : ports) {
      if (p == down) continue;
      std::vector<uint16_t> mine = copies.of(k);
      if (std::find(mine.begin(), mine.end(), p) == mine.end()) {
        EXPECT_FALSE(held_on(p, k).has_value()) << k << " on " << p << ", not one of its copies";
      }
    }
  }

  // delete under the same policy: the reply as for set, the live copies emptied.
  std::string reply = c.call("delete " + keys[0] + "\r\n");
  if (pc.succeeds) {
    EXPECT_EQ(reply, "DELETED\r\n") << c.error();
  } else {
    EXPECT_TRUE(reply.starts_with("SERVER_ERROR")) << printable(reply) << " " << c.error();
  }
  for (uint16_t p : copies.of(keys[0])) {
    if (p != down) {
      EXPECT_FALSE(held_on(p, keys[0]).has_value()) << "copy " << p;
    }
  }
}

INSTANTIATE_TEST_SUITE_P(
    Policies, ReplicaWritePolicy,
    ::testing::Values(
        PolicyCase{"first_r2_first_stopped", "first", 2, 0, Fault::stop, true},
        PolicyCase{"first_r2_second_stopped", "first", 2, 1, Fault::stop, true},
        PolicyCase{"first_r2_first_killed", "first", 2, 0, Fault::kill, true},
        PolicyCase{"majority_r2_second_stopped", "majority", 2, 1, Fault::stop, false},
        PolicyCase{"majority_r2_first_killed", "majority", 2, 0, Fault::kill, false},
        PolicyCase{"majority_r3_first_stopped", "majority", 3, 0, Fault::stop, true},
        PolicyCase{"majority_r3_third_killed", "majority", 3, 2, Fault::kill, true},
        PolicyCase{"all_r2_second_stopped", "all", 2, 1, Fault::stop, false},
        PolicyCase{"all_r2_first_killed", "all", 2, 0, Fault::kill, false},
        PolicyCase{"all_r3_second_killed", "all", 3, 1, Fault::kill, false}),
    [](const ::testing::TestParamInfo<PolicyCase>& i) { return std::string(i.param.name); });

// A read whose first copy is stopped (it times out) is answered by the
// next copy: the issue lists a timeout among the failover triggers.
TEST(ReplicaReadFailover, FirstCopyStopped) {
  Fleet fleet(3);
  std::vector<uint16_t> ports = {fleet[0].port(), fleet[1].port(), fleet[2].port()};
  Proxy proxy([&](uint16_t listen) {
    return pool_config(listen, ports, {"replicas: 2", "timeout: 300"});
  });
  Copies copies(proxy.config_text(), 2);
  std::vector<std::string> keys;
  for (uint64_t i = 0; keys.size() < 4 && i < 5000; ++i) {
    std::string k = random_key("user-readstop", i);
    if (copies.of(k)[0] == ports[0]) keys.push_back(k);
  }
  ASSERT_EQ(keys.size(), 4u);
  Client c(proxy.port(), 10s);
  for (const std::string& k : keys) ASSERT_EQ(c.set(k, value_of(k)), "STORED\r\n");
  Resume resume{fleet[0]};
  ASSERT_TRUE(fleet[0].process().suspend());
  resume.stopped = true;
  for (const std::string& k : keys) {
    auto t0 = Clock::now();
    std::string reply = c.call("get " + k + "\r\n");
    auto took = std::chrono::duration_cast<std::chrono::milliseconds>(Clock::now() - t0);
    std::vector<Value> got;
    EXPECT_TRUE(parse_values(reply, got) && got.size() == 1 && got[0].data == value_of(k))
        << "get " << k << " with its first copy stopped: '" << printable(reply) << "' after "
        << took.count() << " ms " << c.error();
    ASSERT_TRUE(c.ok());
  }
  std::string req = "get";
  for (const std::string& k : keys) req += " " + k;
  std::string reply = c.call(req + "\r\n");
  std::vector<Value> got;
  EXPECT_TRUE(parse_values(reply, got) && got.size() == keys.size())
      << "multi-get with the keys' first copy stopped: '" << printable(reply) << "'";
}

}  // namespace
}  // namespace memshard::testing::replicas
