// Servers from DNS discovery (servers_srv, servers_dns; docs/discovery.md)
// against a real DNS server: dnsmasq, started by the test on 127.0.0.1 on a
// free high port (no root needed), answering SRV records from a config file
// (dnsmasq reads srv-host lines only when it starts, so a change of SRV
// records restarts it on the same port) and the targets' addresses from a
// hosts file (re-read on SIGHUP). memshard asks it alone (--dns-server).
#include <gtest/gtest.h>
#include <signal.h>
#include <unistd.h>
#include <yaml-cpp/yaml.h>

#include <chrono>
#include <fstream>
#include <map>
#include <memory>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "conf/config.h"
#include "fleet_util.h"
#include "harness.h"
#include "reload_util.h"

namespace memshard::testing {
namespace {

using namespace std::chrono_literals;
using Clock = std::chrono::steady_clock;
using reload::proxy_stats;
using reload::stat_of;
using reload::wait_stat;

const char* const kSrvName = "_memcache._tcp.mc.test";

std::string dnsmasq_binary() {
  for (const char* p : {"/usr/sbin/dnsmasq", "/usr/bin/dnsmasq"}) {
    if (access(p, X_OK) == 0) return p;
  }
  return "";
}

std::string read_file(const std::string& path) {
  std::ifstream in(path);
  std::stringstream s;
  s << in.rdbuf();
  return s.str();
}

// One SRV record, and the hosts file's lines.
struct Srv {
  std::string target;
  uint16_t port;
  uint16_t weight = 10;
  uint16_t priority = 0;
};

class Dns {
 public:
  explicit Dns(const TempDir& dir, std::string domain = "mc.test", std::string srv_name = kSrvName)
      : dir_(dir), port_(free_port()), domain_(std::move(domain)), srv_name_(std::move(srv_name)) {}
  ~Dns() { stop(); }

  std::string server() const { return "127.0.0.1:" + std::to_string(port_); }

  // Serves `records` (and, when `name_has_address`, an A record for the SRV
  // name itself, so that a name without SRV records is an empty answer, not
  // an unknown name), with `hosts` ("ADDRESS NAME" lines). Restarts dnsmasq.
  // `extra`: more dnsmasq.conf lines (another name's records).
  void serve(const std::vector<Srv>& records, const std::vector<std::string>& hosts,
             bool name_has_address = false, const std::string& extra = "") {
    std::string conf = extra;
    for (const Srv& r : records) {
      conf += "srv-host=" + srv_name_ + "," + r.target + "," + std::to_string(r.port) + "," +
              std::to_string(r.priority) + "," + std::to_string(r.weight) + "\n";
    }
    if (name_has_address) conf += "host-record=" + srv_name_ + ",127.0.0.9\n";
    conf_ = dir_.write("dnsmasq.conf", conf);
    set_hosts(hosts, false);
    stop();
    process_ = std::make_unique<Process>(
        std::vector<std::string>{dnsmasq_binary(), "--no-daemon", "--port=" + std::to_string(port_),
                                 "--listen-address=127.0.0.1", "--bind-interfaces", "--no-resolv",
                                 "--no-hosts", "--conf-file=" + conf_, "--addn-hosts=" + hosts_,
                                 "--pid-file=", "--cache-size=0", "--local-ttl=0",
                                 "--local=/" + domain_ + "/"},
        dir_.path() + "/dnsmasq.log");
    ASSERT_TRUE(wait_listening(port_)) << read_file(dir_.path() + "/dnsmasq.log");
  }
  // Rewrites the hosts file; `reread`: and tells dnsmasq (SIGHUP).
  void set_hosts(const std::vector<std::string>& hosts, bool reread = true) {
    std::string text;
    for (const std::string& h : hosts) text += h + "\n";
    hosts_ = dir_.write("hosts", text);
    if (reread && process_) process_->signal(SIGHUP);
  }
  void stop() {
    if (process_) process_->stop();
    process_.reset();
  }

 private:
  const TempDir& dir_;
  uint16_t port_;
  std::string domain_, srv_name_;
  std::string conf_, hosts_;
  std::unique_ptr<Process> process_;
};

std::string target(size_t i) {
  return "mc-" + std::to_string(i) + ".mc.test";
}

class Discovery : public ::testing::Test {
 protected:
  void SetUp() override {
    if (dnsmasq_binary().empty()) GTEST_SKIP() << "dnsmasq is not installed (dnsmasq-base)";
    dns_ = std::make_unique<Dns>(dir_);
  }

