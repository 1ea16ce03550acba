// The deployment examples in conf/examples: the systemd unit (systemd
// accepts it, its command lines are memshard's options, reload checks the
// file then sends SIGHUP, and the whole cycle works on a real memshard) and
// the Kubernetes sidecar (valid YAML; the sidecar reads the ConfigMap's
// mounted file with --watch; the ConfigMap's config is valid and names the
// StatefulSet's pods through the headless Service).
#include <gtest/gtest.h>
#include <sys/wait.h>
#include <yaml-cpp/yaml.h>

#include <csignal>
#include <regex>
#include <set>

#include "ops_util.h"

namespace memshard::testing::ops {
namespace {

const std::string kExamples = MEMSHARD_EXAMPLES_DIR;
const std::string kUnit = kExamples + "/memshard.service";
const std::string kSidecar = kExamples + "/kubernetes-sidecar.yaml";

// ------------------------------------------------------------ systemd unit

// section -> key -> values (in order; a key may repeat).
using Unit = std::map<std::string, std::map<std::string, std::vector<std::string>>>;

Unit parse_unit(const std::string& text) {
  Unit unit;
  std::string section, pending;
  for (std::string line : lines_of(text)) {
    if (!pending.empty()) {
      line = pending + " " +
             line.substr(line.find_first_not_of(" \t") == std::string::npos
                             ? line.size()
                             : line.find_first_not_of(" \t"));
      pending.clear();
    }
    size_t first = line.find_first_not_of(" \t");
    if (first == std::string::npos || line[first] == '#' || line[first] == ';') continue;
    if (line.back() == '\\') {
      pending = line.substr(0, line.size() - 1);
      while (!pending.empty() && pending.back() == ' ') pending.pop_back();
      continue;
    }
    if (line[first] == '[') {
      section = line.substr(first + 1, line.find(']') - first - 1);
      continue;
    }
    size_t eq = line.find('=');
    if (eq == std::string::npos) continue;
    unit[section][line.substr(first, eq - first)].push_back(line.substr(eq + 1));
  }
  return unit;
}

std::vector<std::string> words(const std::string& command) {
  std::istringstream s(command);
  std::vector<std::string> out;
  for (std::string w; s >> w;) out.push_back(w);
  return out;
}

// The value following `option` (any of its spellings) in argv, or "".
std::string option_value(const std::vector<std::string>& argv,
                         const std::set<std::string>& option) {
  for (size_t i = 0; i + 1 < argv.size(); ++i) {
    if (option.contains(argv[i])) return argv[i + 1];
  }
  return "";
}

const std::set<std::string> kConfOption = {"-c", "--conf-file"};

// argv with the binary replaced by the one under test and the config path
// by `config`.
std::vector<std::string> localize(std::vector<std::string> argv, const std::string& config) {
  argv[0] = memshard_binary();
  for (size_t i = 0; i + 1 < argv.size(); ++i) {
    if (kConfOption.contains(argv[i])) argv[i + 1] = config;
  }
  return argv;
}

class SystemdUnit : public ::testing::Test {
 protected:
  void SetUp() override {
    text_ = read_file(kUnit);
    ASSERT_FALSE(text_.empty()) << "cannot read " << kUnit;
    unit_ = parse_unit(text_);
    ASSERT_TRUE(unit_.contains("Service"));
    ASSERT_EQ(unit_["Service"]["ExecStart"].size(), 1u);
    exec_start_ = words(unit_["Service"]["ExecStart"][0]);
    ASSERT_GE(exec_start_.size(), 1u);
    port_ = free_port();
    PoolSpec pool{"alpha", "127.0.0.1:" + std::to_string(port_), {}, {mc_.address() + ":1"}};
    config_ = dir_.write("memshard.yml", config_yaml({pool}));
  }

