// ServerHealth (proxy/runtime/health.h) on a real MainLoop: workers'
// reports come from other threads, probes are real `version` requests to
// scripted servers on loopback that answer, stay silent, answer ERROR or
// refuse the connection. The loop runs on the test's thread, bounded by
// run_until; nothing asserts how long anything took.
#include "proxy/runtime/health.h"

#include <gtest/gtest.h>

#include <csignal>
#include <memory>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "bounded_wait.h"
#include "conf/config.h"
#include "proxy/routes/topology.h"
#include "proxy/runtime/main_loop.h"
#include "proxy/support/clock.h"
#include "scripted_server.h"
#include "test_topology.h"

namespace memshard::proxy {
namespace {

using test::Answer;
using test::RefusingPort;
using test::ScriptedServer;
using test::topology_of;

constexpr int kKeys = 500;

Answer answers_version(const std::string& line) {
  return line == "version" ? Answer("VERSION 1.6.99\r\n") : Answer("ERROR\r\n");
}
Answer stays_silent(const std::string&) {
  return {};
}
Answer answers_error(const std::string&) {
  return "ERROR\r\n";
}

// A pool "alpha" over `servers`, with ejection on: probes every 50 ms,
// each waiting at most `timeout_ms` for its answer.
std::string alpha_yaml(const std::vector<std::string>& servers, const std::string& extra = "",
                       int timeout_ms = 300) {
  std::string text =
      "alpha:\n"
      "  listen: 127.0.0.1:22199\n"
      "  auto_eject_hosts: true\n"
      "  server_retry_timeout: 50\n"
      "  timeout: " +
      std::to_string(timeout_ms) + "\n" + extra + "  servers:\n";
  for (const std::string& s : servers) text += "   - " + s + ":1\n";
  return text;
}

// How many of kKeys keys the pool's ring gives to server `index`.
int keys_on(const Pool& pool, size_t index) {
  int n = 0;
  for (int i = 0; i < kKeys; ++i) {
    // The number first: fnv1a_64 puts keys that differ only at their end on
    // nearby points, and "key:0".."key:N" could all fall to one server.
    if (pool.ring.lookup(std::to_string(i) + ":key") == index) ++n;
  }
  return n;
}

class HealthTest : public ::testing::Test {
 protected:
  HealthTest() { std::signal(SIGPIPE, SIG_IGN); }
  ~HealthTest() override {
    // A readmitted probe is freed on the loop's next turn: let it have one.
    event_base_loop(base_, EVLOOP_NONBLOCK);
    health_.reset();
    loop_.reset();
    event_base_free(base_);
  }

  void install(std::shared_ptr<const Topology> t) {
    topology_ = std::move(t);
    health_->set_topology(topology_);
  }
  bool run_until(const std::function<bool()>& done) {
    return test::run_until(
        base_, [this] { loop_->run(); }, done);
  }
  // As a worker does: from a thread of its own.
  void report_from_a_worker(const std::string& pool, const std::string& identity) {
    std::thread([&] { health_->report_failing(pool, identity); }).join();
  }
  bool ejected(const std::string& identity, const std::string& pool = "alpha") const {
    return health_->ejected_at(pool, identity) != 0;
  }