  // `n` memcached servers, indices 0.. on 127.0.0.1.
  void servers(size_t n) {
    while (mc_.size() < n) mc_.push_back(std::make_unique<Memcached>());
  }
  Srv srv(size_t i) const { return Srv{target(i), mc_[i]->port()}; }
  std::vector<Srv> srvs(std::initializer_list<size_t> which) const {
    std::vector<Srv> out;
    for (size_t i : which) out.push_back(srv(i));
    return out;
  }
  std::vector<std::string> hosts() const {
    std::vector<std::string> out;
    for (size_t i = 0; i < mc_.size(); ++i) out.push_back("127.0.0.1 " + target(i));
    return out;
  }

  // memshard instance `i` on servers_srv with `directives` ("key: value").
  uint16_t start(const std::vector<std::string>& directives, size_t i = 0) {
    const uint16_t port = free_port();
    std::string yaml = "main:\n  listen: 127.0.0.1:" + std::to_string(port) +
                       "\n  servers_srv: " + kSrvName + "\n  hash: md5\n  timeout: 2000\n";
    for (const std::string& d : directives) yaml += "  " + d + "\n";
    const std::string conf = dir_.write("memshard-" + std::to_string(i) + ".yml", yaml);
    logs_.push_back(dir_.path() + "/memshard-" + std::to_string(i) + ".log");
    ms_.push_back(std::make_unique<Memshard>(
        conf, std::vector<std::string>{"--dns-server", dns_->server(), "-s", "0", "-v", "6"}, port,
        logs_.back()));
    ports_.push_back(port);
    EXPECT_TRUE(reload::wait_ready(port)) << log(i);
    return port;
  }
  std::string log(size_t i = 0) const { return read_file(logs_[i]); }
  uint64_t stat(const std::string& name, size_t i = 0) const {
    return stat_of(proxy_stats(ports_[i]), name);
  }
  bool wait_for(const std::string& name, uint64_t value, std::chrono::milliseconds limit = 15s,
                size_t i = 0) {
    return wait_stat(
               ports_[i], name, [&](uint64_t v) { return v == value; }, limit)
        .has_value();
  }
  bool wait_at_least(const std::string& name, uint64_t value, std::chrono::milliseconds limit = 15s,
                     size_t i = 0) {
    return wait_stat(
               ports_[i], name, [&](uint64_t v) { return v >= value; }, limit)
        .has_value();
  }
  // Writes `n` keys through instance `i`; how many were stored.
  size_t write_keys(size_t n, const std::string& prefix, size_t i = 0) {
    RawClient c(ports_[i]);
    size_t stored = 0;
    for (size_t k = 0; k < n; ++k) {
      const std::string key = prefix + std::to_string(k);
      if (c.roundtrip("set " + key + " 0 0 1\r\nv\r\n") == "STORED\r\n") ++stored;
    }
    return stored;
  }
  uint64_t items(size_t server) const { return mc_[server]->stat("curr_items"); }

