// Worker (proxy/runtime/worker.h) without a Proxy: a FakeHost stands in for
// the proxy, scripted servers on loopback for memcached, and client sockets
// are handed over with adopt_client as the proxy's accept would. What is
// tested is what crosses threads: adoption and client_load(), topology
// installs, the reports to the host, drain() and stop(). Every wait has a
// deadline and an iteration budget; nothing asserts how long anything took.
#include "proxy/runtime/worker.h"

#include <arpa/inet.h>
#include <fcntl.h>
#include <gtest/gtest.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <chrono>
#include <csignal>
#include <cstring>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <set>
#include <sstream>
#include <stdexcept>
#include <string>
#include <string_view>
#include <thread>
#include <utility>
#include <vector>

#include "conf/config.h"
#include "proxy/clients/client_count.h"
#include "proxy/routes/topology.h"
#include "proxy/runtime/active_workers.h"

namespace memshard::proxy {
namespace {

using Clock = std::chrono::steady_clock;
constexpr auto kDeadline = std::chrono::seconds(10);
constexpr int kPollBudget = 2000;  // 5 ms polls: the deadline comes first

// Polls `done` until it holds, the deadline passes or the budget runs out.
bool eventually(const std::function<bool()>& done) {
  const auto until = Clock::now() + kDeadline;
  for (int i = 0; i < kPollBudget && Clock::now() < until; ++i) {
    if (done()) return true;
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  }
  return done();
}

struct FakeStatsView final : StatsView {
  uint64_t uptime_seconds() const override { return 0; }
  int thread_count() const override { return 1; }
  int active_threads() const override { return 1; }
  std::vector<uint64_t> worker_connections() const override { return {}; }
  StatsSnapshot snapshot() const override { return {}; }
  std::vector<std::pair<std::string_view, uint64_t>> counter_totals() const override { return {}; }
  uint64_t generation() const override { return 0; }
  uint64_t reloads() const override { return 0; }
  uint64_t reload_failures() const override { return 0; }
  uint64_t rejected_connections() const override { return 0; }
  uint64_t max_connections() const override { return 0; }
  uint64_t dns_address_changes() const override { return 0; }
  uint64_t dns_failures() const override { return 0; }
  uint64_t ejections() const override { return 0; }
  uint64_t readmissions() const override { return 0; }
  uint64_t pool_ejections(const std::string&) const override { return 0; }
  uint64_t ejected_at(const std::string&, const std::string&) const override { return 0; }
};

// Records what the worker reports (called on the worker's thread).
class FakeHost final : public WorkerHost {
 public:
  // Moves go to these workers (by index), when set.
  std::vector<Worker*> workers;
  void hand_over(size_t to, int fd, std::string pool, std::shared_ptr<ClientCount> clients,
                 ClientConn::Arrival arrival) override {
    if (to < workers.size()) {
      workers[to]->adopt_client(fd, std::move(pool), std::move(clients), arrival);
    } else {
      close(fd);
      clients->remove();
    }
  }
  void server_failing(const std::string& pool, const std::string& identity) override {
    std::lock_guard<std::mutex> lock(mu_);
    failing_.push_back(pool + "/" + identity);
  }
  void server_unreachable(const std::string& pool, const std::string& identity) override {
    std::lock_guard<std::mutex> lock(mu_);
    unreachable_.push_back(pool + "/" + identity);
  }
  const StatsView& stats_view() const override { return stats_; }

  std::vector<std::string> failing() const {
    std::lock_guard<std::mutex> lock(mu_);
    return failing_;
  }
  std::vector<std::string> unreachable() const {
    std::lock_guard<std::mutex> lock(mu_);
    return unreachable_;
  }

