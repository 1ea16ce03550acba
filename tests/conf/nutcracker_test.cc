// Runs the real nutcracker 0.5 (`nutcracker -t -c FILE`) on the examples and
// on a table of snippets, to prove memshard accepts what twemproxy accepts
// and to pin down, case by case, where memshard is deliberately stricter.
#include <gtest/gtest.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdlib>
#include <fstream>
#include <sstream>

#include "conf_test_util.h"

namespace memshard::conf {
namespace {

using testing::example;

constexpr const char* kNutcracker = "/usr/sbin/nutcracker";

std::string read(const std::string& path) {
  std::ifstream in(path);
  std::stringstream s;
  s << in.rdbuf();
  return s.str();
}

// nutcracker's verdict on `text`: true when `-t` calls the syntax ok.
bool nutcracker_accepts(const std::string& text) {
  const std::string path =
      ::testing::TempDir() + "nutcracker_test_" + std::to_string(getpid()) + ".yml";
  std::ofstream(path) << text;
  const std::string cmd = std::string(kNutcracker) + " -t -c '" + path + "' >/dev/null 2>&1";
  const int status = std::system(cmd.c_str());
  std::remove(path.c_str());
  return WIFEXITED(status) && WEXITSTATUS(status) == 0;
}

bool memshard_accepts(const std::string& text) {
  return testing::parse(text).config.has_value();
}

class ConfNutcracker : public ::testing::Test {
 protected:
  void SetUp() override {
    if (access(kNutcracker, X_OK) != 0) GTEST_SKIP() << kNutcracker << " is not installed";
  }
};

TEST_F(ConfNutcracker, AcceptsThePlainExamples) {
  for (const char* name : {"demo.yml", "twemproxy-pools.yml", "production-named.yml"}) {
    const std::string text = read(example(name));
    EXPECT_TRUE(nutcracker_accepts(text)) << name;
    EXPECT_TRUE(memshard_accepts(text)) << name;
  }
}

TEST_F(ConfNutcracker, AcceptsTheReferenceWithoutMemshardExtensions) {
  const std::string full = read(example("nutcracker-reference.yml"));
  // memshard's extensions are unknown to it.
  EXPECT_FALSE(nutcracker_accepts(full));
  std::istringstream lines(full);
  std::string stripped, line;
  while (std::getline(lines, line)) {
    if (line.rfind("  ketama_compat:", 0) == 0 || line.rfind("  item_size_max:", 0) == 0 ||
        line.rfind("  dns_refresh:", 0) == 0 || line.rfind("  replicas:", 0) == 0 ||
        line.rfind("  write_policy:", 0) == 0 || line.rfind("  read_failover_on_miss:", 0) == 0 ||
        line.rfind("  read_repair:", 0) == 0 || line.rfind("  reload_warmup:", 0) == 0 ||
        line.rfind("  reload_migrate_rate:", 0) == 0 || line.rfind("  reload_switch_", 0) == 0 ||
        line.rfind("  hot_key_", 0) == 0 || line.rfind("  server_queue_limit:", 0) == 0)
      continue;
    stripped += line + "\n";
  }
  EXPECT_TRUE(nutcracker_accepts(stripped));
  EXPECT_TRUE(memshard_accepts(stripped));
}

struct Case {
  const char* what;
  std::string yaml;
  bool nutcracker;  // nutcracker 0.5's verdict, checked by running it
  bool memshard;
};

std::string with(const std::string& directives, const std::string& servers = "   - h:11211:1\n") {
  return "a:\n  listen: 127.0.0.1:22121\n" + directives + "  servers:\n" + servers;
}

const std::string kPoolB = "b:\n  listen: 127.0.0.1:22122\n  servers:\n   - h:11211:1\n";

std::vector<Case> cases() {
  return {
      // Both accept.
      {"named servers", with("", "   - h:11211:1 x\n   - h:11212:1 y\n"), true, true},
      {"ipv6 server", with("", "   - ::1:11211:1\n"), true, true},
      {"unix listen", "a:\n  listen: /tmp/ms-t.sock 0600\n  servers:\n   - h:1:1\n", true, true},
      {"unix server", with("", "   - /tmp/mc.sock:1\n"), true, true},
      {"timeout 0", with("  timeout: 0\n"), true, true},
      {"quoted number", with("  timeout: \"400\"\n"), true, true},
      {"redis false", with("  redis: false\n  redis_db: 2\n"), true, true},
      {"tcpkeepalive", with("  tcpkeepalive: true\n  client_connections: 5\n"), true, true},
      {"same host, two ports", with("", "   - h:11211:1\n   - h:11212:1\n"), true, true},
      // Both refuse.
      {"zero weight", with("", "   - h:11211:0\n"), false, false},
      {"no weight", with("", "   - h:11211\n"), false, false},
      {"port 0", with("", "   - h:0:1\n"), false, false},
      {"port 65536", with("", "   - h:65536:1\n"), false, false},
      {"unix path with colon", with("", "   - /tmp/a:b:1\n"), false, false},
      {"same name", with("", "   - h:1:1 x\n   - g:2:1 x\n"), false, false},
      {"same unnamed server", with("", "   - h:11211:1\n   - h:11211:2\n"), false, false},
      {"name = derived name", with("", "   - h:11211:1\n   - g:11211:1 h\n"), false, false},
      {"no listen", "a:\n  servers:\n   - h:1:1\n", false, false},
      {"listen without port", "a:\n  listen: 127.0.0.1\n  servers:\n   - h:1:1\n", false, false},
      {"no servers", "a:\n  listen: 127.0.0.1:22121\n", false, false},
      {"server_connections 0", with("  server_connections: 0\n"), false, false},
      {"boolean yes", with("  preconnect: yes\n"), false, false},
      {"negative", with("  timeout: -1\n"), false, false},
      {"unknown directive", with("  hashes: md5\n"), false, false},
      {"duplicate directive", with("  hash: md5\n  hash: md5\n"), false, false},
      {"bad hash", with("  hash: sha1\n"), false, false},
      {"bad distribution", with("  distribution: vnode\n"), false, false},
      {"hash_tag of 3", with("  hash_tag: \"{{}\"\n"), false, false},
      {"perm above 0777", "a:\n  listen: /tmp/s.sock 1777\n  servers:\n   - h:1:1\n", false, false},
      {"redis_auth", with("  redis_auth: pw\n"), false, false},
      {"same listen", with("") + "b:\n  listen: 127.0.0.1:22121\n  servers:\n   - h:1:1\n", false,
       false},
      {"same pool name", with("") + "a:\n  listen: 127.0.0.1:22122\n  servers:\n   - h:1:1\n",
       false, false},
      {"two documents", with("") + "---\n" + kPoolB, false, false},
      {"empty file", "", false, false},
      {"pool not a map", "a: 1\n", false, false},
      // memshard refuses what nutcracker lets through, each for a reason.
      {"redis pool (memcached only)", with("  redis: true\n"), true, false},
      {"same address, two names (one memcached twice)",
       with("", "   - h:11211:1 x\n   - h:11211:1 y\n"), true, false},
      {"number that overflows int (nutcracker wraps it)", with("  backlog: 99999999999\n"), true,
       false},
      {"non-octal perm (nutcracker takes 0)",
       "a:\n  listen: /tmp/s.sock 0999\n  servers:\n   - h:1:1\n", true, false},
      {"bracketed IPv6 server (never resolves)", with("", "   - \"[::1]:11211:1\"\n"), true, false},
      {"empty server host", with("", "   - :11211:1\n"), true, false},
      {"port with leading zero (ring name ambiguity)", with("", "   - h:011212:1\n"), true, false},
      {"one socket path, two pools",
       "a:\n  listen: /tmp/s.sock 0600\n  servers:\n   - h:1:1\n"
       "b:\n  listen: /tmp/s.sock 0666\n  servers:\n   - h:1:1\n",
       true, false},
      // memshard accepts what nutcracker refuses: its extensions, and YAML
      // that nutcracker's token filter rejects but means the same.
      {"ketama_compat", with("  ketama_compat: libketama\n"), false, true},
      {"item_size_max", with("  item_size_max: 2097152\n"), false, true},
      {"flow-style list", "a:\n  listen: 127.0.0.1:22121\n  servers: [h:1:1]\n", false, true},
      {"document start marker", "---\n" + kPoolB, false, true},
  };
}

TEST_F(ConfNutcracker, AgreesOrDivergesAsDocumented) {
  for (const Case& c : cases()) {
    EXPECT_EQ(nutcracker_accepts(c.yaml), c.nutcracker) << "nutcracker on: " << c.what;
    EXPECT_EQ(memshard_accepts(c.yaml), c.memshard) << "memshard on: " << c.what;
  }
}

}  // namespace
}  // namespace memshard::conf