  std::string text_;
  Unit unit_;
  std::vector<std::string> exec_start_;
  Memcached mc_;
  TempDir dir_;
  uint16_t port_ = 0;
  std::string config_;
};

TEST_F(SystemdUnit, SystemdAnalyzeVerifyAcceptsIt) {
  if (run_command({"systemd-analyze", "--version"}, {}, 20s).exit_code != 0) {
    GTEST_SKIP() << "systemd-analyze is not installed";
  }
  // verify checks that the commands exist: point them at the binary under
  // test and a real config.
  const std::string binary = words(unit_["Service"]["ExecStart"][0])[0];
  const std::string conf = option_value(exec_start_, kConfOption);
  std::string text = std::regex_replace(text_, std::regex(binary), memshard_binary());
  text = std::regex_replace(text, std::regex(conf), config_);
  const std::string copy = dir_.write("memshard.service", text);
  CommandResult r = run_command({"systemd-analyze", "verify", "--man=no", copy}, {}, 60s);
  ASSERT_FALSE(r.timed_out);
  EXPECT_EQ(r.exit_code, 0) << r.out << r.err;
  EXPECT_EQ(r.out + r.err, "") << "systemd-analyze verify has remarks";
}

TEST_F(SystemdUnit, ReloadChecksTheFileThenSendsSighup) {
  const auto& reload = unit_["Service"]["ExecReload"];
  ASSERT_FALSE(reload.empty()) << "no ExecReload";
  EXPECT_TRUE(std::regex_search(
      reload.back(), std::regex(R"(\bkill\s+(-HUP|-SIGHUP|-s\s+(SIG)?HUP|-1)\s+\$MAINPID\b)")))
      << "the last ExecReload does not send SIGHUP to $MAINPID: " << reload.back();
  for (size_t i = 0; i + 1 < reload.size(); ++i) {
    std::vector<std::string> check = words(reload[i]);
    EXPECT_TRUE(std::find(check.begin(), check.end(), "--test-conf") != check.end() ||
                std::find(check.begin(), check.end(), "-t") != check.end())
        << reload[i];
    EXPECT_EQ(option_value(check, kConfOption), option_value(exec_start_, kConfOption));
  }
}

TEST_F(SystemdUnit, CommandLinesAreMemshardOptions) {
  const std::string type =
      unit_["Service"]["Type"].empty() ? "simple" : unit_["Service"]["Type"][0];
  const bool daemonizes =
      std::find(exec_start_.begin(), exec_start_.end(), "-d") != exec_start_.end() ||
      std::find(exec_start_.begin(), exec_start_.end(), "--daemonize") != exec_start_.end();
  EXPECT_EQ(daemonizes, type == "forking")
      << "Type=" << type << " with ExecStart " << unit_["Service"]["ExecStart"][0];
  EXPECT_FALSE(option_value(exec_start_, kConfOption).empty()) << "ExecStart names no config";

  // CLI11 refuses options it does not know: with --test-conf added, every
  // command line must parse and pass on a valid file.
  std::vector<std::string> lines = unit_["Service"]["ExecStart"];
  for (const char* key : {"ExecStartPre", "ExecReload"}) {
    for (const auto& l : unit_["Service"][key]) lines.push_back(l);
  }
  for (const std::string& line : lines) {
    std::vector<std::string> argv = words(line);
    if (argv.empty() || argv[0].find("memshard") == std::string::npos) continue;
    argv = localize(argv, config_);
    argv.push_back("--test-conf");
    CommandResult r = run_command(argv, {}, 20s);
    EXPECT_EQ(r.exit_code, 0) << line << "\n" << r.out << r.err;
  }

  // Stopping waits longer than memshard's drain.
  std::string drain = option_value(exec_start_, {"--drain-timeout"});
  const double drain_s = drain.empty() ? 10.0 : std::stod(drain) / 1000.0;
  ASSERT_FALSE(unit_["Service"]["TimeoutStopSec"].empty());
  EXPECT_GT(std::stod(unit_["Service"]["TimeoutStopSec"][0]), drain_s);
}

TEST_F(SystemdUnit, StartReloadStopCycleOnARealMemshard) {
  // What systemd would do, by hand: ExecStart (stats port moved to a free
  // one), ExecReload with $MAINPID, then KillSignal.
  std::vector<std::string> argv = localize(exec_start_, config_);
  const uint16_t stats = free_port();
  for (size_t i = 0; i + 1 < argv.size(); ++i) {
    if (argv[i] == "--stats-port" || argv[i] == "-s") argv[i + 1] = std::to_string(stats);
  }
  Process p(argv, dir_.path() + "/journal.log");
  ASSERT_TRUE(wait_listening(port_)) << read_file(dir_.path() + "/journal.log");
  ASSERT_TRUE(wait_listening(stats));

  for (const std::string& line : unit_["Service"]["ExecReload"]) {
    std::string command =
        std::regex_replace(line, std::regex(R"(\$MAINPID)"), std::to_string(p.pid()));
    std::vector<std::string> reload = words(command);
    if (reload[0].find("memshard") != std::string::npos) reload = localize(reload, config_);
    CommandResult r = run_command(reload, {}, 20s);
    EXPECT_EQ(r.exit_code, 0) << command << "\n" << r.out << r.err;
  }
  EXPECT_TRUE(wait_until([&] {
    std::optional<Json> j = fetch_stats_json(stats);
    return j && j->get("config_reloads") != nullptr && j->get("config_reloads")->u64() == 1u;
  })) << "systemctl reload did not reload memshard";

  RawClient c(port_);
  EXPECT_EQ(c.roundtrip(set_command("unit-key", "v")), "STORED\r\n");

  const std::string kill_signal =
      unit_["Service"]["KillSignal"].empty() ? "SIGTERM" : unit_["Service"]["KillSignal"][0];
  ASSERT_EQ(kill_signal, "SIGTERM");
  p.signal(SIGTERM);
  const double stop_s = std::stod(unit_["Service"]["TimeoutStopSec"][0]);
  int status = p.wait_exit(std::chrono::milliseconds(static_cast<int64_t>(stop_s * 1000)));
  EXPECT_TRUE(status != -1 && WIFEXITED(status) && WEXITSTATUS(status) == 0)
      << "status " << status << "\n"
      << read_file(dir_.path() + "/journal.log");
}

// ------------------------------------------------------ Kubernetes sidecar

// yaml-cpp's LoadAll can loop forever on some malformed input: split the
// stream on document markers and load each document alone.
std::vector<YAML::Node> load_documents(const std::string& text) {
  std::vector<YAML::Node> docs;
  std::string current;
  auto flush = [&] {
    if (current.find_first_not_of(" \t\r\n") == std::string::npos) {
      current.clear();
      return;
    }
    YAML::Node n = YAML::Load(current);
    if (!n.IsNull()) docs.push_back(n);
    current.clear();
  };
  for (const std::string& line : lines_of(text)) {
    if (line == "---" || line.rfind("--- ", 0) == 0) {
      flush();
      continue;
    }
    current += line + "\n";
  }
  flush();
  return docs;
}

class KubernetesSidecar : public ::testing::Test {
 protected:
  void SetUp() override {
    const std::string text = read_file(kSidecar);
    ASSERT_FALSE(text.empty()) << "cannot read " << kSidecar;
    try {
      docs_ = load_documents(text);
    } catch (const YAML::Exception& e) {
      FAIL() << kSidecar << " is not YAML: " << e.what();
    }
    for (const YAML::Node& d : docs_) {
      ASSERT_TRUE(d.IsMap());
      ASSERT_TRUE(d["kind"] && d["apiVersion"] && d["metadata"]["name"]) << YAML::Dump(d);
      objects_[d["kind"].as<std::string>()].push_back(d);
    }
  }