 private:
  FakeStatsView stats_;
  mutable std::mutex mu_;
  std::vector<std::string> failing_, unreachable_;
};

// A scripted memcached on 127.0.0.1, on a thread of its own. It knows set
// (noreply too), ms, mn and get; a get of a key never set answers the server's tag as the value,
// so a test sees which server a request went to. `hold` keeps replies back
// until release(); `close_on_request` closes a connection on its first
// request, as a crashing server would.
class FakeServer {
 public:
  explicit FakeServer(std::string tag) : tag_(std::move(tag)) {
    listen_fd_ = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    sockaddr_in a{};
    a.sin_family = AF_INET;
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    if (bind(listen_fd_, reinterpret_cast<sockaddr*>(&a), sizeof(a)) != 0 ||
        listen(listen_fd_, 64) != 0) {
      throw std::runtime_error(std::string("fake server: ") + strerror(errno));
    }
    socklen_t len = sizeof(a);
    getsockname(listen_fd_, reinterpret_cast<sockaddr*>(&a), &len);
    port_ = ntohs(a.sin_port);
    if (pipe2(wake_, O_CLOEXEC | O_NONBLOCK) != 0) throw std::runtime_error("pipe2");
    thread_ = std::thread([this] { run(); });
  }
  ~FakeServer() {
    stop_.store(true);
    (void)!write(wake_[1], "x", 1);
    thread_.join();
    for (Conn& c : conns_) close(c.fd);
    close(listen_fd_);
    close(wake_[0]);
    close(wake_[1]);
  }

  uint16_t port() const { return port_; }
  std::string address() const { return "127.0.0.1:" + std::to_string(port_); }
  void set_hold(bool on) { hold_.store(on); }
  void set_close_on_request(bool on) { close_on_request_.store(on); }
  void release() {
    hold_.store(false);
    (void)!write(wake_[1], "x", 1);
  }
  uint64_t requests() const { return requests_.load(); }
  uint64_t closed_on_request() const { return closed_on_request_.load(); }

 private:
  struct Conn {
    int fd;
    std::string in, held;
    bool dead = false;
  };

  void run() {
    while (!stop_.load()) {
      std::vector<pollfd> fds{{listen_fd_, POLLIN, 0}, {wake_[0], POLLIN, 0}};
      for (const Conn& c : conns_) fds.push_back({c.fd, POLLIN, 0});
      if (poll(fds.data(), fds.size(), 100) < 0 && errno != EINTR) return;
      if (fds[0].revents & POLLIN) {
        int fd = accept4(listen_fd_, nullptr, nullptr, SOCK_CLOEXEC);
        if (fd >= 0) conns_.push_back(Conn{fd, {}, {}});
      }
      if (fds[1].revents & POLLIN) {
        char drain[64];
        while (read(wake_[0], drain, sizeof(drain)) > 0) {
        }
      }
      for (size_t i = 0; i + 2 < fds.size(); ++i) {
        Conn& c = conns_[i];
        if (fds[i + 2].revents & (POLLIN | POLLHUP | POLLERR)) {
          char buf[4096];
          ssize_t n = read(c.fd, buf, sizeof(buf));
          if (n <= 0) {
            c.dead = true;
            continue;
          }
          c.in.append(buf, static_cast<size_t>(n));
          serve(c);
        }
        if (!hold_.load() && !c.held.empty() && !c.dead) {
          send_all(c.fd, c.held);
          c.held.clear();
        }
      }
      std::erase_if(conns_, [](const Conn& c) {
        if (c.dead) close(c.fd);
        return c.dead;
      });
    }
  }

