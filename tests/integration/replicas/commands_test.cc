// Commands across the copies of a key (`replicas: 2` over three servers),
// each checked on the servers themselves:
//   add     the first copy decides: refused when it holds the key (no copy
//           gains the value, even one that lacked the key), stored when it
//           lacks it (then every copy holds the new value, even a second
//           copy that held an older one);
//   cas     gets through memshard gives the first copy's unique; a cas with
//           it succeeds and leaves one value on every copy; a stale one is
//           refused and changes no copy;
//   incr, decr, delete, replace, append, prepend, touch, gat: every copy;
//   multi-get: the client's order, misses absent;
//   meta ms, mg, md, ma: the same rules (ms in add mode and with C as add
//           and cas);
//   read repair: the value written back keeps its flags and remaining TTL.
#include <gtest/gtest.h>

#include <algorithm>

#include "replica_util.h"

namespace memshard::testing::replicas {
namespace {

class ReplicaCommands : public ::testing::Test {
 protected:
  ReplicaCommands()
      : ports_{fleet_[0].port(), fleet_[1].port(), fleet_[2].port()},
        proxy_([this](uint16_t listen) {
          return pool_config(listen, ports_, {"replicas: 2", "timeout: 2000"});
        }),
        copies_(proxy_.config_text(), 2),
        c_(proxy_.port()) {}

  // A fresh key (its two copies: copies_.of(key)).
  std::string key(std::string_view tag) { return random_key("user-" + std::string(tag), ++n_); }

  // Every copy of `key` holds `want` (nullopt: none holds it), and the
  // server that is not one of its copies never does.
  ::testing::AssertionResult on_copies(const std::string& key,
                                       const std::optional<std::string>& want) {
    std::vector<uint16_t> mine = copies_.of(key);
    for (uint16_t p : ports_) {
      std::optional<Held> h = held_on(p, key);
      bool copy = std::find(mine.begin(), mine.end(), p) != mine.end();
      std::string role = p == mine[0] ? "first copy" : copy ? "second copy" : "non-copy server";
      if (copy && want.has_value() != h.has_value()) {
        return ::testing::AssertionFailure()
               << key << ": the " << role << " (" << p << ") "
               << (h ? "holds '" + printable(h->data) + "'" : "misses") << ", wanted "
               << (want ? "'" + *want + "'" : "a miss");
      }
      if (copy && want && h->data != *want) {
        return ::testing::AssertionFailure() << key << ": the " << role << " (" << p
                                             << ") holds '" << h->data << "', wanted '" << *want
                                             << "'";
      }
      if (!copy && h) {
        return ::testing::AssertionFailure() << key << " is on " << p << ", not one of its copies";
      }
    }
    return ::testing::AssertionSuccess();
  }

  // A counter on every copy: memcached keeps the length of a number that
  // a decr shortened, padding it with spaces, so the copies must hold the
  // same bytes and those, less trailing spaces, are `want`.
  ::testing::AssertionResult number_on_copies(const std::string& key, const std::string& want) {
    std::vector<uint16_t> mine = copies_.of(key);
    std::optional<Held> first = held_on(mine[0], key);
    if (!first) return ::testing::AssertionFailure() << key << " missing on its first copy";
    std::string trimmed = first->data.substr(0, first->data.find_last_not_of(' ') + 1);
    if (trimmed != want) {
      return ::testing::AssertionFailure()
             << key << ": the first copy holds '" << first->data << "', wanted " << want;
    }
    return on_copies(key, first->data);
  }

  // A cas unique of a `gets` through memshard (empty on failure).
  std::string gets_unique(const std::string& key) {
    std::string reply = c_.call("gets " + key + "\r\n");
    std::vector<Value> got;
    if (!parse_values(reply, got) || got.size() != 1) {
      ADD_FAILURE() << "gets " << key << ": '" << printable(reply) << "'";
      return "";
    }
    return got[0].cas;
  }

