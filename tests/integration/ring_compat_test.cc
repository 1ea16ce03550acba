// End-to-end ketama compatibility with a live nutcracker (twemproxy 0.5):
// keys are stored THROUGH nutcracker into real memcached servers, then
// `memshard ring lookup` on the same config must name, for every key, the
// server that actually holds it (and no other server may hold it).
#include <gtest/gtest.h>

#include <functional>
#include <map>
#include <memory>
#include <random>
#include <string>
#include <thread>
#include <vector>

#include "harness.h"

namespace memshard::testing {
namespace {

using namespace std::chrono_literals;

// A server of the pool: its config line, how `ring lookup` prints it, and
// how to reach it directly.
struct Server {
  std::string line;
  std::string address;
  std::function<std::unique_ptr<RawClient>()> connect;
};

struct Case {
  std::vector<std::pair<std::string, std::string>> directives;  // hash, distribution, ...
  std::vector<uint32_t> weights = {1, 1, 1, 1, 1};
  std::vector<std::string> names;  // per server, empty = unnamed
  bool with_port_11211 = false;    // one more server on 127.0.0.2:11211
  bool unix_servers = false;       // every server on a unix socket instead
  // Whether every server must receive keys (so the case tests something).
  bool every_server_used = true;
  std::vector<std::string> keys;
};

// Keys: plain, long (up to 250 bytes), and binary-ish (bytes >= 0x80,
// including valid UTF-8), none with space or control characters, which
// the text protocol cannot carry.
std::vector<std::string> mixed_keys(size_t n, uint32_t seed = 42) {
  std::mt19937 rng(seed);  // fixed seed: the same keys every run
  std::vector<std::string> keys;
  const std::vector<std::string> utf8 = {"ключ", "キー", "café", "日本語", "ñandú", "Ω≈ç√", "🙂"};
  for (size_t i = 0; keys.size() < n; ++i) {
    std::string k;
    switch (i % 6) {
      case 0:
        k = "key:" + std::to_string(i);
        break;
      case 1:
        k = "user:" + std::to_string(i * 7919) + ":profile";
        break;
      case 2:
        k = utf8[i % utf8.size()] + "-" + std::to_string(i);
        break;
      case 3: {  // arbitrary bytes 0x21..0x7e and 0x80..0xff
        size_t len = 1 + rng() % 60;
        for (size_t j = 0; j < len; ++j) {
          auto b = static_cast<uint32_t>(rng() % (94 + 128));
          k.push_back(static_cast<char>(b < 94 ? 0x21 + b : 0x80 + (b - 94)));
        }
        k += "#" + std::to_string(i);
        break;
      }
      case 4: {  // long keys, some exactly 250 bytes
        std::string tail = "~" + std::to_string(i);
        size_t len = (i % 12 == 4) ? 250 : 100 + rng() % 150;
        k = std::string(len - tail.size(), static_cast<char>('a' + i % 26)) + tail;
        break;
      }
      default:
        k = std::to_string(rng());
        break;
    }
    keys.push_back(std::move(k));
  }
  return keys;
}

// Keys exercising hash_tag "{}" the way twemproxy reads it: the part
// between the first '{' and the next '}' when non-empty, else the whole key.
std::vector<std::string> hash_tag_keys(size_t n) {
  std::vector<std::string> keys;
  for (size_t i = 0; keys.size() < n; ++i) {
    std::string id = std::to_string(i / 4);
    switch (i % 10) {
      case 0:
        keys.push_back("user{" + id + "}:a#" + std::to_string(i));
        break;
      case 1:
        keys.push_back("{" + id + "}:b#" + std::to_string(i));
        break;
      case 2:
        keys.push_back("x{" + id + "}#" + std::to_string(i));
        break;
      case 3:
        keys.push_back("{}empty#" + std::to_string(i));
        break;
      case 4:
        keys.push_back("open{only#" + std::to_string(i));
        break;
      case 5:
        keys.push_back("close}only{#" + std::to_string(i));
        break;
      case 6:
        keys.push_back("{{" + id + "}}#" + std::to_string(i));
        break;
      case 7:
        keys.push_back("{a" + id + "}{b}#" + std::to_string(i));
        break;
      case 8:
        keys.push_back("ключ{é" + id + "}#" + std::to_string(i));
        break;
      default:
        keys.push_back("plain#" + std::to_string(i));
        break;
    }
  }
  return keys;
}

class RingCompat : public ::testing::Test {
 protected:
  void SetUp() override {
    if (!have_nutcracker()) GTEST_SKIP() << "nutcracker is not installed";
  }