  void serve(Conn& c) {
    for (;;) {
      size_t eol = c.in.find("\r\n");
      if (eol == std::string::npos) return;
      std::string line = c.in.substr(0, eol);
      std::istringstream words(line);
      std::string verb;
      words >> verb;
      std::string reply;
      size_t used = eol + 2;
      if (verb == "set") {
        std::string key, noreply;
        unsigned flags = 0, exptime = 0;
        size_t bytes = 0;
        words >> key >> flags >> exptime >> bytes >> noreply;
        if (c.in.size() < used + bytes + 2) return;  // the data is not all here
        store_[key] = c.in.substr(used, bytes);
        used += bytes + 2;
        reply = noreply == "noreply" ? "" : "STORED\r\n";
      } else if (verb == "ms") {  // flags ignored: what a binary set becomes
        std::string key;
        size_t bytes = 0;
        words >> key >> bytes;
        if (c.in.size() < used + bytes + 2) return;
        store_[key] = c.in.substr(used, bytes);
        used += bytes + 2;
        reply = "HD c1\r\n";
      } else if (verb == "mn") {
        reply = "MN\r\n";
      } else if (verb == "get" || verb == "gets") {
        for (std::string key; words >> key;) {
          auto it = store_.find(key);
          const std::string& value = it != store_.end() ? it->second : tag_;
          reply += "VALUE " + key + " 0 " + std::to_string(value.size()) +
                   (verb == "gets" ? " 1" : "") + "\r\n" + value + "\r\n";
        }
        reply += "END\r\n";
      } else {
        reply = "ERROR\r\n";
      }
      c.in.erase(0, used);
      requests_.fetch_add(1);
      if (close_on_request_.load()) {
        c.dead = true;
        closed_on_request_.fetch_add(1);
        return;
      }
      if (hold_.load()) {
        c.held += reply;
      } else {
        send_all(c.fd, reply);
      }
    }
  }

  static void send_all(int fd, const std::string& data) {
    size_t off = 0;
    while (off < data.size()) {
      ssize_t n = send(fd, data.data() + off, data.size() - off, MSG_NOSIGNAL);
      if (n <= 0) return;
      off += static_cast<size_t>(n);
    }
  }

  std::string tag_;
  int listen_fd_ = -1;
  int wake_[2] = {-1, -1};
  uint16_t port_ = 0;
  std::atomic<bool> stop_{false}, hold_{false}, close_on_request_{false};
  std::atomic<uint64_t> requests_{0}, closed_on_request_{0};
  std::vector<Conn> conns_;  // server thread only
  std::map<std::string, std::string> store_;
  std::thread thread_;
};

// The test's end of a client connection handed to the worker.
class TestClient {
 public:
  explicit TestClient(int fd) : fd_(fd) {}
  ~TestClient() {
    if (fd_ >= 0) close(fd_);
  }
  TestClient(const TestClient&) = delete;
  TestClient& operator=(const TestClient&) = delete;

  void send(const std::string& data) {
    ASSERT_EQ(::send(fd_, data.data(), data.size(), MSG_NOSIGNAL),
              static_cast<ssize_t>(data.size()));
  }
  // Everything received until `needle` was seen (or EOF, or the deadline).
  std::string read_until(const std::string& needle) {
    const auto until = Clock::now() + kDeadline;
    for (int i = 0; i < kPollBudget && Clock::now() < until; ++i) {
      size_t at = got_.find(needle);
      if (at != std::string::npos) {
        std::string out = got_.substr(0, at + needle.size());
        got_.erase(0, at + needle.size());
        return out;
      }
      if (!read_some() || eof_) break;
    }
    return std::exchange(got_, {});
  }
  // True once the worker has closed its end (and nothing more came).
  bool wait_eof() {
    const auto until = Clock::now() + kDeadline;
    for (int i = 0; i < kPollBudget && Clock::now() < until && !eof_; ++i) {
      if (!read_some()) break;
    }
    return eof_ && got_.empty();
  }
  void close_now() {
    close(fd_);
    fd_ = -1;
  }

 private:
  bool read_some() {
    pollfd p{fd_, POLLIN, 0};
    int r = poll(&p, 1, 5);
    if (r < 0) return errno == EINTR;
    if (r == 0) return true;
    char buf[4096];
    ssize_t n = read(fd_, buf, sizeof(buf));
    if (n == 0 || (n < 0 && errno == ECONNRESET)) {
      eof_ = true;
      return true;
    }
    if (n < 0) return errno == EAGAIN || errno == EINTR;
    got_.append(buf, static_cast<size_t>(n));
    return true;
  }