  Fleet fleet_{3};
  std::vector<uint16_t> ports_;
  Proxy proxy_;
  Copies copies_;
  Client c_;
  uint64_t n_ = 0;
};

TEST_F(ReplicaCommands, AddOfAnExistingKeyIsRefusedAndNoCopyChanges) {
  std::string k = key("add-existing");
  ASSERT_EQ(c_.set(k, "v1"), "STORED\r\n");
  EXPECT_EQ(c_.set(k, "v2", 0, 0, "add"), "NOT_STORED\r\n");
  EXPECT_TRUE(on_copies(k, "v1"));
  // noreply: nothing comes back, and still no copy changes.
  ASSERT_TRUE(c_.send("add " + k + " 0 0 2 noreply\r\nv3\r\n"));
  EXPECT_EQ(c_.call("mn\r\n"), "MN\r\n");
  EXPECT_TRUE(on_copies(k, "v1"));
}

TEST_F(ReplicaCommands, AddOfANewKeyIsOnEveryCopy) {
  std::string k = key("add-new");
  EXPECT_EQ(c_.set(k, "fresh", 7, 0, "add"), "STORED\r\n");
  EXPECT_TRUE(on_copies(k, "fresh"));
  for (uint16_t p : copies_.of(k)) EXPECT_EQ(held_on(p, k)->flags, 7u) << p;
  std::string k2 = key("add-new-noreply");
  ASSERT_TRUE(c_.send("add " + k2 + " 0 0 2 noreply\r\nnr\r\n"));
  EXPECT_EQ(c_.call("mn\r\n"), "MN\r\n");
  EXPECT_TRUE(eventually([&] { return bool(on_copies(k2, "nr")); }, 3s)) << on_copies(k2, "nr");
}

// The first copy decides: it lacks the key, so the add is stored, and the
// second copy's older value is overwritten with the new one.
TEST_F(ReplicaCommands, AddWhenOnlyTheSecondCopyHoldsTheKey) {
  std::string k = key("add-second");
  std::vector<uint16_t> mine = copies_.of(k);
  ASSERT_TRUE(set_on(mine[1], k, "stale"));
  EXPECT_EQ(c_.set(k, "new", 0, 0, "add"), "STORED\r\n");
  EXPECT_TRUE(on_copies(k, "new"));
}

// The first copy holds it: refused, and the second copy, which lacked the
// key, does not gain the refused value.
TEST_F(ReplicaCommands, AddWhenOnlyTheFirstCopyHoldsTheKey) {
  std::string k = key("add-first");
  std::vector<uint16_t> mine = copies_.of(k);
  ASSERT_TRUE(set_on(mine[0], k, "kept"));
  EXPECT_EQ(c_.set(k, "refused", 0, 0, "add"), "NOT_STORED\r\n");
  EXPECT_EQ(held_on(mine[0], k)->data, "kept");
  EXPECT_FALSE(held_on(mine[1], k).has_value()) << "the second copy gained a refused add's value";
}

TEST_F(ReplicaCommands, CasWithTheUniqueFromGetsAndAStaleOne) {
  std::string k = key("cas");
  std::vector<uint16_t> mine = copies_.of(k);
  ASSERT_EQ(c_.set(k, "v1"), "STORED\r\n");
  std::string unique = gets_unique(k);
  ASSERT_FALSE(unique.empty());
  // The unique is the first copy's.
  {
    Client direct(mine[0]);
    std::vector<Value> got;
    ASSERT_TRUE(parse_values(direct.call("gets " + k + "\r\n"), got));
    ASSERT_EQ(got.size(), 1u);
    EXPECT_EQ(got[0].cas, unique) << "gets through memshard vs the first copy's own";
  }
  EXPECT_EQ(c_.set(k, "v2", 3, 0, "cas", unique), "STORED\r\n");
  EXPECT_TRUE(on_copies(k, "v2"));
  for (uint16_t p : mine) EXPECT_EQ(held_on(p, k)->flags, 3u) << p;
  // Stale now: refused, no copy changes.
  EXPECT_EQ(c_.set(k, "v3", 0, 0, "cas", unique), "EXISTS\r\n");
  EXPECT_TRUE(on_copies(k, "v2"));
  // A fresh unique works again.
  std::string again = gets_unique(k);
  EXPECT_NE(again, unique);
  EXPECT_EQ(c_.set(k, "v4", 0, 0, "cas", again), "STORED\r\n");
  EXPECT_TRUE(on_copies(k, "v4"));
  // noreply: the client hears nothing either way, the copies follow the
  // first copy's decision.
  std::string fresh = gets_unique(k);
  ASSERT_TRUE(c_.send("cas " + k + " 0 0 2 " + fresh + " noreply\r\nv5\r\n"));
  EXPECT_EQ(c_.call("mn\r\n"), "MN\r\n");
  EXPECT_TRUE(on_copies(k, "v5"));
  ASSERT_TRUE(c_.send("cas " + k + " 0 0 2 " + fresh + " noreply\r\nv6\r\n"));
  EXPECT_EQ(c_.call("mn\r\n"), "MN\r\n");
  EXPECT_TRUE(on_copies(k, "v5")) << "a stale cas with noreply changed a copy";
  // cas of a key no copy holds: NOT_FOUND, no copy gains it.
  std::string missing = key("cas-missing");
  EXPECT_EQ(c_.set(missing, "x", 0, 0, "cas", "12345"), "NOT_FOUND\r\n");
  EXPECT_TRUE(on_copies(missing, std::nullopt));
}

TEST_F(ReplicaCommands, IncrAndDecrOnEveryCopy) {
  std::string k = key("counter");
  ASSERT_EQ(c_.set(k, "10"), "STORED\r\n");
  EXPECT_EQ(c_.call("incr " + k + " 5\r\n"), "15\r\n");
  EXPECT_TRUE(on_copies(k, "15"));
  EXPECT_EQ(c_.call("decr " + k + " 20\r\n"), "0\r\n");
  EXPECT_TRUE(number_on_copies(k, "0"));
  EXPECT_EQ(c_.call("incr " + k + " 18446744073709551615\r\n"), "18446744073709551615\r\n");
  EXPECT_TRUE(on_copies(k, "18446744073709551615"));
  std::string missing = key("counter-missing");
  EXPECT_EQ(c_.call("incr " + missing + " 1\r\n"), "NOT_FOUND\r\n");
  EXPECT_TRUE(on_copies(missing, std::nullopt));
}

TEST_F(ReplicaCommands, DeleteFromEveryCopy) {
  std::string k = key("delete");
  ASSERT_EQ(c_.set(k, "doomed"), "STORED\r\n");
  ASSERT_TRUE(on_copies(k, "doomed"));
  EXPECT_EQ(c_.call("delete " + k + "\r\n"), "DELETED\r\n");
  EXPECT_TRUE(on_copies(k, std::nullopt));
  EXPECT_EQ(c_.call("delete " + k + "\r\n"), "NOT_FOUND\r\n");
  // Present only on the second copy: still deleted there.
  std::string k2 = key("delete-second");
  ASSERT_TRUE(set_on(copies_.of(k2)[1], k2, "stray"));
  c_.call("delete " + k2 + "\r\n");
  EXPECT_TRUE(on_copies(k2, std::nullopt));
}

TEST_F(ReplicaCommands, ReplaceAppendPrependTouchGat) {
  std::string k = key("edit");
  EXPECT_EQ(c_.set(k, "x", 0, 0, "replace"), "NOT_STORED\r\n");
  EXPECT_TRUE(on_copies(k, std::nullopt));
  ASSERT_EQ(c_.set(k, "mid"), "STORED\r\n");
  EXPECT_EQ(c_.set(k, "new", 0, 0, "replace"), "STORED\r\n");
  EXPECT_EQ(c_.set(k, "-tail", 0, 0, "append"), "STORED\r\n");
  EXPECT_EQ(c_.set(k, "head-", 0, 0, "prepend"), "STORED\r\n");
  EXPECT_TRUE(on_copies(k, "head-new-tail"));
  EXPECT_EQ(c_.call("touch " + k + " 1000\r\n"), "TOUCHED\r\n");
  for (uint16_t p : copies_.of(k)) {
    int64_t ttl = held_on(p, k)->ttl;
    EXPECT_TRUE(ttl > 900 && ttl <= 1000) << "ttl " << ttl << " on " << p << " after touch";
  }
  std::string reply = c_.call("gat 2000 " + k + "\r\n");
  std::vector<Value> got;
  ASSERT_TRUE(parse_values(reply, got)) << printable(reply);
  ASSERT_EQ(got.size(), 1u);
  EXPECT_EQ(got[0].data, "head-new-tail");
  // The other copy's touch is not waited for.
  EXPECT_TRUE(eventually(
      [&] {
        for (uint16_t p : copies_.of(k)) {
          if (held_on(p, k)->ttl <= 1000) return false;
        }
        return true;
      },
      3s))
      << "gat did not touch every copy";
}

TEST_F(ReplicaCommands, MultiGetKeepsTheClientsOrderWithMissesAbsent) {
  std::vector<std::string> keys = random_keys("user-mget", 300);
  std::vector<std::string> present;
  for (size_t i = 0; i < keys.size(); ++i) {
    if (i % 3 == 1) continue;  // a miss
    ASSERT_EQ(c_.set(keys[i], value_of(keys[i])), "STORED\r\n");
    present.push_back(keys[i]);
  }
  for (const char* verb : {"get", "gets"}) {
    std::string req = verb;
    for (const std::string& k : keys) req += " " + k;
    std::string reply = c_.call(req + "\r\n");
    std::vector<Value> got;
    ASSERT_TRUE(parse_values(reply, got)) << printable(reply);
    ASSERT_EQ(got.size(), present.size()) << verb;
    for (size_t i = 0; i < got.size(); ++i) {
      EXPECT_EQ(got[i].key, present[i]) << verb << " position " << i;
      EXPECT_EQ(got[i].data, value_of(present[i])) << verb << " " << got[i].key;
      EXPECT_EQ(got[i].cas.empty(), std::string(verb) == "get") << verb;
    }
  }
  // A key asked twice is answered twice, as memcached does.
  std::string req = "get " + present[0] + " " + keys[1] + " " + present[1] + " " + present[0];
  std::string reply = c_.call(req + "\r\n");
  std::vector<Value> got;
  ASSERT_TRUE(parse_values(reply, got)) << printable(reply);
  ASSERT_EQ(got.size(), 3u) << printable(reply);
  EXPECT_EQ(got[0].key, present[0]);
  EXPECT_EQ(got[1].key, present[1]);
  EXPECT_EQ(got[2].key, present[0]);
}

TEST_F(ReplicaCommands, MetaCommandsAcrossCopies) {
  std::string k = key("meta");
  EXPECT_EQ(c_.call("ms " + k + " 5 F9 T500\r\nhello\r\n"), "HD\r\n");
  EXPECT_TRUE(on_copies(k, "hello"));
  for (uint16_t p : copies_.of(k)) {
    std::optional<Held> h = held_on(p, k);
    EXPECT_EQ(h->flags, 9u) << p;
    EXPECT_TRUE(h->ttl > 400 && h->ttl <= 500) << "ttl " << h->ttl << " on " << p;
  }
  EXPECT_EQ(c_.call("mg " + k + " v f\r\n"), "VA 5 f9\r\nhello\r\n");
  // Add mode on an existing key: refused, no copy changes.
  EXPECT_EQ(c_.call("ms " + k + " 3 ME\r\nbad\r\n"), "NS\r\n");
  EXPECT_TRUE(on_copies(k, "hello"));
  // Quiet: the refusal is still told (q hides only HD), no copy changes.
  EXPECT_EQ(c_.call("ms " + k + " 3 ME q\r\nbad\r\nmn\r\n"), "NS\r\n");
  EXPECT_EQ(c_.read_reply(), "MN\r\n");
  EXPECT_TRUE(on_copies(k, "hello"));
  // Add mode on a key the first copy lacks but the second holds.
  std::string k2 = key("meta-add");
  ASSERT_TRUE(set_on(copies_.of(k2)[1], k2, "stale"));
  EXPECT_EQ(c_.call("ms " + k2 + " 3 ME\r\nnew\r\n"), "HD\r\n");
  EXPECT_TRUE(on_copies(k2, "new"));
  // Cas: the first copy's, from mg c through memshard.
  std::string reply = c_.call("mg " + k + " c\r\n");
  ASSERT_TRUE(reply.starts_with("HD c")) << printable(reply);
  std::string cas = reply.substr(4, reply.size() - 6);
  EXPECT_EQ(c_.call("ms " + k + " 3 C" + cas + "\r\nnew\r\n"), "HD\r\n");
  EXPECT_TRUE(on_copies(k, "new"));
  EXPECT_EQ(c_.call("ms " + k + " 5 C" + cas + "\r\nstale\r\n"), "EX\r\n");
  EXPECT_TRUE(on_copies(k, "new"));
  // Arithmetic.
  std::string n = key("meta-counter");
  EXPECT_EQ(c_.call("ms " + n + " 2\r\n41\r\n"), "HD\r\n");
  EXPECT_EQ(c_.call("ma " + n + " v\r\n"), "VA 2\r\n42\r\n");
  EXPECT_TRUE(on_copies(n, "42"));
  EXPECT_EQ(c_.call("ma " + n + " MD D40 v\r\n"), "VA 1\r\n2\r\n");
  EXPECT_TRUE(number_on_copies(n, "2"));
  // mg with T touches (a write): every copy. (The stored number keeps its
  // old length, space-padded, as memcached does after a decr.)
  EXPECT_EQ(c_.call("mg " + n + " T3000 v\r\n"), "VA 2\r\n2 \r\n");
  for (uint16_t p : copies_.of(n)) {
    int64_t ttl = held_on(p, n)->ttl;
    EXPECT_TRUE(ttl > 2900 && ttl <= 3000) << "ttl " << ttl << " on " << p << " after mg T";
  }
  // Delete.
  EXPECT_EQ(c_.call("md " + k + "\r\n"), "HD\r\n");
  EXPECT_TRUE(on_copies(k, std::nullopt));
  EXPECT_EQ(c_.call("md " + k + "\r\n"), "NF\r\n");
  // Quiet: a miss says nothing, the mn marks the end.
  EXPECT_EQ(c_.call("mg " + k + " v q\r\nmn\r\n"), "MN\r\n");
  EXPECT_EQ(c_.call("ms " + k + " 1 q\r\nz\r\nmn\r\n"), "MN\r\n");
  EXPECT_TRUE(on_copies(k, "z"));
}

// read_repair writes back what it found with its flags and remaining TTL.
TEST(ReplicaRepair, KeepsFlagsAndTtl) {
  Fleet fleet(3);
  std::vector<uint16_t> ports = {fleet[0].port(), fleet[1].port(), fleet[2].port()};
  Proxy proxy([&](uint16_t listen) {
    return pool_config(listen, ports,
                       {"replicas: 2", "read_failover_on_miss: true", "read_repair: true"});
  });
  Copies copies(proxy.config_text(), 2);
  std::string with_ttl = random_key("user-repair-ttl", 1);
  std::string forever = random_key("user-repair-forever", 2);
  ASSERT_TRUE(set_on(copies.of(with_ttl)[1], with_ttl, "ttl-value", 77, 1000));
  ASSERT_TRUE(set_on(copies.of(forever)[1], forever, "forever-value", 5, 0));
  Client c(proxy.port());
  for (const auto& [k, v] : {std::pair{with_ttl, "ttl-value"}, std::pair{forever, "forever-value"}}) {
    std::string reply = c.call("get " + k + "\r\n");
    std::vector<Value> got;
    ASSERT_TRUE(parse_values(reply, got) && got.size() == 1) << printable(reply);
    EXPECT_EQ(got[0].data, v);
  }
  std::optional<Held> h;
  ASSERT_TRUE(eventually([&] { return (h = held_on(copies.of(with_ttl)[0], with_ttl)).has_value(); },
                         5s))
      << "not repaired";
  EXPECT_EQ(h->data, "ttl-value");
  EXPECT_EQ(h->flags, 77u);
  EXPECT_TRUE(h->ttl > 900 && h->ttl <= 1000) << "repaired ttl " << h->ttl;
  ASSERT_TRUE(
      eventually([&] { return (h = held_on(copies.of(forever)[0], forever)).has_value(); }, 5s))
      << "not repaired";
  EXPECT_EQ(h->data, "forever-value");
  EXPECT_EQ(h->flags, 5u);
  EXPECT_EQ(h->ttl, -1) << "a value without expiry was repaired with one";
  // A multi-get repairs too, and meta reads fail over on a miss.
  std::string k3 = random_key("user-repair-mg", 3);
  ASSERT_TRUE(set_on(copies.of(k3)[1], k3, "via-mg", 1, 0));
  EXPECT_EQ(c.call("mg " + k3 + " v\r\n"), "VA 6\r\nvia-mg\r\n");
}

}  // namespace
}  // namespace memshard::testing::replicas
