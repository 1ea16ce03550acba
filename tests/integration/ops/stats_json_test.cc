// The stats port's twemproxy-style JSON document: how readers get it
// (silent connection, half-close, a line, HTTP), that it is strict JSON
// with every field twemproxy's readers (nutcracker-web, twemproxy exporters,
// collectd/Datadog plugins) look for, and that its counters say exactly
// what the test sent; a stopped, killed or slow server shows in its
// error counters.
#include <gtest/gtest.h>
#include <unistd.h>

#include <csignal>
#include <ctime>
#include <set>

#include "ops_util.h"

namespace memshard::testing::ops {
namespace {

// twemproxy's fields, as its stats readers expect them.
const std::vector<std::string> kTopFields = {"uptime",
                                             "timestamp",
                                             "total_connections",
                                             "curr_connections",
                                             "config_generation",
                                             "config_reloads",
                                             "config_reload_failures"};
const std::vector<std::string> kPoolFields = {
    "client_eof", "client_err", "client_connections", "server_ejects", "forward_error",
    "fragments",  "requests"};
const std::vector<std::string> kServerFields = {
    "server_eof",        "server_err",  "server_timedout", "server_connections",
    "server_ejected_at", "requests",    "request_bytes",   "responses",
    "response_bytes",    "in_queue",    "in_queue_bytes",  "out_queue",
    "out_queue_bytes",   "replies_hit", "replies_miss",    "replies_stored"};

std::string hostname() {
  char buf[256] = {};
  gethostname(buf, sizeof(buf) - 1);
  return buf;
}

// obj[name] as a number; records a failure (and returns 0) when missing or
// not a non-negative integer.
uint64_t num(const Json& obj, const std::string& name, const std::string& where) {
  const Json* v = obj.get(name);
  if (v == nullptr) {
    ADD_FAILURE() << where << ": no \"" << name << "\"";
    return 0;
  }
  std::optional<uint64_t> n = v->u64();
  if (!n) {
    ADD_FAILURE() << where << ": \"" << name << "\" is not a non-negative integer: " << v->number;
    return 0;
  }
  return *n;
}

// The names of the object-valued members (pools at the top, servers in a pool).
std::set<std::string> object_members(const Json& obj) {
  std::set<std::string> out;
  for (const auto& [k, v] : obj.members) {
    if (v.is_object()) out.insert(k);
  }
  return out;
}

Json stats_or_fail(uint16_t stats_port) {
  std::string error;
  std::optional<Json> j = fetch_stats_json(stats_port, &error);
  EXPECT_TRUE(j.has_value()) << error;
  return j.value_or(Json{});
}

class StatsJson : public ::testing::Test {
 protected:
  // Pool alpha over three servers (the third named "gamma"), pool beta on
  // the first server alone.
  void start(std::vector<std::string> extra = {"--threads", "2"}) {
    fleet_ = std::make_unique<Fleet>(3);
    alpha_port_ = free_port();
    beta_port_ = free_port();
    PoolSpec alpha{"alpha",
                   "127.0.0.1:" + std::to_string(alpha_port_),
                   {},
                   {(*fleet_)[0].address() + ":1", (*fleet_)[1].address() + ":1",
                    (*fleet_)[2].address() + ":1 gamma"}};
    PoolSpec beta{
        "beta", "127.0.0.1:" + std::to_string(beta_port_), {}, {(*fleet_)[0].address() + ":1"}};
    proxy_ = start_proxy(dir_, config_yaml({alpha, beta}), alpha_port_, std::move(extra));
    names_ = {{(*fleet_)[0].address(), (*fleet_)[0].address()},
              {(*fleet_)[1].address(), (*fleet_)[1].address()},
              {(*fleet_)[2].address(), "gamma"}};
  }

  std::map<std::string, std::vector<std::string>> keys(size_t per_server) {
    std::string error;
    auto k =
        keys_by_server(proxy_->config_path,
                       {(*fleet_)[0].address(), (*fleet_)[1].address(), (*fleet_)[2].address()},
                       "ops-json-", per_server, "alpha", &error);
    EXPECT_FALSE(k.empty()) << error;
    return k;
  }