  // Builds the servers, stores every key through nutcracker, and checks
  // `memshard ring lookup` against where the keys really are.
  void check(const Case& c) {
    std::vector<std::unique_ptr<Memcached>> tcp;
    std::vector<Process> unix_procs;
    std::vector<Server> servers;
    for (size_t i = 0; i < c.weights.size(); ++i) {
      std::string name = i < c.names.size() ? c.names[i] : "";
      std::string suffix = ":" + std::to_string(c.weights[i]) + (name.empty() ? "" : " " + name);
      if (c.unix_servers) {
        std::string path = dir_.path() + "/mc" + std::to_string(i) + ".sock";
        std::vector<std::string> argv = {"memcached", "-s", path, "-t", "1", "-m", "64"};
        if (geteuid() == 0) {
          argv.push_back("-u");
          argv.push_back("root");
        }
        unix_procs.emplace_back(argv);
        ASSERT_TRUE(wait_listening(path)) << "memcached did not start on " << path;
        servers.push_back(
            Server{path + suffix, path, [path] { return std::make_unique<RawClient>(path); }});
      } else {
        tcp.push_back(std::make_unique<Memcached>());
        Memcached* m = tcp.back().get();
        servers.push_back(Server{m->address() + suffix, m->address(),
                                 [m] { return std::make_unique<RawClient>(m->port()); }});
      }
    }
    if (c.with_port_11211) {
      try {
        tcp.push_back(std::make_unique<Memcached>(11211, std::vector<std::string>{}, "127.0.0.2"));
      } catch (const std::exception& e) {
        GTEST_SKIP() << "cannot run memcached on 127.0.0.2:11211: " << e.what();
      }
      Memcached* m = tcp.back().get();
      servers.push_back(Server{m->address() + ":1", m->address(),
                               [m] { return std::make_unique<RawClient>(m->host(), m->port()); }});
    }

    uint16_t port = free_port();
    PoolSpec pool;
    pool.name = "compat";
    pool.listen = "127.0.0.1:" + std::to_string(port);
    pool.directives = c.directives;
    for (const auto& s : servers) pool.servers.push_back(s.line);
    std::string yaml = pool_yaml(pool);
    std::string config = dir_.write("nutcracker.yml", yaml);
    SCOPED_TRACE("config:\n" + yaml);

    CommandResult t = run_command({"nutcracker", "-t", "-c", config}, {}, 10s);
    ASSERT_EQ(t.exit_code, 0) << "nutcracker refuses the config: " << t.out << t.err;
    Nutcracker nc(config, port, dir_.path() + "/nutcracker.log");

    // Store every key through nutcracker, in pipelined batches.
    const auto& keys = c.keys;
    {
      RawClient client(port);
      const size_t batch = 100;
      for (size_t i = 0; i < keys.size(); i += batch) {
        size_t end = std::min(keys.size(), i + batch);
        std::string req;
        for (size_t j = i; j < end; ++j) req += set_command(keys[j], "value-" + std::to_string(j));
        client.send(req);
        std::string got = client.read_count("\r\n", end - i);
        std::string want;
        for (size_t j = i; j < end; ++j) want += "STORED\r\n";
        ASSERT_EQ(got, want) << "nutcracker did not store keys " << i << ".." << end - 1;
      }
    }

    std::string error;
    std::vector<std::string> owner = ring_lookup(config, keys, "", &error);
    ASSERT_EQ(owner.size(), keys.size()) << error;

    // Where each key really is: ask every server directly for all keys.
    std::vector<std::vector<size_t>> found_on(keys.size());
    std::map<std::string, size_t> index_of_key;
    for (size_t i = 0; i < keys.size(); ++i) index_of_key[keys[i]] = i;
    ASSERT_EQ(index_of_key.size(), keys.size()) << "duplicate keys in the test itself";
    std::vector<size_t> per_server(servers.size(), 0);
    for (size_t s = 0; s < servers.size(); ++s) {
      auto client = servers[s].connect();
      for (size_t i = 0; i < keys.size(); i += 400) {
        std::string req = "get";
        for (size_t j = i; j < std::min(keys.size(), i + 400); ++j) req += " " + keys[j];
        req += "\r\n";
        std::string reply = client->roundtrip(req, "END\r\n");
        std::vector<Value> values;
        ASSERT_TRUE(parse_values(reply, values)) << "bad reply from " << servers[s].address;
        for (const Value& v : values) {
          auto it = index_of_key.find(v.key);
          ASSERT_NE(it, index_of_key.end()) << "unknown key in reply: " << v.key;
          EXPECT_EQ(v.data, "value-" + std::to_string(it->second));
          found_on[it->second].push_back(s);
          ++per_server[s];
        }
      }
    }

    size_t wrong = 0, reported = 0;
    for (size_t i = 0; i < keys.size(); ++i) {
      bool ok = found_on[i].size() == 1 && servers[found_on[i][0]].address == owner[i];
      if (ok) continue;
      ++wrong;
      if (reported++ < 10) {
        std::string where;
        for (size_t s : found_on[i]) where += " " + servers[s].address;
        ADD_FAILURE() << "key '" << keys[i] << "' (#" << i << "): memshard says " << owner[i]
                      << ", nutcracker stored it on" << (where.empty() ? " nothing" : where);
      }
    }
    EXPECT_EQ(wrong, 0u) << "of " << keys.size() << " keys";
    for (size_t s = 0; s < servers.size() && c.every_server_used; ++s) {
      EXPECT_GT(per_server[s], 0u) << servers[s].address << " got no key: the case tests little";
    }
  }

