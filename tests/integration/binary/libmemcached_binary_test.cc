// libmemcached itself, in binary mode (MEMCACHED_BEHAVIOR_BINARY_PROTOCOL),
// every operation it has. Each test runs against a lone memcached 1.6.18
// (`/memcached`: what the client gets from memcached, which checks the test)
// and against memshard in front of three memcached servers (`/memshard`);
// where a key lands is checked on the servers directly.
#include <gtest/gtest.h>
#include <libmemcached/memcached.h>

#include <cstdlib>
#include <iostream>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "binary_util.h"
#include "harness.h"

namespace memshard::testing::bin {
namespace {

constexpr size_t kOneMiB = 1024 * 1024;

#define EXPECT_RC(expected, expr)                                                  \
  do {                                                                             \
    memcached_return_t rc_ = (expr);                                               \
    EXPECT_EQ(rc_, expected) << #expr << ": " << memcached_strerror(nullptr, rc_); \
  } while (0)

// A binary-protocol libmemcached client of one address.
class Client {
 public:
  explicit Client(uint16_t port, bool noreply = false) : m_(memcached_create(nullptr)) {
    memcached_server_add(m_, "127.0.0.1", port);
    memcached_behavior_set(m_, MEMCACHED_BEHAVIOR_BINARY_PROTOCOL, 1);
    memcached_behavior_set(m_, MEMCACHED_BEHAVIOR_SUPPORT_CAS, 1);
    memcached_behavior_set(m_, MEMCACHED_BEHAVIOR_VERIFY_KEY, 0);
    memcached_behavior_set(m_, MEMCACHED_BEHAVIOR_TCP_NODELAY, 1);
    // Bounded: a server that does not answer fails the call in 3 s.
    memcached_behavior_set(m_, MEMCACHED_BEHAVIOR_POLL_TIMEOUT, 3000);
    memcached_behavior_set(m_, MEMCACHED_BEHAVIOR_CONNECT_TIMEOUT, 3000);
    memcached_behavior_set(m_, MEMCACHED_BEHAVIOR_RCV_TIMEOUT, 3000000);
    memcached_behavior_set(m_, MEMCACHED_BEHAVIOR_SND_TIMEOUT, 3000000);
    if (noreply) memcached_behavior_set(m_, MEMCACHED_BEHAVIOR_NOREPLY, 1);
  }
  ~Client() { memcached_free(m_); }
  Client(const Client&) = delete;
  Client& operator=(const Client&) = delete;
  memcached_st* get() { return m_; }

  memcached_return_t set(const std::string& k, std::string_view v, uint32_t flags = 0) {
    return memcached_set(m_, k.data(), k.size(), v.data(), v.size(), 0, flags);
  }
  // The value, or nullopt on a miss (rc says why).
  std::optional<std::string> fetch(const std::string& k, uint32_t* flags = nullptr,
                                   memcached_return_t* rc_out = nullptr) {
    size_t len = 0;
    uint32_t f = 0;
    memcached_return_t rc;
    char* v = memcached_get(m_, k.data(), k.size(), &len, &f, &rc);
    if (flags != nullptr) *flags = f;
    if (rc_out != nullptr) *rc_out = rc;
    if (v == nullptr)
      return rc == MEMCACHED_SUCCESS ? std::optional<std::string>("") : std::nullopt;
    std::string out(v, len);
    free(v);
    return out;
  }
  struct Result {
    std::string value;
    uint32_t flags = 0;
    uint64_t cas = 0;
  };
  // memcached_mget, then every result fetched (at most keys.size() + 1).
  std::map<std::string, Result> mget(const std::vector<std::string>& keys, memcached_return_t* rc) {
    std::vector<const char*> ptrs;
    std::vector<size_t> lens;
    for (const auto& k : keys) {
      ptrs.push_back(k.data());
      lens.push_back(k.size());
    }
    std::map<std::string, Result> out;
    *rc = memcached_mget(m_, ptrs.data(), lens.data(), keys.size());
    if (*rc != MEMCACHED_SUCCESS) return out;
    // On the stack: memcached_fetch_result frees a result it allocated
    // itself when it returns NULL.
    memcached_result_st storage;
    memcached_result_st* r = memcached_result_create(m_, &storage);
    for (size_t i = 0; i <= keys.size(); ++i) {
      memcached_return_t frc;
      if (memcached_fetch_result(m_, r, &frc) == nullptr) {
        if (frc != MEMCACHED_END && frc != MEMCACHED_NOTFOUND) *rc = frc;
        break;
      }
      std::string key(memcached_result_key_value(r), memcached_result_key_length(r));
      EXPECT_EQ(out.count(key), 0u) << "key fetched twice: " << printable(key);
      out[key] = {std::string(memcached_result_value(r), memcached_result_length(r)),
                  memcached_result_flags(r), memcached_result_cas(r)};
    }
    memcached_result_free(r);
    return out;
  }