  YAML::Node one(const std::string& kind) {
    EXPECT_EQ(objects_[kind].size(), 1u) << "want one " << kind;
    return objects_[kind].empty() ? YAML::Node() : objects_[kind][0];
  }

  // The memshard container of the Deployment (a native sidecar among the
  // initContainers, or an ordinary container).
  YAML::Node memshard_container() {
    YAML::Node spec = one("Deployment")["spec"]["template"]["spec"];
    for (const char* list : {"initContainers", "containers"}) {
      for (const YAML::Node& c : spec[list]) {
        if (c["name"].as<std::string>() == "memshard") return c;
      }
    }
    ADD_FAILURE() << "no container named memshard in the Deployment";
    return YAML::Node();
  }

  std::vector<std::string> memshard_args() {
    std::vector<std::string> args;
    YAML::Node c = memshard_container();
    for (const YAML::Node& a : c["args"]) args.push_back(a.as<std::string>());
    return args;
  }

  std::string configmap_config() {
    YAML::Node cm = one("ConfigMap");
    std::string key = mounted_key();
    if (key.empty() || !cm["data"][key]) return "";
    return cm["data"][key].as<std::string>();
  }

  // The key of the ConfigMap that memshard's -c path points at through a
  // volume mount; "" (with a failure) when the chain is broken.
  std::string mounted_key() {
    const std::string conf = option_value(memshard_args(), kConfOption);
    if (conf.empty()) {
      ADD_FAILURE() << "memshard's args name no config (-c/--conf-file)";
      return "";
    }
    YAML::Node pod = one("Deployment")["spec"]["template"]["spec"];
    const std::string configmap = one("ConfigMap")["metadata"]["name"].as<std::string>();
    for (const YAML::Node& m : memshard_container()["volumeMounts"]) {
      std::string mount = m["mountPath"].as<std::string>();
      if (!mount.ends_with("/")) mount += "/";
      if (!conf.starts_with(mount)) continue;
      EXPECT_FALSE(m["subPath"]) << "a subPath mount never sees ConfigMap updates";
      for (const YAML::Node& v : pod["volumes"]) {
        if (v["name"].as<std::string>() != m["name"].as<std::string>()) continue;
        if (!v["configMap"] || v["configMap"]["name"].as<std::string>() != configmap) {
          ADD_FAILURE() << "volume " << v["name"] << " mounted at " << mount
                        << " is not the ConfigMap " << configmap;
          return "";
        }
        std::string relative = conf.substr(mount.size());
        for (const YAML::Node& item : v["configMap"]["items"]) {
          if (item["path"].as<std::string>() == relative) return item["key"].as<std::string>();
        }
        return relative;
      }
    }
    ADD_FAILURE() << conf << " is under no volume mount of the memshard container";
    return "";
  }