  TempDir dir_;
};

// ---------------------------------------------------------------- hashes

class RingCompatHash : public RingCompat, public ::testing::WithParamInterface<std::string> {};

TEST_P(RingCompatHash, KetamaPlacementMatchesNutcracker) {
  Case c;
  c.directives = {{"hash", GetParam()}, {"distribution", "ketama"}};
  c.keys = mixed_keys(2000);
  // twemproxy's crc32 is libmemcached's: a 15-bit value ((~crc >> 16) &
  // 0x7fff), so with ketama every key lands before the first point, on
  // one server. memshard must reproduce that too.
  c.every_server_used = GetParam() != "crc32";
  check(c);
}

TEST_P(RingCompatHash, ModulaPlacementMatchesNutcracker) {
  Case c;
  c.directives = {{"hash", GetParam()}, {"distribution", "modula"}};
  c.weights = {1, 2, 1, 3};
  c.keys = mixed_keys(1000, 7);
  check(c);
}

INSTANTIATE_TEST_SUITE_P(AllHashes, RingCompatHash,
                         ::testing::Values("fnv1a_64", "fnv1_64", "fnv1a_32", "fnv1_32", "md5",
                                           "one_at_a_time", "murmur", "crc32a", "crc32", "crc16",
                                           "hsieh", "jenkins"),
                         [](const auto& p) { return p.param; });

// ---------------------------------------------------------- other shapes

TEST_F(RingCompat, DefaultHashWhenNoneIsWritten) {
  Case c;
  c.keys = mixed_keys(2000, 1);
  check(c);
}

TEST_F(RingCompat, UnequalWeights) {
  Case c;
  c.weights = {1, 2, 3, 5, 1};
  c.keys = mixed_keys(2000, 2);
  check(c);
}

TEST_F(RingCompat, UnequalWeightsMd5) {
  Case c;
  c.directives = {{"hash", "md5"}};
  c.weights = {10, 1, 4, 7};
  c.keys = mixed_keys(2000, 3);
  check(c);
}

TEST_F(RingCompat, NamedServers) {
  Case c;
  c.weights = {1, 1, 2, 1, 1};
  c.names = {"alpha", "", "shard-c", "", "server_e"};
  c.keys = mixed_keys(2000, 4);
  check(c);
}

TEST_F(RingCompat, AllServersNamedMurmur) {
  Case c;
  c.directives = {{"hash", "murmur"}};
  c.names = {"a", "b", "c", "d"};
  c.weights = {1, 1, 1, 1};
  c.keys = mixed_keys(2000, 5);
  check(c);
}

// twemproxy leaves ":11211" out of an unnamed server's ring name.
TEST_F(RingCompat, ServerOnPort11211) {
  Case c;
  c.weights = {1, 1, 1};
  c.with_port_11211 = true;
  c.keys = mixed_keys(2000, 6);
  check(c);
}

TEST_F(RingCompat, HashTag) {
  Case c;
  c.directives = {{"hash", "fnv1a_64"}, {"hash_tag", "\"{}\""}};
  c.keys = hash_tag_keys(2000);
  check(c);
}

TEST_F(RingCompat, HashTagModulaMd5) {
  Case c;
  c.directives = {{"hash", "md5"}, {"distribution", "modula"}, {"hash_tag", "\"{}\""}};
  c.keys = hash_tag_keys(1000);
  check(c);
}

TEST_F(RingCompat, HashTagOtherCharacters) {
  Case c;
  c.directives = {{"hash_tag", "\"::\""}};
  std::vector<std::string> keys;
  for (int i = 0; i < 1500; ++i) {
    keys.push_back("tenant:t-" + std::to_string((i / 5) * 7919) + "-x:item#" + std::to_string(i));
  }
  c.keys = keys;
  check(c);
}

TEST_F(RingCompat, UnixSocketServers) {
  Case c;
  c.weights = {1, 2, 1};
  c.keys = mixed_keys(1500, 8);
  c.unix_servers = true;
  check(c);
}

TEST_F(RingCompat, ManyServersWithWeightsAndNames) {
  Case c;
  c.directives = {{"hash", "jenkins"}};
  c.weights = {3, 1, 1, 2, 1, 1, 4, 1};
  c.names = {"", "n1", "", "", "n4", "", "", "n7"};
  c.keys = mixed_keys(2000, 9);
  check(c);
}

}  // namespace
}  // namespace memshard::testing

