// Parking (--park-after): client connections idle for a while are held as a
// bare socket and made whole again by their next byte, EOF or error. These
// tests prove, against real memcached and real signals, that parked clients
// are counted (parked_connections, curr_connections) and served again
// exactly as before (pipelined requests and a 200 KB set as first input,
// no second count in total_connections); that one that closes while parked
// is counted closed; that client_idle_timeout still closes them (never
// early); that a reload removing their pool closes them while other pools'
// stay parked; that SIGTERM closes them at once and memshard exits 0; and
// that --park-after 0 parks nothing.
#include <gtest/gtest.h>
#include <poll.h>
#include <signal.h>
#include <sys/socket.h>
#include <sys/wait.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <fstream>
#include <iostream>
#include <map>
#include <memory>
#include <sstream>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "failure_util.h"

namespace memshard::testing::failures {
namespace {

using namespace std::chrono_literals;
using Stats = std::map<std::string, uint64_t>;

// Proxy's default arguments, parking clients idle for 200 ms.
const std::vector<std::string> kParkArgs = {"--threads", "2", "-s", "0", "--park-after", "200"};

std::string key_of(const std::string& prefix, size_t i) {
  return prefix + std::to_string(i);
}
// Distinct per client, in content and length.
std::string value_of(const std::string& prefix, size_t i) {
  return prefix + "-value-" + std::to_string(i) + "-" +
         std::string(3 + i % 11, static_cast<char>('a' + i % 26));
}
std::string hit(const std::string& key, const std::string& value) {
  return "VALUE " + key + " 0 " + std::to_string(value.size()) + "\r\n" + value + "\r\nEND\r\n";
}

uint64_t stat_in(const Stats& s, const std::string& name) {
  auto it = s.find(name);
  return it == s.end() ? 0 : it->second;
}
std::string describe(const Stats& s) {
  return "parked_connections " + std::to_string(stat_in(s, "parked_connections")) +
         ", curr_connections " + std::to_string(stat_in(s, "curr_connections")) +
         ", total_connections " + std::to_string(stat_in(s, "total_connections"));
}

// Waits until `parked_connections` == parked and `curr_connections` ==
// parked + others + 1 (the connection asking). `last` gets the last stats.
bool wait_counts(uint16_t port, uint64_t parked, uint64_t others, Stats& last,
                 std::chrono::milliseconds limit = 5s) {
  return eventually(
      [&] {
        last = proxy_stats(port);
        return stat_in(last, "parked_connections") == parked &&
               stat_in(last, "curr_connections") == parked + others + 1;
      },
      limit);
}

// Clients that each stored their own key, kept open.
using Clients = std::vector<std::unique_ptr<RawClient>>;
void connect_and_store(uint16_t port, size_t n, const std::string& prefix, Clients& out) {
  for (size_t i = 0; i < n; ++i) {
    out.push_back(std::make_unique<RawClient>(port));
    ASSERT_EQ(out.back()->roundtrip(set_command(key_of(prefix, i), value_of(prefix, i))),
              "STORED\r\n")
        << "client " << i;
  }
}
// Same, then waits until they are all parked (and no other client is open).
void connect_store_and_park(uint16_t port, size_t n, const std::string& prefix, Clients& out,
                            Stats& parked) {
  ASSERT_NO_FATAL_FAILURE(connect_and_store(port, n, prefix, out));
  ASSERT_TRUE(wait_counts(port, n, 0, parked, 5s))
      << "not all " << n << " idle clients were parked within 5 s: " << describe(parked);
}
// Each client gets its own key back, exactly.
void expect_own_values(Clients& clients, const std::string& prefix) {
  for (size_t i = 0; i < clients.size(); ++i) {
    std::string want = hit(key_of(prefix, i), value_of(prefix, i));
    EXPECT_EQ(clients[i]->roundtrip("get " + key_of(prefix, i) + "\r\n", "END\r\n"), want)
        << "client " << i << " after parking";
  }
}

class Parking : public ::testing::Test {
 protected:
  TempDir dir_;
};

// ================================================ parked, then served again

TEST_F(Parking, IdleClientsAreParkedAndServedAgainUnchanged) {
  Fleet fleet(2);
  Proxy proxy(dir_, fleet.server_lines(), {}, kParkArgs);
  constexpr size_t kClients = 40;
  Clients clients;
  Stats parked;
  ASSERT_NO_FATAL_FAILURE(connect_store_and_park(proxy.port(), kClients, "pk", clients, parked));
  // Counted once when accepted, by the last query above included.
  uint64_t total_parked = stat_in(parked, "total_connections");

  // Woken by two pipelined requests in one send: both answered, in order.
  std::string both =
      hit(key_of("pk", 5), value_of("pk", 5)) + hit(key_of("pk", 0), value_of("pk", 0));
  clients[0]->send("get " + key_of("pk", 5) + "\r\nget " + key_of("pk", 0) + "\r\n");
  std::string got = clients[0]->read_exact(both.size());
  EXPECT_EQ(got, both) << "pipelined gets sent to a parked client";
  EXPECT_EQ(clients[0]->read_for(100ms), "") << "more replies than requests";

  // Woken by a 200 KB set (many segments): stored whole.
  std::string big(200 * 1024, 'x');
  for (size_t i = 0; i < big.size(); i += 97) big[i] = static_cast<char>('a' + (i / 97) % 26);
  big.replace(0, 5, "<big>");
  EXPECT_EQ(clients[1]->roundtrip(set_command("pk-big", big)), "STORED\r\n")
      << "a 200 KB set sent to a parked client";
  // (Compared as a bool: a failure message with 200 KB twice is no help.)
  std::string big_reply = clients[1]->roundtrip("get pk-big\r\n", "END\r\n");
  EXPECT_TRUE(big_reply == hit("pk-big", big))
      << "the 200 KB value read back differs: " << big_reply.size() << " bytes, "
      << printable(big_reply);

  // Every client, its own value.
  expect_own_values(clients, "pk");

  // Waking is no new connection: only this query's own connection counts.
  Stats after = proxy_stats(proxy.port());
  EXPECT_EQ(stat_in(after, "total_connections"), total_parked + 1)
      << "woken connections were counted as new ones: " << describe(after);
  EXPECT_TRUE(proxy.process().running());
}

// ======================================================= closed while parked

TEST_F(Parking, ParkedClientThatClosesIsCountedClosed) {
  Fleet fleet(1);
  Proxy proxy(dir_, fleet.server_lines(), {}, kParkArgs);
  Clients clients;
  Stats s;
  ASSERT_NO_FATAL_FAILURE(connect_store_and_park(proxy.port(), 10, "cl", clients, s));

  for (size_t i = 0; i < 4; ++i) clients[i].reset();  // close while parked
  EXPECT_TRUE(wait_counts(proxy.port(), 6, 0, s, 3s))
      << "4 of 10 parked clients closed; still counted: " << describe(s)
      << " (want parked 6, curr 7)";

  // The six others are served.
  for (size_t i = 4; i < clients.size(); ++i) {
    EXPECT_EQ(clients[i]->roundtrip("get " + key_of("cl", i) + "\r\n", "END\r\n"),
              hit(key_of("cl", i), value_of("cl", i)))
        << "client " << i;
  }
  EXPECT_TRUE(proxy.process().running());
}

// =================================================== client_idle_timeout

// The idle timeout runs from a client's last request, whatever the phase of
// the once-a-second sweep that parks and closes: so the first idle client
// is followed by nine more whose last requests are 100 ms apart, each of
// which must be closed no earlier than 1500 ms after its own. Meanwhile a
// client that speaks every 300 ms (parked or not in between) stays open.
TEST_F(Parking, ParkedClientsCloseAfterClientIdleTimeoutNeverEarly) {
  Fleet fleet(1);
  Proxy proxy(dir_, fleet.server_lines(), {{"client_idle_timeout", "1500"}}, kParkArgs);
  constexpr size_t kIdle = 10;
  Clients idle;
  std::vector<Clock::time_point> last_sent(kIdle);  // just before each last request
  auto store = [&](size_t i) {
    idle.push_back(std::make_unique<RawClient>(proxy.port()));
    last_sent[i] = Clock::now();
    ASSERT_EQ(idle[i]->roundtrip(set_command(key_of("it", i), value_of("it", i))), "STORED\r\n");
  };
  ASSERT_NO_FATAL_FAILURE(store(0));
  Stats s;
  ASSERT_TRUE(wait_counts(proxy.port(), 1, 0, s, 3s))
      << "the idle client was not parked: " << describe(s);
  std::cout << "first idle client parked within " << ms_between(last_sent[0], Clock::now())
            << " ms\n";

  auto busy = std::make_unique<RawClient>(proxy.port());
  auto start = Clock::now();
  auto next_busy = start;
  int busy_requests = 0;
  std::vector<int64_t> closed_after(kIdle, -1);  // ms since its last request
  size_t closed = 0;
  // Bounded: the last idle client speaks at ~900 ms and must close by +5 s.
  while (closed < kIdle && Clock::now() < start + 7s) {
    if (idle.size() < kIdle && Clock::now() >= start + idle.size() * 100ms) {
      ASSERT_NO_FATAL_FAILURE(store(idle.size()));
    }
    if (Clock::now() - start < 2500ms && Clock::now() >= next_busy) {
      ASSERT_EQ(busy->roundtrip("get it0\r\n", "END\r\n"), hit("it0", value_of("it", 0)))
          << "request " << busy_requests << " of a client that speaks every 300 ms, "
          << ms_between(start, Clock::now()) << " ms in";
      ++busy_requests;
      next_busy += 300ms;
    }
    std::vector<pollfd> fds;
    std::vector<size_t> which;
    for (size_t i = 0; i < idle.size(); ++i) {
      if (closed_after[i] >= 0) continue;
      fds.push_back(pollfd{idle[i]->fd(), POLLIN, 0});
      which.push_back(i);
    }
    if (poll(fds.data(), fds.size(), 10) <= 0) continue;
    for (size_t k = 0; k < fds.size(); ++k) {
      if (fds[k].revents == 0) continue;
      char buf[256];
      ssize_t n = recv(fds[k].fd, buf, sizeof(buf), MSG_DONTWAIT);
      size_t i = which[k];
      if (n > 0) {
        ADD_FAILURE() << "idle client " << i << " was sent "
                      << printable(std::string_view(buf, static_cast<size_t>(n)));
      } else if (n == 0 || errno == ECONNRESET) {
        closed_after[i] = ms_between(last_sent[i], Clock::now());
        ++closed;
      }
    }
  }
  for (size_t i = 0; i < kIdle; ++i) {
    EXPECT_GE(closed_after[i], 0) << "idle client " << i << " (parked, client_idle_timeout 1500) "
                                  << "still open "
                                  << (i < idle.size() ? ms_between(last_sent[i], Clock::now()) : 0)
                                  << " ms after its last request";
    if (closed_after[i] < 0) continue;
    EXPECT_GE(closed_after[i], 1500) << "idle client " << i << " closed before client_idle_timeout";
    EXPECT_LE(closed_after[i], 5000) << "idle client " << i;
  }
  std::cout << "idle clients closed after (ms since their last request):";
  for (int64_t ms : closed_after) std::cout << " " << ms;
  std::cout << "\n";

  EXPECT_GE(busy_requests, 8);
  EXPECT_EQ(busy->roundtrip("get it0\r\n", "END\r\n"), hit("it0", value_of("it", 0)))
      << "the client that spoke every 300 ms was closed";
  // Every timed-out one is counted closed; then the busy one closes too.
  EXPECT_TRUE(eventually([&] { return proxy_stat(proxy.port(), "curr_connections") == 2; }, 2s))
      << "timed-out parked clients still counted: " << proxy_stat(proxy.port(), "curr_connections")
      << " (want the busy one and the asker)";
  busy.reset();
  EXPECT_TRUE(wait_counts(proxy.port(), 0, 0, s, 2s))
      << "after every client closed, want only the asking connection: " << describe(s);
}

// ================================================================ reload

// At scope exit: stops memshard (SIGTERM, so a sanitizer build writes its
// reports), fails the test on a sanitizer report in its log, as Proxy does,
// and prints the log's tail when the test has failed.
class LogCheck {
 public:
  LogCheck(Process& process, std::string path) : process_(process), path_(std::move(path)) {}
  ~LogCheck() {
    process_.stop();
    std::ifstream f(path_);
    std::stringstream all;
    all << f.rdbuf();
    std::string text = all.str();
    expect_no_sanitizer_report(text);
    if (!::testing::Test::HasFailure()) return;
    if (text.size() > 4000) text = text.substr(text.size() - 4000);
    std::cerr << "---- memshard log (tail) ----\n" << text << "\n----\n";
  }
  LogCheck(const LogCheck&) = delete;
  LogCheck& operator=(const LogCheck&) = delete;