  std::vector<YAML::Node> docs_;
  std::map<std::string, std::vector<YAML::Node>> objects_;
};

TEST_F(KubernetesSidecar, IsYamlWithTheFleetTheConfigAndTheApplication) {
  EXPECT_EQ(objects_["Service"].size(), 1u);
  EXPECT_EQ(objects_["StatefulSet"].size(), 1u);
  EXPECT_EQ(objects_["ConfigMap"].size(), 1u);
  EXPECT_EQ(objects_["Deployment"].size(), 1u);
  YAML::Node svc = one("Service");
  EXPECT_EQ(svc["spec"]["clusterIP"].as<std::string>(), "None") << "the Service must be headless";
  YAML::Node sts = one("StatefulSet");
  EXPECT_EQ(sts["spec"]["serviceName"].as<std::string>(),
            svc["metadata"]["name"].as<std::string>());
  // The Service selects the StatefulSet's pods.
  for (const auto& kv : svc["spec"]["selector"]) {
    YAML::Node label = sts["spec"]["template"]["metadata"]["labels"][kv.first.as<std::string>()];
    ASSERT_TRUE(label) << "the Service selects " << kv.first << ", which the pods lack";
    EXPECT_EQ(label.as<std::string>(), kv.second.as<std::string>());
  }
}

TEST_F(KubernetesSidecar, SidecarWatchesTheConfigMapMount) {
  std::vector<std::string> args = memshard_args();
  EXPECT_NE(std::find(args.begin(), args.end(), "--watch"), args.end())
      << "memshard must run with --watch to follow ConfigMap updates";
  EXPECT_NE(mounted_key(), "");
  EXPECT_FALSE(configmap_config().empty()) << "the -c file is not a key of the ConfigMap";
  // Never daemonize in a container.
  EXPECT_EQ(std::find(args.begin(), args.end(), "-d"), args.end());
  EXPECT_EQ(std::find(args.begin(), args.end(), "--daemonize"), args.end());
}

TEST_F(KubernetesSidecar, ArgsAreMemshardOptions) {
  const std::string config = configmap_config();
  ASSERT_FALSE(config.empty());
  TempDir dir;
  std::vector<std::string> argv = {"memshard"};
  for (const auto& a : memshard_args()) argv.push_back(a);
  argv = localize(argv, dir.write("memshard.yml", config));
  argv.push_back("--test-conf");
  CommandResult r = run_command(argv, {}, 20s);
  EXPECT_EQ(r.exit_code, 0) << r.out << r.err;
}

TEST_F(KubernetesSidecar, ConfigMapConfigIsValidAndNamesTheStatefulSetPods) {
  const std::string config = configmap_config();
  ASSERT_FALSE(config.empty());
  TempDir dir;
  const std::string path = dir.write("memshard.yml", config);
  CommandResult t = run_command({memshard_binary(), "--test-conf", "--conf-file", path}, {}, 20s);
  EXPECT_EQ(t.exit_code, 0) << t.out << t.err;

  YAML::Node sts = one("StatefulSet");
  const std::string sts_name = sts["metadata"]["name"].as<std::string>();
  const std::string service = sts["spec"]["serviceName"].as<std::string>();
  const int replicas = sts["spec"]["replicas"].as<int>();
  int container_port = 0;
  for (const YAML::Node& port : sts["spec"]["template"]["spec"]["containers"][0]["ports"]) {
    container_port = port["containerPort"].as<int>();
  }

  YAML::Node pools = YAML::Load(config);
  ASSERT_TRUE(pools.IsMap());
  ASSERT_EQ(pools.size(), 1u);
  YAML::Node pool = pools.begin()->second;
  // A sidecar serves its own pod only.
  EXPECT_TRUE(pool["listen"].as<std::string>().starts_with("127.0.0.1:"))
      << pool["listen"].as<std::string>();
  std::vector<std::string> hosts;
  for (const YAML::Node& s : pool["servers"]) {
    // "host:port:weight [name]"
    std::vector<std::string> w = words(s.as<std::string>());
    std::string address = w[0];
    size_t weight_colon = address.rfind(':');
    size_t port_colon = address.rfind(':', weight_colon - 1);
    hosts.push_back(address.substr(0, port_colon));
    EXPECT_EQ(address.substr(port_colon + 1, weight_colon - port_colon - 1),
              std::to_string(container_port));
    // A stable name per shard keeps keys in place when addresses change.
    EXPECT_EQ(w.size(), 2u) << "server without a name: " << s.as<std::string>();
  }
  ASSERT_EQ(hosts.size(), static_cast<size_t>(replicas)) << "one server per StatefulSet replica";
  for (int i = 0; i < replicas; ++i) {
    const std::string pod_dns = sts_name + "-" + std::to_string(i) + "." + service;
    EXPECT_TRUE(hosts[static_cast<size_t>(i)] == pod_dns ||
                hosts[static_cast<size_t>(i)].starts_with(pod_dns + "."))
        << "server " << i << " is " << hosts[static_cast<size_t>(i)] << ", not pod " << pod_dns;
  }
}

TEST_F(KubernetesSidecar, StatsPortIsScrapableAndProbed) {
  std::vector<std::string> args = memshard_args();
  const std::string port = option_value(args, {"-s", "--stats-port"});
  const std::string addr = option_value(args, {"-a", "--stats-addr"});
  EXPECT_EQ(addr, "0.0.0.0") << "Prometheus scrapes the pod IP, not the pod's loopback";
  ASSERT_FALSE(port.empty());
  YAML::Node c = memshard_container();
  std::map<std::string, int> named;
  for (const YAML::Node& p : c["ports"])
    named[p["name"].as<std::string>()] = p["containerPort"].as<int>();
  EXPECT_EQ(std::to_string(named["stats"]), port);
  YAML::Node annotations = one("Deployment")["spec"]["template"]["metadata"]["annotations"];
  if (annotations && annotations["prometheus.io/port"]) {
    EXPECT_EQ(annotations["prometheus.io/port"].as<std::string>(), port);
    EXPECT_EQ(annotations["prometheus.io/path"].as<std::string>(), "/metrics");
  }
  for (const char* probe : {"startupProbe", "livenessProbe", "readinessProbe"}) {
    if (!c[probe]) continue;
    // The pool listens on the pod's loopback, which the kubelet cannot
    // reach: probes go to the stats port.
    ASSERT_TRUE(c[probe]["httpGet"]) << probe;
    YAML::Node p = c[probe]["httpGet"]["port"];
    EXPECT_TRUE(p.as<std::string>() == "stats" || p.as<std::string>() == port) << probe;
  }
  // The stats listener answers the probe's request.
  Memcached mc;
  TempDir dir;
  const uint16_t listen = free_port();
  PoolSpec pool{"cache", "127.0.0.1:" + std::to_string(listen), {}, {mc.address() + ":1"}};
  std::unique_ptr<Proxy> proxy = start_proxy(dir, config_yaml({pool}), listen);
  HttpResponse h =
      http_get(proxy->stats_port, c["livenessProbe"]["httpGet"]["path"].as<std::string>());
  EXPECT_EQ(h.status, 200) << h.raw;
}

}  // namespace
}  // namespace memshard::testing::ops