namespace memshard::testing {
namespace {

// Stores keys through a proxy on `port`; returns false (with a failure) when
// a reply is not STORED.
bool store_through(uint16_t port, const std::vector<std::string>& keys) {
  RawClient client(port);
  for (size_t i = 0; i < keys.size(); i += 100) {
    size_t end = std::min(keys.size(), i + 100);
    std::string req, want;
    for (size_t j = i; j < end; ++j) {
      req += set_command(keys[j], "value-" + std::to_string(j));
      want += "STORED\r\n";
    }
    client.send(req);
    std::string got = client.read_count("\r\n", end - i);
    if (got != want) {
      ADD_FAILURE() << "keys " << i << ".." << end - 1 << " not stored: " << got.substr(0, 200);
      return false;
    }
  }
  return true;
}

// Asks `get key` through the proxy until the reply is not an error.
bool wait_until_served(uint16_t port, const std::string& key, std::chrono::milliseconds limit) {
  auto deadline = std::chrono::steady_clock::now() + limit;
  while (std::chrono::steady_clock::now() < deadline) {
    try {
      RawClient c(port);
      std::string r = c.roundtrip("get " + key + "\r\n", "\r\n");
      if (r == "END\r\n" || r.starts_with("VALUE")) return true;
    } catch (const std::exception&) {
    }
    std::this_thread::sleep_for(100ms);
  }
  return false;
}

// For each key, the index of the server of `fleet` holding it (npos when
// none, or several).
std::vector<size_t> where_stored(Fleet& fleet, const std::vector<size_t>& alive,
                                 const std::vector<std::string>& keys) {
  std::vector<size_t> out(keys.size(), std::string::npos);
  std::map<std::string, size_t> index;
  for (size_t i = 0; i < keys.size(); ++i) index[keys[i]] = i;
  for (size_t s : alive) {
    RawClient c(fleet[s].port());
    for (size_t i = 0; i < keys.size(); i += 400) {
      std::string req = "get";
      for (size_t j = i; j < std::min(keys.size(), i + 400); ++j) req += " " + keys[j];
      std::vector<Value> values;
      if (!parse_values(c.roundtrip(req + "\r\n", "END\r\n"), values)) {
        ADD_FAILURE() << "bad reply from server " << s;
        return out;
      }
      for (const Value& v : values) {
        size_t k = index.at(v.key);
        out[k] = out[k] == std::string::npos ? s : std::string::npos - 1;
      }
    }
  }
  return out;
}

// With auto_eject_hosts, a dead server leaves the ring: nutcracker rebuilds
// its continuum from the live servers, and memshard must place keys the
// same way (which is also the ring of the config without that server).
TEST_F(RingCompat, AutoEjectedServerPlacementMatchesNutcracker) {
  Fleet fleet(4);
  const size_t dead = 2;
  std::vector<std::string> lines = {fleet[0].address() + ":1", fleet[1].address() + ":2 two",
                                    fleet[2].address() + ":1", fleet[3].address() + ":1"};
  std::vector<std::pair<std::string, std::string>> directives = {{"auto_eject_hosts", "true"},
                                                                 {"server_failure_limit", "1"},
                                                                 {"server_retry_timeout", "600000"},
                                                                 {"timeout", "2000"}};
  uint16_t nc_port = free_port(), ms_port = free_port();
  PoolSpec pool{"eject", "127.0.0.1:" + std::to_string(nc_port), directives, lines};
  std::string nc_config = dir_.write("nc.yml", pool_yaml(pool));
  pool.listen = "127.0.0.1:" + std::to_string(ms_port);
  std::string ms_config = dir_.write("ms.yml", pool_yaml(pool));
  PoolSpec reduced = pool;
  reduced.servers.erase(reduced.servers.begin() + dead);
  std::string reduced_config = dir_.write("reduced.yml", pool_yaml(reduced));

  std::vector<std::string> keys = mixed_keys(1500, 12);
  std::string error;
  std::vector<std::string> full = ring_lookup(ms_config, keys, "", &error);
  std::vector<std::string> expected = ring_lookup(reduced_config, keys, "", &error);
  ASSERT_EQ(expected.size(), keys.size()) << error;
  ASSERT_EQ(full.size(), keys.size()) << error;
  std::string dead_key;
  for (size_t i = 0; i < keys.size() && dead_key.empty(); ++i) {
    if (full[i] == fleet[dead].address()) dead_key = keys[i];
  }
  ASSERT_FALSE(dead_key.empty());

  Nutcracker nc(nc_config, nc_port, dir_.path() + "/nutcracker.log");
  Memshard ms(ms_config, {"--threads", "2"}, ms_port, dir_.path() + "/memshard.log");
  fleet[dead].process().stop();
  std::vector<size_t> alive = {0, 1, 3};

  for (auto [name, port] : {std::pair<std::string, uint16_t>{"nutcracker", nc_port},
                            std::pair<std::string, uint16_t>{"memshard", ms_port}}) {
    SCOPED_TRACE(name);
    fleet.flush_all();
    ASSERT_TRUE(wait_until_served(port, dead_key, 15s))
        << name << " kept failing the dead server's keys";
    ASSERT_TRUE(store_through(port, keys));
    std::vector<size_t> at = where_stored(fleet, alive, keys);
    size_t wrong = 0;
    for (size_t i = 0; i < keys.size(); ++i) {
      size_t want = fleet.index_of(expected[i]);
      if (at[i] == want) continue;
      if (wrong++ < 5) {
        ADD_FAILURE() << name << ": key '" << keys[i] << "' on server " << at[i]
                      << ", the ring without the dead server says " << want;
      }
    }
    EXPECT_EQ(wrong, 0u) << name;
  }
}

}  // namespace
}  // namespace memshard::testing