  int fd_;
  std::string got_;
  bool eof_ = false;
};

std::shared_ptr<const Topology> topology_for(const std::string& server_address, uint64_t generation,
                                             const std::string& extra = "") {
  std::string text =
      "alpha:\n"
      "  listen: 127.0.0.1:22199\n" +
      extra +
      "  servers:\n"
      "   - " +
      server_address + ":1\n";
  conf::LoadResult loaded = conf::parse_config(text, "worker_test.yml");
  if (!loaded.errors.empty()) throw std::runtime_error(loaded.errors.front().to_string());
  return build_topology(*loaded.config, generation);
}

class WorkerTest : public testing::Test {
 protected:
  WorkerTest() { std::signal(SIGPIPE, SIG_IGN); }

  // A connected socket pair: the worker's end goes through adopt_client,
  // counted by the listener's count first as the proxy's accept does.
  std::unique_ptr<TestClient> hand_over(Worker& worker) {
    int fds[2];
    EXPECT_EQ(socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, fds), 0) << strerror(errno);
    fcntl(fds[0], F_SETFL, fcntl(fds[0], F_GETFL) | O_NONBLOCK);
    pool_clients_->add();
    worker.adopt_client(fds[0], "alpha", pool_clients_);
    return std::make_unique<TestClient>(fds[1]);
  }

  // Two workers the host moves clients between; the client starts on the
  // second.
  std::unique_ptr<TestClient> two_workers(FakeServer& server, Worker& first, Worker& second) {
    host_.workers = {&first, &second};
    first.start(topology_for(server.address(), 1));
    second.start(topology_for(server.address(), 1));
    return hand_over(second);
  }
  // What Proxy::set_active_workers(1) tells them.
  static void only_first_active(Worker& first, Worker& second) {
    for (Worker* w : {&first, &second}) w->place(Worker::Placement{1, {}, {0, 0}});
  }