  TempDir dir_;
  std::unique_ptr<Fleet> fleet_;
  uint16_t alpha_port_ = 0, beta_port_ = 0;
  std::unique_ptr<Proxy> proxy_;
  std::map<std::string, std::string> names_;  // address -> stats name
};

TEST_F(StatsJson, ReadersGetTheDocumentEveryWayTwemproxyServesIt) {
  start();
  const uint16_t port = proxy_->stats_port;

  // nutcracker's readers connect and wait (`nc host 22222`).
  auto t0 = std::chrono::steady_clock::now();
  StatsExchange silent = stats_exchange(port, "", false, 5s);
  auto took = std::chrono::steady_clock::now() - t0;
  EXPECT_TRUE(silent.closed) << "the stats port kept a silent reader's connection open";
  EXPECT_LT(took, 3s);
  std::string error;
  EXPECT_TRUE(parse_json(silent.bytes, &error).has_value()) << error << "\n" << silent.bytes;

  // `nc -q0 host 22222 < /dev/null`: closes its side at once.
  StatsExchange half = stats_exchange(port, "", true, 5s);
  EXPECT_TRUE(half.closed);
  EXPECT_TRUE(parse_json(half.bytes, &error).has_value()) << error << "\n" << half.bytes;

  // `echo stats | nc host 22222`: a line, any line.
  StatsExchange line = stats_exchange(port, "stats\n", false, 5s);
  EXPECT_TRUE(line.closed);
  EXPECT_TRUE(parse_json(line.bytes, &error).has_value()) << error << "\n" << line.bytes;

  // HTTP: the same document with headers.
  for (const std::string path : {"/", "/stats", "/stats?pretty=1"}) {
    HttpResponse h = http_get(port, path);
    EXPECT_TRUE(h.ok) << path << ": " << h.raw;
    EXPECT_EQ(h.status, 200) << path;
    EXPECT_EQ(h.headers["content-type"], "application/json") << path;
    EXPECT_TRUE(parse_json(h.body, &error).has_value()) << path << ": " << error << "\n" << h.body;
  }
  HttpResponse missing = http_get(port, "/nope");
  EXPECT_TRUE(missing.ok) << missing.raw;
  EXPECT_EQ(missing.status, 404);

  // A second opinion on the document: python's json module, duplicate
  // keys refused.
  std::optional<std::string> py = python_json_check(half.bytes);
  if (py) {
    EXPECT_EQ(*py, "") << half.bytes;
  }
}

TEST_F(StatsJson, CarriesEveryTwemproxyFieldWithTheCountsOfTheTraffic) {
  start();
  auto k = keys(4);
  ASSERT_FALSE(k.empty());
  const time_t started = time(nullptr);

  Traffic traffic;
  std::string failure;
  ASSERT_TRUE(run_traffic(alpha_port_, k, traffic, &failure)) << failure;
  // One more client, on pool beta, with one set.
  RawClient beta(beta_port_);
  ASSERT_EQ(beta.roundtrip(set_command("beta-key", "b")), "STORED\r\n");

  std::string raw = stats_exchange(proxy_->stats_port, "", true).bytes;
  std::string error;
  std::optional<Json> doc = parse_json(raw, &error);
  ASSERT_TRUE(doc.has_value()) << error << "\n" << raw;
  ASSERT_TRUE(doc->is_object());
  std::optional<std::string> py = python_json_check(raw);
  if (py) {
    EXPECT_EQ(*py, "");
  }
  const Json& j = *doc;

  // The head of the document.
  ASSERT_NE(j.get("service"), nullptr);
  EXPECT_EQ(j.get("service")->string, "memshard");
  ASSERT_NE(j.get("source"), nullptr);
  EXPECT_EQ(j.get("source")->string, hostname());
  ASSERT_NE(j.get("version"), nullptr);
  EXPECT_EQ(j.get("version")->kind, Json::Kind::string);
  CommandResult v = run_command({memshard_binary(), "--version"}, {}, 10s);
  EXPECT_NE(v.out.find(j.get("version")->string), std::string::npos)
      << "JSON version " << j.get("version")->string << " vs --version: " << v.out;
  for (const auto& f : kTopFields) num(j, f, "top level");
  EXPECT_LE(num(j, "uptime", ""), static_cast<uint64_t>(time(nullptr) - started) + 30);
  const auto now = static_cast<uint64_t>(time(nullptr));
  EXPECT_LE(num(j, "timestamp", ""), now + 1);
  EXPECT_GE(num(j, "timestamp", ""), now - 5);
  // The wait_listening probe of the start, then four clients.
  EXPECT_EQ(num(j, "total_connections", ""), 1u + 4u);
  EXPECT_EQ(num(j, "curr_connections", ""), 4u);
  EXPECT_EQ(num(j, "config_generation", ""), 1u);
  EXPECT_EQ(num(j, "config_reloads", ""), 0u);
  EXPECT_EQ(num(j, "config_reload_failures", ""), 0u);
  EXPECT_EQ(object_members(j), (std::set<std::string>{"alpha", "beta"}));

  // Pool alpha.
  ASSERT_NE(j.get("alpha"), nullptr);
  const Json& alpha = *j.get("alpha");
  for (const auto& f : kPoolFields) num(alpha, f, "alpha");
  EXPECT_EQ(num(alpha, "requests", "alpha"), traffic.requests);
  EXPECT_EQ(num(alpha, "fragments", "alpha"), traffic.fragments);
  EXPECT_EQ(num(alpha, "client_connections", "alpha"), 3u);
  EXPECT_EQ(num(alpha, "client_eof", "alpha"), 1u);  // the start's probe
  EXPECT_EQ(num(alpha, "client_err", "alpha"), 0u);
  EXPECT_EQ(num(alpha, "forward_error", "alpha"), 0u);
  EXPECT_EQ(num(alpha, "server_ejects", "alpha"), 0u);
  std::set<std::string> want_servers;
  for (const auto& [address, name] : names_) want_servers.insert(name);
  EXPECT_EQ(object_members(alpha), want_servers);

  uint64_t server_requests = 0;
  for (const auto& [address, name] : names_) {
    const Json* s = alpha.get(name);
    ASSERT_NE(s, nullptr) << "no server \"" << name << "\" in pool alpha";
    const std::string where = "alpha/" + name;
    for (const auto& f : kServerFields) num(*s, f, where);
    const ServerExpect& e = traffic.servers[address];
    server_requests += num(*s, "requests", where);
    EXPECT_EQ(num(*s, "requests", where), e.requests) << where;
    EXPECT_EQ(num(*s, "responses", where), e.requests) << where;
    EXPECT_EQ(num(*s, "request_bytes", where), e.request_bytes) << where;
    EXPECT_EQ(num(*s, "response_bytes", where), e.response_bytes) << where;
    EXPECT_EQ(num(*s, "replies_stored", where), e.stored) << where;
    EXPECT_EQ(num(*s, "replies_hit", where), e.hits) << where;
    EXPECT_EQ(num(*s, "replies_miss", where), e.misses) << where;
    EXPECT_EQ(num(*s, "server_eof", where), 0u) << where;
    EXPECT_EQ(num(*s, "server_err", where), 0u) << where;
    EXPECT_EQ(num(*s, "server_timedout", where), 0u) << where;
    EXPECT_EQ(num(*s, "server_ejected_at", where), 0u) << where;
    EXPECT_EQ(num(*s, "in_queue", where), 0u) << where;
    EXPECT_EQ(num(*s, "in_queue_bytes", where), 0u) << where;
    EXPECT_EQ(num(*s, "out_queue", where), 0u) << where;
    EXPECT_EQ(num(*s, "out_queue_bytes", where), 0u) << where;
    // server_connections 1 per worker thread that used the server.
    EXPECT_GE(num(*s, "server_connections", where), 1u) << where;
    EXPECT_LE(num(*s, "server_connections", where), 2u) << where;
  }
  EXPECT_EQ(server_requests, num(alpha, "fragments", "alpha"))
      << "the servers' requests do not add up to the pool's fragments";

  // Pool beta: its own counters; the server it shares with alpha is counted
  // apart.
  ASSERT_NE(j.get("beta"), nullptr);
  const Json& beta_pool = *j.get("beta");
  EXPECT_EQ(num(beta_pool, "requests", "beta"), 1u);
  EXPECT_EQ(num(beta_pool, "fragments", "beta"), 1u);
  EXPECT_EQ(num(beta_pool, "client_connections", "beta"), 1u);
  EXPECT_EQ(object_members(beta_pool), std::set<std::string>{(*fleet_)[0].address()});
  const Json* shared = beta_pool.get((*fleet_)[0].address());
  ASSERT_NE(shared, nullptr);
  EXPECT_EQ(num(*shared, "requests", "beta"), 1u);
  EXPECT_EQ(num(*shared, "replies_stored", "beta"), 1u);
  EXPECT_EQ(num(*shared, "request_bytes", "beta"), set_command("beta-key", "b").size());

  // A client that leaves: client_eof counts it, the gauges drop.
  traffic.clients[0].reset();
  EXPECT_TRUE(wait_until([&] {
    Json now_doc = stats_or_fail(proxy_->stats_port);
    const Json* a = now_doc.get("alpha");
    return a != nullptr && a->get("client_connections") != nullptr &&
           a->get("client_connections")->u64() == 2u && a->get("client_eof")->u64() == 2u &&
           now_doc.get("curr_connections")->u64() == 3u;
  })) << "after a client closed: "
      << stats_exchange(proxy_->stats_port, "", true).bytes;
}

TEST_F(StatsJson, TwemproxyNamesServersAsItsRingDoes) {
  // twemproxy names a server by its explicit name, else host:port, or the
  // host alone on port 11211; other ketama_compat modes use host:port.
  std::unique_ptr<Memcached> on_default_port;
  try {
    on_default_port = std::make_unique<Memcached>(11211, std::vector<std::string>{}, "127.0.0.7");
  } catch (const std::exception& e) {
    GTEST_SKIP() << "cannot run memcached on 127.0.0.7:11211: " << e.what();
  }
  Memcached other;
  const uint16_t p1 = free_port(), p2 = free_port(), p3 = free_port();
  PoolSpec twem{
      "twem", "127.0.0.1:" + std::to_string(p1), {}, {"127.0.0.7:11211:1", other.address() + ":1"}};
  PoolSpec named{"named",
                 "127.0.0.1:" + std::to_string(p2),
                 {},
                 {"127.0.0.7:11211:1 first", other.address() + ":1 second"}};
  PoolSpec libm{"libm",
                "127.0.0.1:" + std::to_string(p3),
                {{"ketama_compat", "libmemcached"}},
                {"127.0.0.7:11211:1", other.address() + ":1"}};
  TempDir dir;
  std::unique_ptr<Proxy> proxy = start_proxy(dir, config_yaml({twem, named, libm}), p1);
  Json j = stats_or_fail(proxy->stats_port);
  ASSERT_NE(j.get("twem"), nullptr);
  EXPECT_EQ(object_members(*j.get("twem")), (std::set<std::string>{"127.0.0.7", other.address()}));
  ASSERT_NE(j.get("named"), nullptr);
  EXPECT_EQ(object_members(*j.get("named")), (std::set<std::string>{"first", "second"}));
  ASSERT_NE(j.get("libm"), nullptr);
  EXPECT_EQ(object_members(*j.get("libm")),
            (std::set<std::string>{"127.0.0.7:11211", other.address()}));
}

// Counters are what Prometheus computes rates from: a reload must not
// reset them for the servers and pools it keeps; a removed server leaves
// the document, an added one starts at zero.
TEST_F(StatsJson, ReloadKeepsCountersOfWhatStays) {
  fleet_ = std::make_unique<Fleet>(3);
  alpha_port_ = free_port();
  auto pool_with = [&](std::vector<size_t> servers) {
    PoolSpec alpha{"alpha", "127.0.0.1:" + std::to_string(alpha_port_), {}, {}};
    for (size_t i : servers) alpha.servers.push_back((*fleet_)[i].address() + ":1");
    return config_yaml({alpha});
  };
  proxy_ = start_proxy(dir_, pool_with({0, 1}), alpha_port_, {"--threads", "2"});
  const std::string s0 = (*fleet_)[0].address(), s1 = (*fleet_)[1].address(),
                    s2 = (*fleet_)[2].address();
  // fnv1a_64 (twemproxy keeps its low 32 bits) puts keys that differ in a
  // last digit next to each other on the ring: pick keys per server.
  std::string error;
  auto keys = keys_by_server(proxy_->config_path, {s0, s1}, "reload-", 20, "alpha", &error);
  ASSERT_FALSE(keys.empty()) << error;
  RawClient c(alpha_port_);
  for (const auto& [server, ks] : keys) {
    for (const auto& k : ks) ASSERT_EQ(c.roundtrip(set_command(k, "v")), "STORED\r\n");
  }
  Json before = stats_or_fail(proxy_->stats_port);
  ASSERT_NE(before.get("alpha"), nullptr);
  ASSERT_NE(before.get("alpha")->get(s1), nullptr);
  const uint64_t s1_requests = num(*before.get("alpha")->get(s1), "requests", "s1");
  EXPECT_EQ(s1_requests, 20u);
  EXPECT_EQ(num(*before.get("alpha"), "requests", "alpha"), 40u);

  dir_.write("memshard.yml", pool_with({1, 2}));
  proxy_->process().signal(SIGHUP);
  EXPECT_TRUE(wait_until([&] {
    Json j = stats_or_fail(proxy_->stats_port);
    return j.get("config_generation") != nullptr && j.get("config_generation")->u64() == 2u &&
           j.get("alpha") != nullptr &&
           object_members(*j.get("alpha")) == std::set<std::string>{s1, s2};
  })) << stats_exchange(proxy_->stats_port, "", true).bytes;

  Json after = stats_or_fail(proxy_->stats_port);
  ASSERT_NE(after.get("alpha"), nullptr);
  const Json& alpha = *after.get("alpha");
  EXPECT_EQ(num(after, "config_reloads", ""), 1u);
  EXPECT_EQ(num(alpha, "requests", "alpha"), 40u) << "the pool's counters were reset by the reload";
  EXPECT_EQ(num(alpha, "client_connections", "alpha"), 1u);
  ASSERT_NE(alpha.get(s1), nullptr);
  EXPECT_EQ(num(*alpha.get(s1), "requests", "s1"), s1_requests)
      << "a kept server's counters were reset";
  ASSERT_NE(alpha.get(s2), nullptr);
  EXPECT_EQ(num(*alpha.get(s2), "requests", "s2"), 0u);

  std::vector<Sample> m;
  ASSERT_TRUE(fetch_metrics(proxy_->stats_port, m, nullptr, &error)) << error;
  EXPECT_EQ(metric(m, "memshard_server_requests_total", {{"address", s1}}),
            static_cast<double>(s1_requests));
  EXPECT_TRUE(samples_of(m, "memshard_server_requests_total", {{"address", s0}}).empty());
  EXPECT_EQ(metric(m, "memshard_config_reloads_total"), 1.0);
  EXPECT_EQ(metric(m, "memshard_config_generation"), 2.0);
  EXPECT_EQ(metric(m, "memshard_pool_requests_total", {{"pool", "alpha"}}), 40.0);
}

TEST_F(StatsJson, StoppedKilledAndSlowServersShowInTheirErrorCounters) {
  // One worker thread: one connection per server, so counts are exact.
  fleet_ = std::make_unique<Fleet>(3);
  alpha_port_ = free_port();
  PoolSpec alpha{"alpha",
                 "127.0.0.1:" + std::to_string(alpha_port_),
                 {{"timeout", "400"}},
                 {(*fleet_)[0].address() + ":1", (*fleet_)[1].address() + ":1",
                  (*fleet_)[2].address() + ":1"}};
  proxy_ = start_proxy(dir_, config_yaml({alpha}), alpha_port_, {"--threads", "1"});
  const std::string slow = (*fleet_)[0].address(), killed = (*fleet_)[1].address(),
                    fine = (*fleet_)[2].address();
  auto k = keys(1);
  ASSERT_FALSE(k.empty());

  RawClient c(alpha_port_);
  for (const auto& [server, ks] : k) {
    ASSERT_EQ(c.roundtrip(set_command(ks[0], "v")), "STORED\r\n") << server;
  }

  // A server that stops answering: the request times out.
  ASSERT_TRUE(stop_process((*fleet_)[0].process().pid()));
  std::string reply = c.roundtrip("get " + k[slow][0] + "\r\n");
  EXPECT_EQ(reply.rfind("SERVER_ERROR", 0), 0u) << reply;

  // A server that dies: its connection reads EOF; the next request finds
  // nothing listening.
  (*fleet_)[1].process().signal(SIGKILL);
  ASSERT_NE((*fleet_)[1].process().wait_exit(5s), -1);
  EXPECT_TRUE(wait_until([&] {
    Json doc = stats_or_fail(proxy_->stats_port);  // alive while we look inside
    const Json* s = doc.get("alpha");
    s = s != nullptr ? s->get(killed) : nullptr;
    return s != nullptr && s->get("server_eof")->u64().value_or(0) >= 1;
  })) << "no server_eof after the server died: "
      << stats_exchange(proxy_->stats_port, "", true).bytes;
  reply = c.roundtrip("get " + k[killed][0] + "\r\n");
  EXPECT_EQ(reply.rfind("SERVER_ERROR", 0), 0u) << reply;

  // The third server still answers.
  EXPECT_EQ(c.roundtrip("get " + k[fine][0] + "\r\n", "END\r\n"),
            "VALUE " + k[fine][0] + " 0 1\r\nv\r\nEND\r\n");

  Json j = stats_or_fail(proxy_->stats_port);
  ASSERT_NE(j.get("alpha"), nullptr);
  const Json& pool = *j.get("alpha");
  const Json* s_slow = pool.get(slow);
  const Json* s_killed = pool.get(killed);
  const Json* s_fine = pool.get(fine);
  ASSERT_TRUE(s_slow != nullptr && s_killed != nullptr && s_fine != nullptr);

  EXPECT_EQ(num(*s_slow, "server_timedout", "slow"), 1u);
  EXPECT_EQ(num(*s_slow, "server_eof", "slow"), 0u);
  EXPECT_EQ(num(*s_slow, "server_err", "slow"), 0u);
  EXPECT_EQ(num(*s_slow, "requests", "slow"), 2u);
  EXPECT_EQ(num(*s_slow, "responses", "slow"), 1u);  // the set; the get timed out
  EXPECT_EQ(num(*s_slow, "out_queue", "slow"), 0u);
  EXPECT_EQ(num(*s_slow, "server_connections", "slow"), 0u);

  EXPECT_EQ(num(*s_killed, "server_eof", "killed"), 1u);
  EXPECT_GE(num(*s_killed, "server_err", "killed"), 1u);  // connection refused
  EXPECT_EQ(num(*s_killed, "server_timedout", "killed"), 0u);
  EXPECT_EQ(num(*s_killed, "server_connections", "killed"), 0u);

  for (const char* f : {"server_eof", "server_err", "server_timedout"}) {
    EXPECT_EQ(num(*s_fine, f, "fine"), 0u) << f;
  }
  EXPECT_EQ(num(*s_fine, "server_connections", "fine"), 1u);
  EXPECT_EQ(num(*s_fine, "requests", "fine"), 2u);

  // The timed-out get and the refused one.
  EXPECT_EQ(num(pool, "forward_error", "alpha"), 2u);
  EXPECT_EQ(num(pool, "requests", "alpha"), 6u);
  (*fleet_)[0].process().signal(SIGCONT);
}

}  // namespace
}  // namespace memshard::testing::ops