  event_base* base_ = event_base_new();
  std::unique_ptr<MainLoop> loop_ = std::make_unique<MainLoop>(base_);
  int changes_ = 0;  // on_change calls, on the loop's thread
  std::unique_ptr<ServerHealth> health_ =
      std::make_unique<ServerHealth>(*loop_, [this] { ++changes_; });
  std::shared_ptr<const Topology> topology_;
};

TEST_F(HealthTest, ReportedServerLeavesTheRingAndComesBackOnlyWhenAProbeIsAnswered) {
  ScriptedServer dead(stays_silent), live(answers_version);
  install(topology_of(alpha_yaml({dead.address(), live.address()})));
  ASSERT_GT(keys_on(topology_->pools[0], 0), 0) << "the test needs keys on the server it ejects";

  report_from_a_worker("alpha", dead.address());
  ASSERT_TRUE(run_until([&] { return changes_ == 1; }));
  EXPECT_TRUE(ejected(dead.address()));
  EXPECT_FALSE(ejected(live.address()));
  EXPECT_EQ(health_->ejections(), 1u);
  EXPECT_EQ(health_->pool_ejections("alpha"), 1u);
  std::shared_ptr<const Topology> out = health_->with_ejections();
  ASSERT_NE(out, topology_);
  EXPECT_EQ(keys_on(out->pools[0], 0), 0) << "an ejected server still gets keys";
  EXPECT_EQ(keys_on(out->pools[0], 1), kKeys);
  // The topology the workers had is left as it was.
  EXPECT_GT(keys_on(topology_->pools[0], 0), 0);

  // Unanswered probes (each times out) keep it out, and are sent again.
  ASSERT_TRUE(run_until([&] { return dead.lines() >= 3 || health_->readmissions() > 0; }))
      << "probes were not repeated";
  EXPECT_TRUE(ejected(dead.address()));
  EXPECT_EQ(health_->readmissions(), 0u);
  EXPECT_EQ(changes_, 1);

  dead.set_script(answers_version);
  ASSERT_TRUE(run_until([&] { return health_->readmissions() == 1; }));
  EXPECT_FALSE(ejected(dead.address()));
  EXPECT_EQ(changes_, 2);
  EXPECT_EQ(health_->with_ejections(), topology_);
  EXPECT_EQ(health_->ejections(), 1u);
}

TEST_F(HealthTest, AProbeAnsweredWithAnErrorIsNoSignOfHealth) {
  ScriptedServer server(answers_error), other(answers_version);
  install(topology_of(alpha_yaml({server.address(), other.address()})));
  report_from_a_worker("alpha", server.address());
  // A second probe comes only if the first left the server out.
  ASSERT_TRUE(run_until([&] { return server.lines() >= 2 || health_->readmissions() > 0; }));
  EXPECT_TRUE(ejected(server.address()));
  EXPECT_EQ(health_->readmissions(), 0u);
}

TEST_F(HealthTest, ReportsOfOneServerFromManyWorkersEjectItOnce) {
  ScriptedServer a(stays_silent), b(stays_silent), c(answers_version);
  // Two of three out: past the default cap (auto_eject_max 50%).
  install(topology_of(
      alpha_yaml({a.address(), b.address(), c.address()}, "  auto_eject_max: 100%\n")));
  std::vector<std::thread> workers;
  for (int i = 0; i < 4; ++i) {
    workers.emplace_back([&] { health_->report_failing("alpha", a.address()); });
  }
  for (std::thread& w : workers) w.join();
  // Reports are handled in the order they came: once b is out, every
  // report of a has been handled too.
  report_from_a_worker("alpha", b.address());
  ASSERT_TRUE(run_until([&] { return ejected(b.address()); }));
  EXPECT_TRUE(ejected(a.address()));
  EXPECT_EQ(health_->ejections(), 2u);
  EXPECT_EQ(health_->pool_ejections("alpha"), 2u);
  EXPECT_EQ(changes_, 2);
}

TEST_F(HealthTest, ReportsThatEjectionDoesNotApplyToAreIgnored) {
  ScriptedServer kept(answers_version), marker(stays_silent), other(answers_version);
  // beta has no auto_eject_hosts.
  install(topology_of(alpha_yaml({marker.address(), other.address()}) +
                      "beta:\n"
                      "  listen: 127.0.0.1:22198\n"
                      "  servers:\n"
                      "   - " +
                      kept.address() + ":1\n"));
  report_from_a_worker("beta", kept.address());
  report_from_a_worker("alpha", "127.0.0.1:1");     // not a server of alpha
  report_from_a_worker("gamma", marker.address());  // no such pool
  report_from_a_worker("alpha", marker.address());
  ASSERT_TRUE(run_until([&] { return ejected(marker.address()); }));
  EXPECT_FALSE(ejected(kept.address(), "beta"));
  EXPECT_EQ(health_->ejections(), 1u);
  EXPECT_EQ(health_->pool_ejections("beta"), 0u);
  EXPECT_EQ(kept.lines(), 0u) << "a server of a pool without ejection was probed";
}

TEST_F(HealthTest, AProbeIsOutWhileItWaitsForItsAnswer) {
  ScriptedServer server(stays_silent), other(answers_version);
  // Probes wait 2 s: long enough to be seen out.
  install(topology_of(alpha_yaml({server.address(), other.address()}, "", 2000)));
  EXPECT_FALSE(health_->probing("alpha", server.address()));
  report_from_a_worker("alpha", server.address());
  ASSERT_TRUE(run_until([&] { return server.lines() >= 1; }));
  EXPECT_TRUE(health_->probing("alpha", server.address()));
  server.set_script(answers_version);
  ASSERT_TRUE(run_until([&] { return health_->readmissions() == 1; }));
  EXPECT_FALSE(health_->probing("alpha", server.address()));
}

TEST_F(HealthTest, AProbeThatCannotConnectAsksWhetherTheNameMoved) {
  RefusingPort refusing;
  ScriptedServer other(answers_version);
  std::vector<std::string> unreachable;
  loop_->on_unreachable = [&](const std::string& pool, const std::string& identity) {
    unreachable.push_back(pool + "/" + identity);
  };
  install(topology_of(alpha_yaml({refusing.address(), other.address()})));
  report_from_a_worker("alpha", refusing.address());
  ASSERT_TRUE(run_until([&] { return unreachable.size() >= 2; })) << "no probe tried to connect";
  EXPECT_EQ(unreachable.front(), "alpha/" + refusing.address());
  EXPECT_TRUE(ejected(refusing.address()));
  EXPECT_EQ(health_->readmissions(), 0u);
}

TEST_F(HealthTest, AReloadThatDropsTheServerForgetsItsEjection) {
  ScriptedServer gone(stays_silent), stays(answers_version);
  install(topology_of(alpha_yaml({gone.address(), stays.address()})));
  report_from_a_worker("alpha", gone.address());
  ASSERT_TRUE(run_until([&] { return ejected(gone.address()); }));

  install(topology_of(alpha_yaml({stays.address()}), topology_.get(), 2));
  EXPECT_FALSE(ejected(gone.address()));
  EXPECT_FALSE(health_->probing("alpha", gone.address()));
  EXPECT_EQ(health_->with_ejections(), topology_);
}

TEST_F(HealthTest, AReloadThatTurnsEjectionOffReadmitsEveryServer) {
  ScriptedServer server(stays_silent), other(answers_version);
  install(topology_of(alpha_yaml({server.address(), other.address()})));
  report_from_a_worker("alpha", server.address());
  ASSERT_TRUE(run_until([&] { return ejected(server.address()); }));

  std::string yaml = alpha_yaml({server.address(), other.address()});
  yaml.replace(yaml.find("auto_eject_hosts: true"), 22, "auto_eject_hosts: false");
  install(topology_of(yaml, topology_.get(), 2));
  EXPECT_FALSE(ejected(server.address()));
  EXPECT_EQ(health_->with_ejections(), topology_);
}

TEST_F(HealthTest, AReplicatedPoolKeepsItsRingAndMarksTheServerDown) {
  ScriptedServer a(stays_silent), b(answers_version), c(answers_version);
  install(topology_of(alpha_yaml({a.address(), b.address(), c.address()}, "  replicas: 2\n")));
  report_from_a_worker("alpha", a.address());
  ASSERT_TRUE(run_until([&] { return ejected(a.address()); }));
  std::shared_ptr<const Topology> out = health_->with_ejections();
  const Pool& pool = out->pools[0];
  EXPECT_EQ(pool.live, (std::vector<bool>{false, true, true}));
  // Every key keeps its preference list: only the copy on a is skipped.
  for (size_t s = 0; s < 3; ++s) EXPECT_EQ(keys_on(pool, s), keys_on(topology_->pools[0], s));
}

// reload_warmup looks moved keys up where the past ring put them: not on
// a server that is ejected now.
TEST_F(HealthTest, AnEjectedServerIsNotLookedUpInAPastRingEither) {
  ScriptedServer kept(stays_silent), added(answers_version);
  const std::string warmup = "  reload_warmup: 60000\n";
  install(topology_of(alpha_yaml({kept.address()}, warmup)));
  // A reload adds a server; the ring before it is kept as the past ring.
  install(topology_of(alpha_yaml({kept.address(), added.address()}, warmup), topology_.get(), 2));
  ASSERT_EQ(topology_->pools[0].past.size(), 1u);
  std::shared_ptr<const Topology> before = health_->with_ejections();
  EXPECT_TRUE(before->pools[0].past[0].live.empty() ||
              before->pools[0].past[0].live == std::vector<bool>{true});

  report_from_a_worker("alpha", kept.address());
  ASSERT_TRUE(run_until([&] { return ejected(kept.address()); }));
  std::shared_ptr<const Topology> out = health_->with_ejections();
  ASSERT_EQ(out->pools[0].past.size(), 1u);
  EXPECT_EQ(out->pools[0].past[0].live, std::vector<bool>{false});
  EXPECT_EQ(keys_on(out->pools[0], 0), 0);
}

}  // namespace
}  // namespace memshard::proxy