 private:
  memcached_st* m_;
};

class BinaryLibmemcached : public ::testing::TestWithParam<Kind> {
 protected:
  void SetUp() override { target_ = std::make_unique<Target>(GetParam()); }
  void TearDown() override {
    std::string why;
    EXPECT_TRUE(target_->stop(&why)) << why;
    if (HasFailure() && GetParam() == Kind::memshard) {
      std::cerr << "---- memshard log (tail) ----\n" << target_->log_tail() << "\n----\n";
    }
  }
  std::optional<Held> on_owner(const std::string& key) {
    return held(target_->backend_port(target_->owner(key)), key);
  }
  // On its ring owner and nowhere else.
  void expect_only_on_owner(const std::string& key) {
    std::vector<size_t> where = target_->holders(key);
    EXPECT_EQ(where, std::vector<size_t>{target_->owner(key)})
        << "key " << printable(key) << " is not on exactly its ring owner";
  }
  // `total` keys, as many on each backend.
  std::vector<std::string> spread_keys(size_t total, const std::string& prefix) {
    std::vector<std::string> out;
    for (const auto& keys : target_->keys_by_backend(total / target_->backends(), prefix)) {
      out.insert(out.end(), keys.begin(), keys.end());
    }
    return out;
  }

  std::unique_ptr<Target> target_;
};

TEST_P(BinaryLibmemcached, StorageCommands) {
  Client lib(target_->port());
  for (const std::string& k : spread_keys(6, "store")) {
    SCOPED_TRACE("key " + k);
    EXPECT_RC(MEMCACHED_SUCCESS, lib.set(k, "value-" + k, 7));
    uint32_t flags = 0;
    EXPECT_EQ(lib.fetch(k, &flags), "value-" + k);
    EXPECT_EQ(flags, 7u);
    expect_only_on_owner(k);

    EXPECT_RC(MEMCACHED_DATA_EXISTS, memcached_add(lib.get(), k.data(), k.size(), "x", 1, 0, 0));
    std::string fresh = k + "-new";
    EXPECT_RC(MEMCACHED_NOTFOUND,
              memcached_replace(lib.get(), fresh.data(), fresh.size(), "x", 1, 0, 0));
    EXPECT_RC(MEMCACHED_SUCCESS,
              memcached_add(lib.get(), fresh.data(), fresh.size(), "added", 5, 0, 3));
    EXPECT_EQ(lib.fetch(fresh, &flags), "added");
    EXPECT_EQ(flags, 3u);
    EXPECT_RC(MEMCACHED_SUCCESS,
              memcached_replace(lib.get(), fresh.data(), fresh.size(), "mid", 3, 0, 0));
    EXPECT_RC(MEMCACHED_SUCCESS,
              memcached_append(lib.get(), fresh.data(), fresh.size(), ">>", 2, 0, 0));
    EXPECT_RC(MEMCACHED_SUCCESS,
              memcached_prepend(lib.get(), fresh.data(), fresh.size(), "<<", 2, 0, 0));
    EXPECT_EQ(lib.fetch(fresh), "<<mid>>");
    EXPECT_EQ(on_owner(fresh).value_or(Held{}).value, "<<mid>>");
    std::string absent = k + "-absent";
    EXPECT_RC(MEMCACHED_NOTSTORED,
              memcached_append(lib.get(), absent.data(), absent.size(), "z", 1, 0, 0));
    EXPECT_RC(MEMCACHED_NOTSTORED,
              memcached_prepend(lib.get(), absent.data(), absent.size(), "z", 1, 0, 0));

    EXPECT_RC(MEMCACHED_SUCCESS, memcached_delete(lib.get(), fresh.data(), fresh.size(), 0));
    EXPECT_RC(MEMCACHED_NOTFOUND, memcached_delete(lib.get(), fresh.data(), fresh.size(), 0));
    memcached_return_t rc;
    EXPECT_EQ(lib.fetch(fresh, nullptr, &rc), std::nullopt);
    EXPECT_EQ(rc, MEMCACHED_NOTFOUND);
    EXPECT_FALSE(on_owner(fresh));
  }
}

TEST_P(BinaryLibmemcached, IncrementDecrement) {
  Client lib(target_->port());
  const std::string k = "counter";
  uint64_t v = 0;
  EXPECT_RC(MEMCACHED_NOTFOUND, memcached_increment(lib.get(), k.data(), k.size(), 1, &v));
  ASSERT_EQ(lib.set(k, "40"), MEMCACHED_SUCCESS);
  EXPECT_RC(MEMCACHED_SUCCESS, memcached_increment(lib.get(), k.data(), k.size(), 2, &v));
  EXPECT_EQ(v, 42u);
  EXPECT_RC(MEMCACHED_SUCCESS, memcached_decrement(lib.get(), k.data(), k.size(), 50, &v));
  EXPECT_EQ(v, 0u);
  // memcached shortens a decremented number in place, padded with spaces.
  EXPECT_EQ(on_owner(k).value_or(Held{}).value, "0 ");

  // With an initial value: created when missing, incremented when not.
  const std::string n = "counter-initial";
  EXPECT_RC(MEMCACHED_SUCCESS,
            memcached_increment_with_initial(lib.get(), n.data(), n.size(), 5, 100, 0, &v));
  EXPECT_EQ(v, 100u);
  EXPECT_EQ(on_owner(n).value_or(Held{}).value, "100");
  EXPECT_RC(MEMCACHED_SUCCESS,
            memcached_increment_with_initial(lib.get(), n.data(), n.size(), 5, 100, 0, &v));
  EXPECT_EQ(v, 105u);
  EXPECT_RC(MEMCACHED_SUCCESS,
            memcached_decrement_with_initial(lib.get(), n.data(), n.size(), 3, 100, 0, &v));
  EXPECT_EQ(v, 102u);
  const std::string d = "counter-decr-initial";
  EXPECT_RC(MEMCACHED_SUCCESS,
            memcached_decrement_with_initial(lib.get(), d.data(), d.size(), 3, 7, 0, &v));
  EXPECT_EQ(v, 7u);
  // MEMCACHED_EXPIRATION_NOT_ADD (0xffffffff): a miss stays a miss.
  const std::string none = "counter-not-added";
  EXPECT_RC(MEMCACHED_NOTFOUND,
            memcached_increment_with_initial(lib.get(), none.data(), none.size(), 1, 9,
                                             MEMCACHED_EXPIRATION_NOT_ADD, &v));
  EXPECT_FALSE(on_owner(none));

  ASSERT_EQ(lib.set("text", "abc"), MEMCACHED_SUCCESS);
  // libmemcached 1.1 has no word for status 6 (non-numeric): it says
  // "unknown read failure", against memcached too.
  EXPECT_RC(MEMCACHED_UNKNOWN_READ_FAILURE, memcached_increment(lib.get(), "text", 4, 1, &v));
  EXPECT_EQ(lib.fetch("text"), "abc");
}

TEST_P(BinaryLibmemcached, Touch) {
  Client lib(target_->port());
  ASSERT_EQ(lib.set("touched", "t"), MEMCACHED_SUCCESS);
  EXPECT_RC(MEMCACHED_SUCCESS, memcached_touch(lib.get(), "touched", 7, 1000));
  EXPECT_RC(MEMCACHED_NOTFOUND, memcached_touch(lib.get(), "untouched", 9, 1000));
  // An absolute time long past: the item expires.
  EXPECT_RC(MEMCACHED_SUCCESS, memcached_touch(lib.get(), "touched", 7, 30 * 24 * 3600 + 1));
  memcached_return_t rc;
  EXPECT_EQ(lib.fetch("touched", nullptr, &rc), std::nullopt);
  EXPECT_EQ(rc, MEMCACHED_NOTFOUND);
}

TEST_P(BinaryLibmemcached, MultiGetAcrossServers) {
  std::vector<std::string> keys = spread_keys(30, "mget");
  std::map<std::string, std::string> stored;
  {
    Client lib(target_->port());
    for (size_t i = 0; i < keys.size(); ++i) {
      if (i % 3 == 2) continue;  // a miss
      stored[keys[i]] = "v" + std::to_string(i) + "-" + std::string(i * 37, 'x');
      ASSERT_EQ(lib.set(keys[i], stored[keys[i]], uint32_t(i)), MEMCACHED_SUCCESS);
    }
  }
  for (const auto& [k, v] : stored) {
    auto h = on_owner(k);
    ASSERT_TRUE(h) << k << " not on its ring owner";
    EXPECT_EQ(h->value, v);
  }
  // Twice on one client: the second mget must not see leftovers of the first.
  Client lib(target_->port());
  for (int round = 0; round < 2; ++round) {
    SCOPED_TRACE("round " + std::to_string(round));
    memcached_return_t rc;
    auto got = lib.mget(keys, &rc);
    EXPECT_EQ(rc, MEMCACHED_SUCCESS) << memcached_strerror(nullptr, rc);
    EXPECT_EQ(got.size(), stored.size());
    for (size_t i = 0; i < keys.size(); ++i) {
      auto it = got.find(keys[i]);
      if (stored.count(keys[i]) == 0) {
        EXPECT_EQ(it, got.end()) << "a miss came back: " << keys[i];
        continue;
      }
      ASSERT_NE(it, got.end()) << "missing from the mget: " << keys[i];
      EXPECT_EQ(it->second.value, stored[keys[i]]) << keys[i];
      EXPECT_EQ(it->second.flags, i) << keys[i];
      EXPECT_EQ(it->second.cas, on_owner(keys[i]).value_or(Held{}).cas) << keys[i];
    }
  }
  // And a plain get still works after.
  EXPECT_EQ(lib.fetch(keys[0]), stored[keys[0]]);
}

TEST_P(BinaryLibmemcached, GetsCasRoundTrip) {
  Client lib(target_->port());
  ASSERT_EQ(lib.set("cas-key", "one"), MEMCACHED_SUCCESS);
  memcached_return_t rc;
  auto got = lib.mget({"cas-key"}, &rc);
  ASSERT_EQ(got.count("cas-key"), 1u);
  uint64_t cas = got["cas-key"].cas;
  EXPECT_NE(cas, 0u);
  EXPECT_EQ(cas, on_owner("cas-key").value_or(Held{}).cas);
  EXPECT_RC(MEMCACHED_DATA_EXISTS, memcached_cas(lib.get(), "cas-key", 7, "bad", 3, 0, 0, cas + 1));
  EXPECT_RC(MEMCACHED_SUCCESS, memcached_cas(lib.get(), "cas-key", 7, "two", 3, 0, 5, cas));
  EXPECT_RC(MEMCACHED_DATA_EXISTS, memcached_cas(lib.get(), "cas-key", 7, "three", 5, 0, 0, cas));
  uint32_t flags = 0;
  EXPECT_EQ(lib.fetch("cas-key", &flags), "two");
  EXPECT_EQ(flags, 5u);
  EXPECT_RC(MEMCACHED_NOTFOUND, memcached_cas(lib.get(), "cas-none", 8, "x", 1, 0, 0, 1234));
}

TEST_P(BinaryLibmemcached, NoreplyThenReadBack) {
  std::vector<std::string> keys = spread_keys(12, "noreply");
  {
    Client quiet(target_->port(), /*noreply=*/true);
    for (size_t i = 0; i < keys.size(); ++i) {
      EXPECT_RC(MEMCACHED_SUCCESS, quiet.set(keys[i], "q" + std::to_string(i), uint32_t(i)));
    }
    EXPECT_RC(MEMCACHED_SUCCESS,
              memcached_append(quiet.get(), keys[0].data(), keys[0].size(), "+a", 2, 0, 0));
    EXPECT_RC(MEMCACHED_SUCCESS,
              memcached_prepend(quiet.get(), keys[1].data(), keys[1].size(), "p-", 2, 0, 0));
    EXPECT_RC(MEMCACHED_SUCCESS, memcached_delete(quiet.get(), keys[2].data(), keys[2].size(), 0));
    EXPECT_RC(MEMCACHED_SUCCESS,
              memcached_replace(quiet.get(), keys[3].data(), keys[3].size(), "r", 1, 0, 0));
    // Reads are never quiet: on the same connection, after the writes.
    EXPECT_EQ(quiet.fetch(keys[0]), "q0+a");
    EXPECT_EQ(quiet.fetch(keys[1]), "p-q1");
    memcached_return_t rc;
    EXPECT_EQ(quiet.fetch(keys[2], nullptr, &rc), std::nullopt);
    EXPECT_EQ(quiet.fetch(keys[3]), "r");
    EXPECT_EQ(quiet.fetch(keys[4]), "q4");
  }
  // Then from another client and on the servers themselves.
  Client lib(target_->port());
  EXPECT_EQ(lib.fetch(keys[0]), "q0+a");
  for (size_t i = 4; i < keys.size(); ++i) {
    uint32_t flags = 0;
    EXPECT_EQ(lib.fetch(keys[i], &flags), "q" + std::to_string(i));
    EXPECT_EQ(flags, i);
    expect_only_on_owner(keys[i]);
  }
  EXPECT_FALSE(on_owner(keys[2]));
}

TEST_P(BinaryLibmemcached, FlushEmptiesEveryServer) {
  std::vector<std::string> keys = spread_keys(9, "flush");
  Client lib(target_->port());
  for (const auto& k : keys) ASSERT_EQ(lib.set(k, "f"), MEMCACHED_SUCCESS);
  for (const auto& k : keys) ASSERT_TRUE(on_owner(k)) << k;
  EXPECT_RC(MEMCACHED_SUCCESS, memcached_flush(lib.get(), 0));
  for (size_t s = 0; s < target_->backends(); ++s) {
    RawClient direct(target_->backend_port(s));
    for (const auto& k : keys) {
      EXPECT_EQ(direct.roundtrip("get " + k + "\r\n", "END\r\n"), "END\r\n")
          << k << " still on server " << s;
    }
  }
  memcached_return_t rc;
  EXPECT_EQ(lib.fetch(keys[0], nullptr, &rc), std::nullopt);
  EXPECT_EQ(rc, MEMCACHED_NOTFOUND);
  EXPECT_RC(MEMCACHED_SUCCESS, lib.set(keys[0], "after"));
  EXPECT_EQ(lib.fetch(keys[0]), "after");
}

TEST_P(BinaryLibmemcached, Version) {
  Client lib(target_->port());
  EXPECT_RC(MEMCACHED_SUCCESS, memcached_version(lib.get()));
  const memcached_instance_st* server = memcached_server_instance_by_position(lib.get(), 0);
  ASSERT_NE(server, nullptr);
  std::string version = std::to_string(memcached_server_major_version(server)) + "." +
                        std::to_string(memcached_server_minor_version(server)) + "." +
                        std::to_string(memcached_server_micro_version(server));
  // What the same port says in text.
  RawClient text(target_->port());
  std::string reply = text.roundtrip("version\r\n");
  EXPECT_TRUE(reply.rfind("VERSION " + version, 0) == 0)
      << "binary version " << version << ", text " << printable(reply);
}

TEST_P(BinaryLibmemcached, OneMegabyteValues) {
  Client lib(target_->port());
  // Just under item_size_max (1 MiB, with the item's own header inside).
  std::string big(kOneMiB - 1024, 'b');
  for (size_t i = 0; i < big.size(); i += 4099) big[i] = char('a' + i % 26);
  EXPECT_RC(MEMCACHED_SUCCESS, lib.set("big", big, 11));
  uint32_t flags = 0;
  auto back = lib.fetch("big", &flags);
  ASSERT_TRUE(back);
  EXPECT_TRUE(*back == big) << "1 MiB value changed on the way, size " << back->size();
  EXPECT_EQ(flags, 11u);
  EXPECT_TRUE(on_owner("big").value_or(Held{}).value == big);

  // Over the limit: too large, as memcached says it (and the old value
  // goes, as memcached removes it).
  std::string over(kOneMiB + 1, 'o');
  EXPECT_RC(MEMCACHED_E2BIG, lib.set("big", over));
  memcached_return_t rc;
  EXPECT_EQ(lib.fetch("big", nullptr, &rc), std::nullopt);
  EXPECT_EQ(rc, MEMCACHED_NOTFOUND);
  EXPECT_FALSE(on_owner("big"));
  // The connection is still fine.
  EXPECT_RC(MEMCACHED_SUCCESS, lib.set("small", "s"));
  EXPECT_EQ(lib.fetch("small"), "s");
  // And a multi-get of the 1 MiB value with others.
  EXPECT_RC(MEMCACHED_SUCCESS, lib.set("big2", big));
  auto got = lib.mget({"small", "big2", "nothing"}, &rc);
  EXPECT_EQ(rc, MEMCACHED_SUCCESS);
  EXPECT_EQ(got.size(), 2u);
  EXPECT_TRUE(got["big2"].value == big);
}

TEST_P(BinaryLibmemcached, BinaryKeys) {
  Client lib(target_->port());
  // Keys a text line cannot carry; binary mode allows any bytes.
  std::vector<std::string> keys = {
      "key with spaces",
      "tab\tkey",
      std::string("ctl\x01\x02\x1b\x7f", 7),
      "\xff\xfe\x80 high bytes",
      " leading and trailing ",
      std::string("nul\0inside", 10),
      // The longest such key memshard can pass on: base64 makes its 186
      // bytes the 248 of a meta key (LongBinaryKeys: longer ones).
      std::string(185, ' ') + "x",
  };
  // And ones with line breaks (the ring tool reads keys by line, so their
  // owner is only checked as "exactly one server").
  std::vector<std::string> breaking = {"cr\rlf\nkey", "get x\r\nset y 0 0 1"};
  size_t i = 0;
  for (const auto& k : keys) {
    SCOPED_TRACE("key " + printable(k));
    std::string v = "bin-" + std::to_string(i++);
    EXPECT_RC(MEMCACHED_SUCCESS, lib.set(k, v, 3));
    EXPECT_EQ(lib.fetch(k), v);
    expect_only_on_owner(k);
  }
  for (const auto& k : breaking) {
    SCOPED_TRACE("key " + printable(k));
    std::string v = "bin-" + std::to_string(i++);
    EXPECT_RC(MEMCACHED_SUCCESS, lib.set(k, v));
    EXPECT_EQ(lib.fetch(k), v);
    EXPECT_EQ(target_->holders(k).size(), 1u);
  }
  std::vector<std::string> all = keys;
  all.insert(all.end(), breaking.begin(), breaking.end());
  all.push_back("missing key with spaces");
  memcached_return_t rc;
  auto got = lib.mget(all, &rc);
  EXPECT_EQ(rc, MEMCACHED_SUCCESS);
  EXPECT_EQ(got.size(), all.size() - 1);
  for (size_t j = 0; j + 1 < all.size(); ++j) {
    EXPECT_EQ(got[all[j]].value, "bin-" + std::to_string(j)) << printable(all[j]);
  }
  for (const auto& k : all) {
    if (k.rfind("missing", 0) == 0) continue;
    EXPECT_RC(MEMCACHED_SUCCESS, memcached_delete(lib.get(), k.data(), k.size(), 0));
    EXPECT_TRUE(target_->holders(k).empty()) << printable(k);
  }
}

// Keys up to memcached's 250 bytes.
TEST_P(BinaryLibmemcached, LongKeys) {
  Client lib(target_->port());
  std::string plain(250, 'k');
  EXPECT_RC(MEMCACHED_SUCCESS, lib.set(plain, "long"));
  EXPECT_EQ(lib.fetch(plain), "long");
  expect_only_on_owner(plain);
  // 251 bytes: refused by the client itself.
  EXPECT_RC(MEMCACHED_BAD_KEY_PROVIDED, lib.set(std::string(251, 'k'), "x"));

  // Over 186 bytes with a byte a text line cannot hold: memcached takes
  // them; memshard, whose servers get the key base64-encoded in a meta
  // command (at most 250 bytes there), refuses them on purpose (docs/compatibility.md,
  // "Where memshard differs from memcached"), and the connection goes on.
  std::vector<std::string> keys = {std::string(187, ' '), std::string(250, ' '),
                                   std::string(249, '\x01') + "z"};
  for (size_t i = 0; i < keys.size(); ++i) {
    const std::string& k = keys[i];
    SCOPED_TRACE("key of " + std::to_string(k.size()) + " bytes: " + printable(k, 40));
    std::string v = "long-" + std::to_string(i);
    memcached_return_t rc = lib.set(k, v);
    if (GetParam() == Kind::memcached) {
      EXPECT_EQ(rc, MEMCACHED_SUCCESS) << memcached_strerror(nullptr, rc);
      EXPECT_EQ(lib.fetch(k), v);
      expect_only_on_owner(k);
    } else {
      EXPECT_NE(rc, MEMCACHED_SUCCESS);
      EXPECT_TRUE(target_->holders(k).empty());
    }
    EXPECT_EQ(lib.fetch(plain), "long") << "the connection did not go on";
  }
  // In a multi-get batch (getkq... noop) such a key is a quiet miss through
  // memshard, so the batch still answers the rest.
  memcached_return_t rc;
  auto got = lib.mget({plain, keys[0]}, &rc);
  EXPECT_EQ(rc, MEMCACHED_SUCCESS) << memcached_strerror(nullptr, rc);
  ASSERT_TRUE(got.count(plain)) << "a key that cannot travel failed the whole batch";
  EXPECT_EQ(got.at(plain).value, "long");
}

INSTANTIATE_TEST_SUITE_P(Against, BinaryLibmemcached,
                         ::testing::Values(Kind::memcached, Kind::memshard),
                         [](const ::testing::TestParamInfo<Kind>& p) {
                           return kind_name(p.param);
                         });

}  // namespace
}  // namespace memshard::testing::bin