  std::shared_ptr<std::atomic<uint32_t>> proxy_total_ = std::make_shared<std::atomic<uint32_t>>(0);
  std::shared_ptr<ClientCount> pool_clients_ = std::make_shared<ClientCount>(proxy_total_);
  FakeHost host_;
};

TEST_F(WorkerTest, AdoptedClientIsAnsweredThroughTheLoopAndCountedThroughout) {
  FakeServer server("tag");
  Worker worker(host_, 0, 0);
  // Handed over before the loop runs: not a connection yet, but load.
  std::unique_ptr<TestClient> client = hand_over(worker);
  EXPECT_EQ(worker.client_load(), 1u);
  EXPECT_EQ(worker.stats().curr_connections.get(), 0u);

  worker.start(topology_for(server.address(), 1));
  client->send("set k 0 0 5\r\nhello\r\n");
  EXPECT_EQ(client->read_until("\r\n"), "STORED\r\n");
  client->send("get k\r\n");
  EXPECT_EQ(client->read_until("END\r\n"), "VALUE k 0 5\r\nhello\r\nEND\r\n");
  // Answered, so adopted: counted once, as a connection.
  EXPECT_EQ(worker.client_load(), 1u);
  EXPECT_EQ(worker.stats().curr_connections.get(), 1u);
  EXPECT_EQ(pool_clients_->open(), 1u);

  client->close_now();
  EXPECT_TRUE(eventually([&] { return worker.client_load() == 0; }));
  EXPECT_TRUE(eventually([&] { return pool_clients_->open() == 0; }));
  EXPECT_EQ(proxy_total_->load(), 0u);
}

TEST_F(WorkerTest, OfTwoQuickInstallsTheNewestRoutes) {
  FakeServer first("first"), second("second"), third("third");
  Worker worker(host_, 0, 0);
  worker.start(topology_for(first.address(), 1));
  worker.install_topology(topology_for(second.address(), 2));
  worker.install_topology(topology_for(third.address(), 3));
  // Posted after both installs, so adopted after the newest is in place.
  std::unique_ptr<TestClient> client = hand_over(worker);
  client->send("get anything\r\n");
  EXPECT_EQ(client->read_until("END\r\n"), "VALUE anything 0 5\r\nthird\r\nEND\r\n");
  EXPECT_EQ(first.requests(), 0u);
  EXPECT_EQ(second.requests(), 0u);
}

TEST_F(WorkerTest, InstallsBeforeTheLoopRunsApplyTheNewest) {
  FakeServer first("first"), second("second"), third("third");
  Worker worker(host_, 0, 0);
  worker.install_topology(topology_for(second.address(), 2));
  worker.install_topology(topology_for(third.address(), 3));
  std::unique_ptr<TestClient> client = hand_over(worker);
  worker.start(topology_for(first.address(), 1));
  client->send("get anything\r\n");
  EXPECT_EQ(client->read_until("END\r\n"), "VALUE anything 0 5\r\nthird\r\nEND\r\n");
  EXPECT_EQ(second.requests(), 0u);
}

TEST_F(WorkerTest, ServerFailingLimitTimesInARowIsReportedOnce) {
  constexpr int kLimit = 3;
  FakeServer server("tag");
  server.set_close_on_request(true);
  Worker worker(host_, 0, 0);
  worker.start(topology_for(
      server.address(), 1,
      "  auto_eject_hosts: true\n  server_failure_limit: " + std::to_string(kLimit) + "\n"));
  std::unique_ptr<TestClient> client = hand_over(worker);
  // Each request's connection is closed by the server: one failure each.
  // The error reply comes after the failure was counted (and reported), so
  // reading it is the point at which to look. A request refused during a
  // connect backoff reaches no server and counts nothing, hence the loop.
  int sent = 0;
  for (; sent < 50 && host_.failing().empty(); ++sent) {
    client->send("get k\r\n");
    EXPECT_EQ(client->read_until("\r\n").rfind("SERVER_ERROR", 0), 0u);
  }
  ASSERT_EQ(host_.failing().size(), 1u);
  EXPECT_EQ(host_.failing().front(), "alpha/" + server.address());
  EXPECT_EQ(server.closed_on_request(), static_cast<uint64_t>(kLimit));
  // A new streak starts: fewer than kLimit failures more report nothing.
  for (uint64_t target = server.closed_on_request() + kLimit - 1;
       sent < 100 && server.closed_on_request() < target; ++sent) {
    client->send("get k\r\n");
    EXPECT_EQ(client->read_until("\r\n").rfind("SERVER_ERROR", 0), 0u);
  }
  EXPECT_EQ(host_.failing().size(), 1u);
}

TEST_F(WorkerTest, RefusedConnectIsReportedUnreachable) {
  // Bound and not listening: a connect to it is refused, and the port stays
  // ours for the test.
  int closed = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  ASSERT_EQ(bind(closed, reinterpret_cast<sockaddr*>(&a), sizeof(a)), 0) << strerror(errno);
  socklen_t len = sizeof(a);
  getsockname(closed, reinterpret_cast<sockaddr*>(&a), &len);
  const std::string address = "127.0.0.1:" + std::to_string(ntohs(a.sin_port));

  Worker worker(host_, 0, 0);
  worker.start(topology_for(address, 1));
  std::unique_ptr<TestClient> client = hand_over(worker);
  client->send("get k\r\n");
  EXPECT_EQ(client->read_until("\r\n").rfind("SERVER_ERROR", 0), 0u);
  std::vector<std::string> reports = host_.unreachable();
  ASSERT_FALSE(reports.empty());
  EXPECT_EQ(reports.front(), "alpha/" + address);
  worker.stop();
  close(closed);
}

TEST_F(WorkerTest, DrainAnswersWhatIsInFlightThenCloses) {
  FakeServer server("held");
  server.set_hold(true);
  Worker worker(host_, 0, 0);
  worker.start(topology_for(server.address(), 1));
  std::unique_ptr<TestClient> busy = hand_over(worker);
  std::unique_ptr<TestClient> idle = hand_over(worker);
  busy->send("get k\r\n");
  ASSERT_TRUE(eventually([&] { return server.requests() == 1; }));
  EXPECT_EQ(worker.client_load(), 2u);

  worker.drain();
  // The idle client owes nothing and closes at once: drain has run while
  // the other client's request is still held at the server.
  EXPECT_TRUE(idle->wait_eof());
  server.release();
  EXPECT_EQ(busy->read_until("END\r\n"), "VALUE k 0 4\r\nheld\r\nEND\r\n");
  EXPECT_TRUE(busy->wait_eof());
  EXPECT_TRUE(eventually([&] { return pool_clients_->open() == 0; }));
  EXPECT_EQ(worker.client_load(), 0u);
}

TEST_F(WorkerTest, StopClosesAndUncountsClientsNotAdoptedYet) {
  Worker worker(host_, 0, 0);
  // Never started, so certainly not adopted when stop() comes.
  std::unique_ptr<TestClient> client = hand_over(worker);
  EXPECT_EQ(worker.client_load(), 1u);
  EXPECT_EQ(pool_clients_->open(), 1u);
  worker.stop();
  EXPECT_TRUE(client->wait_eof());
  EXPECT_EQ(pool_clients_->open(), 0u);
  EXPECT_EQ(proxy_total_->load(), 0u);
  EXPECT_EQ(worker.client_load(), 0u);
}

TEST_F(WorkerTest, StopEndsARunningLoopAndClosesWhatIsHandedOverAfter) {
  FakeServer server("tag");
  Worker worker(host_, 0, 0);
  worker.start(topology_for(server.address(), 1));
  std::unique_ptr<TestClient> adopted = hand_over(worker);
  adopted->send("get k\r\n");
  EXPECT_EQ(adopted->read_until("END\r\n"), "VALUE k 0 3\r\ntag\r\nEND\r\n");
  worker.stop();  // returns: the loop ended
  // The loop is over: a client handed over now is closed by the next
  // stop() (the destructor's) rather than left open and counted.
  std::unique_ptr<TestClient> late = hand_over(worker);
  EXPECT_EQ(pool_clients_->open(), 2u);
  worker.stop();
  EXPECT_TRUE(late->wait_eof());
  EXPECT_EQ(pool_clients_->open(), 1u);  // the adopted one closes with the worker
}

// Worker::place with one active worker: the other hands its client over
// (through the host, as Proxy::hand_over does), and the client goes on as
// if nothing happened.
TEST_F(WorkerTest, AWorkerNoLongerActiveHandsItsClientsToAnActiveOne) {
  FakeServer server("tag");
  Worker first(host_, 0, 0), second(host_, 1, 0);
  std::unique_ptr<TestClient> client = two_workers(server, first, second);
  client->send("set k 0 0 5\r\nhello\r\n");
  ASSERT_EQ(client->read_until("\r\n"), "STORED\r\n");
  ASSERT_EQ(second.stats().curr_connections.get(), 1u);

  only_first_active(first, second);
  EXPECT_TRUE(eventually([&] { return first.stats().curr_connections.get() == 1; }));
  EXPECT_TRUE(eventually([&] { return second.stats().curr_connections.get() == 0; }));
  EXPECT_TRUE(eventually([&] { return second.stats().moved_connections.get() == 1; }));
  // Counted once by its listener throughout, and never as a new connection.
  EXPECT_EQ(pool_clients_->open(), 1u);
  EXPECT_EQ(first.stats().total_connections.get(), 0u);

  // Pipelined, right after the move: answered in order by the new worker.
  client->send("get k\r\nset k 0 0 3\r\nbye\r\nget k\r\n");
  EXPECT_EQ(client->read_until("END\r\n"), "VALUE k 0 5\r\nhello\r\nEND\r\n");
  EXPECT_EQ(client->read_until("\r\n"), "STORED\r\n");
  EXPECT_EQ(client->read_until("END\r\n"), "VALUE k 0 3\r\nbye\r\nEND\r\n");
  EXPECT_EQ(first.stats().moved_connections.get(), 0u);

  client->close_now();
  EXPECT_TRUE(eventually([&] { return pool_clients_->open() == 0; }));
  EXPECT_EQ(first.stats().curr_connections.get(), 0u);
}

// A client that is owed a reply stays until it has it: moving it then
// could reorder or lose the reply. Meanwhile it is not read, so a client
// that always has a request in flight still moves.
TEST_F(WorkerTest, AClientOwedAReplyMovesOnlyOnceAnswered) {
  FakeServer server("tag");
  Worker first(host_, 0, 0), second(host_, 1, 0);
  std::unique_ptr<TestClient> client = two_workers(server, first, second);
  client->send("get warm\r\n");
  ASSERT_EQ(client->read_until("END\r\n"), "VALUE warm 0 3\r\ntag\r\nEND\r\n");

  server.set_hold(true);
  client->send("get k\r\n");
  EXPECT_TRUE(eventually([&] { return server.requests() == 2; }));
  only_first_active(first, second);
  std::this_thread::sleep_for(std::chrono::milliseconds(200));
  EXPECT_EQ(second.stats().curr_connections.get(), 1u) << "moved while owed a reply";
  EXPECT_EQ(second.stats().moved_connections.get(), 0u);

  // It is held still (not read) until answered, so what it pipelines
  // meanwhile stays in the kernel for the worker it moves to.
  client->send("set k2 0 0 2\r\nv2\r\nget k2\r\n");
  std::this_thread::sleep_for(std::chrono::milliseconds(100));
  EXPECT_EQ(server.requests(), 2u) << "read while held for its move";

  server.release();
  EXPECT_EQ(client->read_until("END\r\n"), "VALUE k 0 3\r\ntag\r\nEND\r\n");
  EXPECT_EQ(client->read_until("\r\n"), "STORED\r\n");
  EXPECT_EQ(client->read_until("END\r\n"), "VALUE k2 0 2\r\nv2\r\nEND\r\n");
  // Each worker counts on its own thread: waited for, not read at once
  // (a loaded machine saw the count a moment after the replies).
  EXPECT_TRUE(eventually([&] { return first.stats().curr_connections.get() == 1; }));
  EXPECT_TRUE(eventually([&] { return second.stats().moved_connections.get() == 1; }));
}

// A binary request frame: header, extras, key, value (opaque 0, cas 0).
std::string binary_frame(uint8_t opcode, std::string_view extras, std::string_view key,
                         std::string_view value = {}) {
  const size_t body = extras.size() + key.size() + value.size();
  std::string f(24, '\0');
  f[0] = '\x80';
  f[1] = static_cast<char>(opcode);
  f[2] = static_cast<char>(key.size() >> 8);
  f[3] = static_cast<char>(key.size());
  f[4] = static_cast<char>(extras.size());
  for (int i = 0; i < 4; ++i) f[8 + i] = static_cast<char>(body >> (24 - 8 * i));
  return f.append(extras).append(key).append(value);
}

// A write that owes the client nothing (noreply, a binary quiet frame) is
// still in flight until its server has answered the marker memshard sends
// after it: the client must not move before, or its next request, sent on
// the new worker's server connection, could overtake the write.
TEST_F(WorkerTest, AClientWithAQuietWriteInFlightMovesOnlyOnceTheServerTookIt) {
  const std::string setq = binary_frame(0x11, std::string(8, '\0'), "k", "new");
  for (const std::string& write : {std::string("set k 0 0 3 noreply\r\nnew\r\n"), setq}) {
    const bool binary = write == setq;
    SCOPED_TRACE(binary ? "setq" : "noreply");
    FakeServer server("tag");
    Worker first(host_, 0, 0), second(host_, 1, 0);
    std::unique_ptr<TestClient> client = two_workers(server, first, second);
    server.set_hold(true);
    client->send(write);
    EXPECT_TRUE(eventually([&] { return server.requests() >= 1; }));
    only_first_active(first, second);
    std::this_thread::sleep_for(std::chrono::milliseconds(200));
    EXPECT_EQ(second.stats().moved_connections.get(), 0u) << "moved with a write in flight";

    server.release();
    EXPECT_TRUE(eventually([&] { return second.stats().moved_connections.get() == 1; }));
    EXPECT_TRUE(eventually([&] { return first.stats().curr_connections.get() == 1; }));
    if (binary) {
      client->send(binary_frame(0x00, {}, "k"));  // get k
      const std::string got = client->read_until("new");
      EXPECT_TRUE(got.starts_with("\x81")) << "a binary reply";
      EXPECT_TRUE(got.ends_with("new")) << "the get after the move saw the setq";
    } else {
      client->send("get k\r\n");
      EXPECT_EQ(client->read_until("END\r\n"), "VALUE k 0 3\r\nnew\r\nEND\r\n");
    }
  }
}

// ActiveWorkers (proxy/runtime/active_workers.h) over two running workers,
// its governor's loop never run (no tick changes the count): what it tells
// the workers when it starts. All four clients start on the second worker,
// on socketpairs.
TEST_F(WorkerTest, ActiveWorkersAreEveryWorkerFixedOrOneThatTakesEveryClient) {
  FakeServer server("tag");
  std::vector<std::unique_ptr<Worker>> workers;
  for (int i = 0; i < 2; ++i) workers.push_back(std::make_unique<Worker>(host_, i, 0));
  host_.workers = {workers[0].get(), workers[1].get()};
  for (auto& w : workers) w->start(topology_for(server.address(), 1));
  std::vector<std::unique_ptr<TestClient>> clients;
  for (int i = 0; i < 4; ++i) clients.push_back(hand_over(*workers[1]));
  ASSERT_TRUE(eventually([&] { return workers[1]->stats().curr_connections.get() == 4; }));
  const auto on = [&](size_t w) { return workers[w]->stats().curr_connections.get(); };
  event_base* base = event_base_new();
  {
    // --fixed-threads: both take new clients (those of unknown CPU, as on
    // a unix socket, in turn).
    ActiveWorkers fixed(base, workers, {0, 1}, true);
    EXPECT_EQ(fixed.active(), 2);
    EXPECT_FALSE(fixed.adaptive());
    std::set<Worker*> picked;
    for (int i = 0; i < 2; ++i) picked.insert(&fixed.pick(-1));
    EXPECT_EQ(picked.size(), 2u);
  }
  {
    // Following the load: one worker at first, which takes every client.
    ActiveWorkers adaptive(base, workers, {0, 1}, false);
    EXPECT_EQ(adaptive.active(), 1);
    EXPECT_TRUE(adaptive.adaptive());
    EXPECT_TRUE(eventually([&] { return on(0) == 4 && on(1) == 0; }))
        << on(0) << " and " << on(1) << " clients";
    for (int cpu : {-1, 0, 1}) EXPECT_EQ(&adaptive.pick(cpu), workers[0].get()) << "cpu " << cpu;
  }
  // Every client is still answered, wherever it went.
  for (auto& c : clients) {
    c->send("get k\r\n");
    EXPECT_EQ(c->read_until("END\r\n"), "VALUE k 0 3\r\ntag\r\nEND\r\n");
  }
  event_base_free(base);
}

}  // namespace
}  // namespace memshard::proxy