 private:
  Process& process_;
  std::string path_;
};

TEST_F(Parking, ReloadRemovingAPoolClosesItsParkedClientsOnly) {
  Fleet fleet(1);
  uint16_t main_port = free_port(), other_port = free_port();
  ASSERT_NE(main_port, other_port);
  PoolSpec main_pool{.name = "main",
                     .listen = "127.0.0.1:" + std::to_string(main_port),
                     .directives = {},
                     .servers = fleet.server_lines()};
  PoolSpec other_pool = main_pool;
  other_pool.name = "other";
  other_pool.listen = "127.0.0.1:" + std::to_string(other_port);
  std::string config = dir_.write("memshard.yml", config_yaml({main_pool, other_pool}));
  std::string log = dir_.path() + "/memshard.log";
  Memshard ms(config, kParkArgs, main_port, log);
  LogCheck log_check(ms.process(), log);
  ASSERT_TRUE(wait_listening(other_port));

  Clients mains, others;
  ASSERT_NO_FATAL_FAILURE(connect_and_store(main_port, 5, "rm", mains));
  ASSERT_NO_FATAL_FAILURE(connect_and_store(other_port, 5, "ro", others));
  Stats s;
  ASSERT_TRUE(wait_counts(main_port, 10, 0, s, 5s)) << "not all 10 parked: " << describe(s);
  ASSERT_EQ(stat_in(s, "config_generation"), 1u);

  dir_.write("memshard.yml", config_yaml({main_pool}));
  auto t0 = Clock::now();
  ms.process().signal(SIGHUP);
  for (size_t i = 0; i < others.size(); ++i) {
    auto left = std::chrono::milliseconds(5000 - ms_between(t0, Clock::now()));
    EXPECT_TRUE(others[i]->closed_by_peer(std::max(left, std::chrono::milliseconds(1))))
        << "parked client " << i << " of the removed pool still open "
        << ms_between(t0, Clock::now()) << " ms after SIGHUP";
  }
  std::cout << "removed pool's parked clients closed " << ms_between(t0, Clock::now())
            << " ms after SIGHUP\n";
  // The reload is in force, and main's clients were left parked.
  EXPECT_TRUE(eventually(
      [&] {
        s = proxy_stats(main_port);
        return stat_in(s, "config_generation") == 2 && stat_in(s, "parked_connections") == 5 &&
               stat_in(s, "curr_connections") == 6;
      },
      3s))
      << "after the reload, want generation 2, parked 5, curr 6: " << describe(s)
      << ", config_generation " << stat_in(s, "config_generation");
  expect_own_values(mains, "rm");
  EXPECT_TRUE(ms.process().running());
}

// ============================================================== SIGTERM

TEST_F(Parking, SigtermClosesParkedClientsAndExitsZeroPromptly) {
  Fleet fleet(1);
  Proxy proxy(dir_, fleet.server_lines(), {}, kParkArgs);
  Clients clients;
  Stats s;
  ASSERT_NO_FATAL_FAILURE(connect_store_and_park(proxy.port(), 20, "st", clients, s));

  auto t0 = Clock::now();
  proxy.process().signal(SIGTERM);
  // Closed by memshard's drain (which otherwise waits for them up to the
  // 10 s drain timeout), not by its exit.
  for (size_t i = 0; i < clients.size(); ++i) {
    auto left = std::chrono::milliseconds(3000 - ms_between(t0, Clock::now()));
    EXPECT_TRUE(clients[i]->closed_by_peer(std::max(left, std::chrono::milliseconds(1))))
        << "parked client " << i << " still open " << ms_between(t0, Clock::now())
        << " ms after SIGTERM";
  }
  auto left = std::chrono::milliseconds(3000 - ms_between(t0, Clock::now()));
  int status = proxy.process().wait_exit(std::max(left, std::chrono::milliseconds(1)));
  int64_t took = ms_between(t0, Clock::now());
  ASSERT_NE(status, -1) << "memshard still running " << took
                        << " ms after SIGTERM with only parked clients";
  EXPECT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0)
      << "exit status " << status << (WIFSIGNALED(status) ? " (signal)" : "");
  std::cout << "SIGTERM with 20 parked clients: exited after " << took << " ms\n";
}

// ========================================================= --park-after 0

TEST_F(Parking, ParkAfterZeroParksNothing) {
  Fleet fleet(1);
  Proxy proxy(dir_, fleet.server_lines(), {}, {"--threads", "2", "-s", "0", "--park-after", "0"});
  Clients clients;
  ASSERT_NO_FATAL_FAILURE(connect_and_store(proxy.port(), 10, "pz", clients));
  auto start = Clock::now();
  uint64_t most = 0;
  while (Clock::now() - start < 2500ms) {  // past the default 1000 ms and two sweeps
    most = std::max(most, proxy_stat(proxy.port(), "parked_connections"));
    std::this_thread::sleep_for(100ms);
  }
  EXPECT_EQ(most, 0u) << "clients parked with --park-after 0";
  Stats s;
  EXPECT_TRUE(wait_counts(proxy.port(), 0, 10, s, 2s)) << describe(s);
  expect_own_values(clients, "pz");
}

}  // namespace
}  // namespace memshard::testing::failures