  TempDir dir_;
  std::unique_ptr<Dns> dns_;
  std::vector<std::unique_ptr<Memcached>> mc_;
  std::vector<std::unique_ptr<Memshard>> ms_;
  std::vector<uint16_t> ports_;
  std::vector<std::string> logs_;
};

const std::vector<std::string> kQuick = {"discovery_refresh: 300", "discovery_hold: 600"};

TEST_F(Discovery, AServerJoins) {
  servers(3);
  dns_->serve(srvs({0, 1}), hosts());
  start(kQuick);
  EXPECT_EQ(stat("main:discovery_servers"), 2u) << log();
  EXPECT_EQ(stat("config_generation"), 1u);
  dns_->serve(srvs({0, 1, 2}), hosts());
  ASSERT_TRUE(wait_for("main:discovery_servers", 3)) << log();
  EXPECT_EQ(stat("main:discovery_changes"), 1u);
  EXPECT_EQ(stat("config_generation"), 2u);
  EXPECT_GT(stat("main:discovery_last_change"), 0u);
  EXPECT_NE(log().find("joined: " + target(2) + ":" + std::to_string(mc_[2]->port())),
            std::string::npos)
      << log();
  // The new server takes its share of the keys, with no error.
  EXPECT_EQ(write_keys(200, "join"), 200u);
  EXPECT_GT(items(2), 20u);
  EXPECT_EQ(stat("main:forward_error"), 0u);
}

TEST_F(Discovery, AServerLeaves) {
  servers(3);
  dns_->serve(srvs({0, 1, 2}), hosts());
  start(kQuick);
  ASSERT_EQ(stat("main:discovery_servers"), 3u) << log();
  dns_->serve(srvs({0, 1}), hosts());
  ASSERT_TRUE(wait_for("main:discovery_servers", 2)) << log();
  EXPECT_EQ(stat("main:discovery_changes"), 1u);
  EXPECT_NE(log().find("left: " + target(2) + ":" + std::to_string(mc_[2]->port())),
            std::string::npos)
      << log();
  const uint64_t before = items(2);
  EXPECT_EQ(write_keys(200, "leave"), 200u);
  EXPECT_EQ(items(2), before) << "a key went to the server that left";
}

TEST_F(Discovery, APodKeepsItsNameWithANewAddressAndItsKeys) {
  servers(2);
  dns_->serve(srvs({0, 1}), hosts());
  start(kQuick);
  ASSERT_EQ(write_keys(200, "before"), 200u);
  const uint64_t on_first = items(0);
  ASSERT_GT(on_first, 20u);
  // mc-0's pod comes back on another address, same port, empty.
  const uint16_t port0 = mc_[0]->port();
  mc_[0].reset();
  Memcached moved(port0, {}, "127.0.0.2");
  std::vector<std::string> h = hosts();
  h[0] = "127.0.0.2 " + target(0);
  dns_->set_hosts(h);
  const auto deadline = Clock::now() + 15s;
  while (log().find("now at 127.0.0.2:" + std::to_string(port0)) == std::string::npos &&
         Clock::now() < deadline) {
    std::this_thread::sleep_for(50ms);
  }
  ASSERT_NE(log().find("now at 127.0.0.2:" + std::to_string(port0)), std::string::npos) << log();
  // No change of servers: the same ring, the same generation.
  EXPECT_EQ(stat("main:discovery_changes"), 0u);
  EXPECT_EQ(stat("config_generation"), 1u);
  // The keys mc-0 held go to its new address: as many as before.
  const auto until = Clock::now() + 10s;
  while (write_keys(200, "before") < 200 && Clock::now() < until)
    std::this_thread::sleep_for(100ms);
  EXPECT_EQ(moved.stat("curr_items"), on_first);
}

TEST_F(Discovery, TheDnsServerDyingChangesNothing) {
  servers(2);
  dns_->serve(srvs({0, 1}), hosts());
  start(kQuick);
  dns_->stop();
  ASSERT_TRUE(wait_at_least("main:discovery_failures", 3)) << log();
  EXPECT_EQ(stat("main:discovery_servers"), 2u);
  EXPECT_EQ(stat("main:discovery_changes"), 0u);
  EXPECT_EQ(stat("main:discovery_failing"), 1u);
  EXPECT_EQ(stat("config_generation"), 1u);
  EXPECT_EQ(write_keys(100, "dead"), 100u);
  EXPECT_EQ(count_of(log(), "keeping its 2 server(s)"), 1u) << "said once a streak\n" << log();
  // It answers again: nothing to change either.
  dns_->serve(srvs({0, 1}), hosts());
  ASSERT_TRUE(wait_for("main:discovery_failing", 0)) << log();
  EXPECT_EQ(stat("config_generation"), 1u);
}

TEST_F(Discovery, AnEmptyAnswerChangesNothing) {
  servers(2);
  dns_->serve(srvs({0, 1}), hosts());
  start(kQuick);
  const uint64_t failures = stat("main:discovery_failures");
  dns_->serve({}, hosts(), true);
  ASSERT_TRUE(wait_at_least("main:discovery_failures", failures + 3)) << log();
  EXPECT_EQ(stat("main:discovery_servers"), 2u);
  EXPECT_EQ(stat("main:discovery_changes"), 0u);
  EXPECT_EQ(stat("config_generation"), 1u);
  EXPECT_NE(log().find("no SRV records"), std::string::npos) << log();
  EXPECT_EQ(write_keys(100, "empty"), 100u);
}

TEST_F(Discovery, AFlapShorterThanTheHoldChangesNothing) {
  servers(3);
  dns_->serve(srvs({0, 1, 2}), hosts());
  start({"discovery_refresh: 300", "discovery_hold: 4000"});
  dns_->serve(srvs({0, 1}), hosts());
  const auto deadline = Clock::now() + 10s;
  while (log().find("lists a change") == std::string::npos && Clock::now() < deadline)
    std::this_thread::sleep_for(20ms);
  ASSERT_NE(log().find("lists a change (left: " + target(2)), std::string::npos) << log();
  dns_->serve(srvs({0, 1, 2}), hosts());
  ASSERT_TRUE(wait_at_least("main:discovery_held", 1)) << log();
  EXPECT_NE(log().find("is dropped"), std::string::npos) << log();
  std::this_thread::sleep_for(4500ms);  // past the hold: still nothing
  EXPECT_EQ(stat("main:discovery_changes"), 0u) << log();
  EXPECT_EQ(stat("main:discovery_servers"), 3u);
  EXPECT_EQ(stat("config_generation"), 1u);
}

TEST_F(Discovery, AChangeOverTheCapIsAppliedInSteps) {
  servers(5);
  dns_->serve(srvs({0, 1}), hosts());
  start({"discovery_refresh: 300", "discovery_hold: 600", "discovery_max_change: 50%"});
  // Three join: at most one per step while two or three are in force.
  dns_->serve(srvs({0, 1, 2, 3, 4}), hosts());
  ASSERT_TRUE(wait_for("main:discovery_servers", 5, 30s)) << log();
  EXPECT_EQ(stat("main:discovery_changes"), 3u) << log();  // 2 -> 3 -> 4 -> 5
  EXPECT_GE(stat("main:discovery_held"), 2u);
  EXPECT_EQ(stat("config_generation"), 4u);
  EXPECT_EQ(count_of(log(), "larger than discovery_max_change"), 2u) << log();
  EXPECT_EQ(write_keys(300, "cap"), 300u);
  for (size_t i = 0; i < 5; ++i) EXPECT_GT(items(i), 0u) << i;
}

// SIGHUP reloads the rest of the file and keeps the servers discovery has
// in force, looking nothing up; a file that names another SRV name is
// looked up at that reload.
TEST_F(Discovery, SighupReloadsTheRestOfTheFileAndANewNameIsLookedUp) {
  servers(3);
  const std::string other = "srv-host=_other._tcp.mc.test," + target(2) + "," +
                            std::to_string(mc_[2]->port()) + ",0,10\n";
  dns_->serve(srvs({0, 1}), hosts(), false, other);
  const std::string conf_path = dir_.path() + "/memshard-0.yml";
  start({"discovery_refresh: 300", "discovery_hold: 600"});
  ASSERT_EQ(stat("main:discovery_servers"), 2u) << log();
  const std::string yaml = read_file(conf_path);
  std::string next = yaml;
  next.replace(next.find("timeout: 2000"), 13, "timeout: 1500");
  dir_.write("memshard-0.yml", next);
  ms_[0]->process().signal(SIGHUP);
  ASSERT_TRUE(wait_for("config_generation", 2)) << log();
  EXPECT_EQ(stat("main:discovery_servers"), 2u);
  EXPECT_EQ(stat("main:discovery_changes"), 0u);
  EXPECT_EQ(write_keys(100, "hup"), 100u);
  EXPECT_EQ(items(2), 0u);
  next.replace(next.find(kSrvName), std::string(kSrvName).size(), "_other._tcp.mc.test");
  dir_.write("memshard-0.yml", next);
  ms_[0]->process().signal(SIGHUP);
  ASSERT_TRUE(wait_for("config_generation", 3)) << log();
  EXPECT_EQ(stat("main:discovery_servers"), 1u);
  EXPECT_EQ(write_keys(100, "other"), 100u);
  EXPECT_EQ(items(2), 100u);
  // A new name without records refuses the reload and keeps the servers.
  next.replace(next.find("_other._tcp.mc.test"), 19, "_none._tcp.mc.test");
  dir_.write("memshard-0.yml", next);
  ms_[0]->process().signal(SIGHUP);
  ASSERT_TRUE(wait_for("config_reload_failures", 1)) << log();
  EXPECT_EQ(stat("config_generation"), 3u);
  EXPECT_EQ(stat("main:discovery_servers"), 1u);
}

TEST_F(Discovery, ServersDnsTakesEveryAddress) {
  // Two memcached on one port, on two loopback addresses.
  Memcached a(0, {}, "127.0.0.1");
  Memcached b(a.port(), {}, "127.0.0.3");
  dns_->serve({}, {"127.0.0.1 pool.mc.test", "127.0.0.3 pool.mc.test"});
  const uint16_t port = free_port();
  const std::string conf = dir_.write(
      "memshard-dns.yml", "main:\n  listen: 127.0.0.1:" + std::to_string(port) +
                              "\n  servers_dns: pool.mc.test:" + std::to_string(a.port()) +
                              "\n  discovery_refresh: 300\n  discovery_hold: 0\n  hash: md5\n");
  logs_.push_back(dir_.path() + "/memshard-dns.log");
  ms_.push_back(std::make_unique<Memshard>(
      conf, std::vector<std::string>{"--dns-server", dns_->server(), "-s", "0", "-v", "6"}, port,
      logs_.back()));
  ports_.push_back(port);
  ASSERT_TRUE(reload::wait_ready(port)) << log();
  EXPECT_EQ(stat("main:discovery_servers"), 2u) << log();
  EXPECT_EQ(write_keys(100, "dns"), 100u);
  EXPECT_GT(a.stat("curr_items"), 10u);
  EXPECT_GT(b.stat("curr_items"), 10u);
  // One address goes: with hold 0, at the next lookup.
  dns_->set_hosts({"127.0.0.1 pool.mc.test"});
  ASSERT_TRUE(wait_for("main:discovery_servers", 1)) << log();
  EXPECT_NE(log().find("left: 127.0.0.3:" + std::to_string(a.port())), std::string::npos) << log();
}

TEST_F(Discovery, AStartWithoutRecordsFailsAndSaysWhy) {
  dns_->serve({}, {}, true);
  const std::string conf =
      dir_.write("memshard-none.yml", "main:\n  listen: 127.0.0.1:" + std::to_string(free_port()) +
                                          "\n  servers_srv: " + kSrvName + "\n");
  Process p({memshard_binary(), "-c", conf, "--dns-server", dns_->server(), "-s", "0"},
            dir_.path() + "/none.log");
  EXPECT_NE(p.wait_exit(20s), -1);
  EXPECT_NE(read_file(dir_.path() + "/none.log").find("a pool needs at least one server"),
            std::string::npos)
      << read_file(dir_.path() + "/none.log");
}

// Three instances in front of the same servers, each request through a
// random one, every read checked against the versions acknowledged before
// it was sent: a server joins through DNS, then leaves, and the instances,
// which look the name up on the same grid and switch at the same moment
// (reload_warmup makes the change a fleet switch), read nothing stale and
// lose nothing.
TEST_F(Discovery, ThreeInstancesSwitchTogether) {
  servers(4);
  dns_->serve(srvs({0, 1, 2}), hosts());
  const std::vector<std::string> directives = {"discovery_refresh: 2000", "discovery_hold: 2000",
                                               "reload_warmup: 60000"};
  for (size_t i = 0; i < 3; ++i) start(directives, i);
  reload::VersionLoad load(ports_, 4, 50, 4, 62);
  load.start();
  const auto warm = Clock::now() + 10s;
  while (load.writes() < 400 && Clock::now() < warm) std::this_thread::sleep_for(10ms);

  const auto judge = [&](uint64_t switches) {
    for (size_t i = 0; i < 3; ++i) {
      ASSERT_TRUE(wait_for("main:switches", switches, 30s, i)) << i << "\n" << log(i);
    }
    const uint64_t reads = load.reads();
    const auto until = Clock::now() + 10s;
    while (load.reads() < reads + 2000 && Clock::now() < until) std::this_thread::sleep_for(10ms);
  };
  dns_->serve(srvs({0, 1, 2, 3}), hosts());
  judge(1);
  for (size_t i = 0; i < 3; ++i) {
    EXPECT_EQ(stat("main:discovery_servers", i), 4u) << i;
    EXPECT_EQ(stat("main:switch_late_ms", i), 0u) << i << "\n" << log(i);
  }
  // The same moment on every instance.
  const uint64_t at = stat("main:switch_at", 0);
  EXPECT_EQ(stat("main:switch_at", 1), at);
  EXPECT_EQ(stat("main:switch_at", 2), at);
  EXPECT_GT(items(3), 0u);
  dns_->serve(srvs({0, 1, 2}), hosts());
  judge(2);
  load.stop();
  for (size_t i = 0; i < 3; ++i) EXPECT_EQ(stat("main:discovery_servers", i), 3u) << i;
  std::cout << "three instances, a join and a leave through DNS: " << load.summary() << "\n";
  EXPECT_EQ(load.stale(), 0u) << load.summary();
  EXPECT_EQ(load.lost(), 0u) << load.summary();
  EXPECT_EQ(load.errors(), 0u) << load.summary();
  EXPECT_GT(load.reads(), 4000u);
}

// conf/examples/kubernetes-discovery.yaml: the ConfigMap's pool looks up
// the SRV records the headless Service publishes, and memshard started on
// it (on another port) finds the StatefulSet's pods through a DNS server
// that answers as the cluster's would.
TEST(KubernetesDiscoveryExample, TheSidecarFollowsTheHeadlessServicesRecords) {
  if (dnsmasq_binary().empty()) GTEST_SKIP() << "dnsmasq is not installed (dnsmasq-base)";
  const std::string file = MEMSHARD_EXAMPLES_DIR "/kubernetes-discovery.yaml";
  std::map<std::string, YAML::Node> objects;
  for (const YAML::Node& d : YAML::LoadAll(read_file(file))) {
    objects[d["kind"].as<std::string>()] = d;
  }
  ASSERT_TRUE(objects.contains("Service") && objects.contains("StatefulSet") &&
              objects.contains("ConfigMap") && objects.contains("Deployment"));
  const YAML::Node svc = objects["Service"];
  EXPECT_EQ(svc["spec"]["clusterIP"].as<std::string>(), "None") << "the Service must be headless";
  const std::string service = svc["metadata"]["name"].as<std::string>();
  EXPECT_EQ(objects["StatefulSet"]["spec"]["serviceName"].as<std::string>(), service);
  const std::string port_name = svc["spec"]["ports"][0]["name"].as<std::string>();
  const std::string srv_name = "_" + port_name + "._tcp." + service + ".default.svc.cluster.local";
  std::string yaml = objects["ConfigMap"]["data"]["memshard.yml"].as<std::string>();
  const conf::LoadResult loaded = conf::parse_config(yaml, "memshard.yml");
  ASSERT_TRUE(loaded.errors.empty()) << loaded.errors.front().to_string();
  ASSERT_EQ(loaded.config->pools.size(), 1u);
  const conf::PoolConfig& pool = loaded.config->pools.front();
  EXPECT_EQ(pool.discovery.kind, conf::DiscoveryConfig::Kind::srv);
  EXPECT_EQ(pool.discovery.name, srv_name) << "the records the Service publishes";
  EXPECT_GT(pool.reload_warmup_ms, 0) << "a fleet of sidecars switches together";
  // The sidecar reads the ConfigMap where it is mounted.
  bool mounted = false;
  for (const YAML::Node& c : objects["Deployment"]["spec"]["template"]["spec"]["initContainers"]) {
    if (c["name"].as<std::string>() != "memshard") continue;
    for (const YAML::Node& a : c["args"])
      mounted = mounted || a.as<std::string>() == "/etc/memshard/memshard.yml";
  }
  EXPECT_TRUE(mounted);

  // Three pods, as the cluster's DNS would list them.
  TempDir dir;
  Dns dns(dir, "cluster.local", srv_name);
  std::vector<std::unique_ptr<Memcached>> pods;
  std::vector<Srv> records;
  std::vector<std::string> hosts;
  for (int i = 0; i < 3; ++i) {
    pods.push_back(std::make_unique<Memcached>());
    const std::string name =
        service + "-" + std::to_string(i) + "." + service + ".default.svc.cluster.local";
    records.push_back(Srv{name, pods.back()->port(), 33});
    hosts.push_back("127.0.0.1 " + name);
  }
  dns.serve(records, hosts);
  const uint16_t port = free_port();
  const size_t at = yaml.find("127.0.0.1:22122");
  ASSERT_NE(at, std::string::npos);
  yaml.replace(at, 15, "127.0.0.1:" + std::to_string(port));
  const std::string conf = dir.write("memshard.yml", yaml);
  Memshard ms(conf, {"--dns-server", dns.server(), "-s", "0"}, port, dir.path() + "/ms.log");
  ASSERT_TRUE(reload::wait_ready(port)) << read_file(dir.path() + "/ms.log");
  EXPECT_EQ(stat_of(proxy_stats(port), "cache:discovery_servers"), 3u)
      << read_file(dir.path() + "/ms.log");
}

}  // namespace
}  // namespace memshard::testing
