#include "failure_util.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cstdio>
#include <fstream>
#include <iostream>
#include <iterator>
#include <sstream>
#include <stdexcept>

namespace memshard::testing::failures {

using namespace std::chrono_literals;

uint64_t rss_kib(pid_t pid) {
  std::ifstream f("/proc/" + std::to_string(pid) + "/status");
  std::string line;
  while (std::getline(f, line)) {
    if (line.starts_with("VmRSS:")) return std::stoull(line.substr(6));
  }
  return 0;
}

bool sanitizer_build(pid_t pid) {
  std::ifstream exe("/proc/" + std::to_string(pid) + "/exe", std::ios::binary);
  std::string bytes((std::istreambuf_iterator<char>(exe)), std::istreambuf_iterator<char>());
  return bytes.find("__asan_init") != std::string::npos;
}

std::map<std::string, uint64_t> proxy_stats(uint16_t port) {
  std::map<std::string, uint64_t> out;
  try {
    RawClient c(port);
    std::string all = c.roundtrip("stats\r\n", "END\r\n");
    std::istringstream lines(all);
    std::string line;
    while (std::getline(lines, line)) {
      if (!line.empty() && line.back() == '\r') line.pop_back();
      std::istringstream f(line);
      std::string stat, name, value;
      if (!(f >> stat >> name >> value) || stat != "STAT") continue;
      try {
        out[name] = std::stoull(value);
      } catch (const std::exception&) {
        // non-numeric (version)
      }
    }
  } catch (const std::exception&) {
  }
  return out;
}

uint64_t proxy_stat(uint16_t port, const std::string& name) {
  auto all = proxy_stats(port);
  auto it = all.find(name);
  return it == all.end() ? 0 : it->second;
}

bool eventually(const std::function<bool()>& pred, std::chrono::milliseconds limit) {
  auto deadline = Clock::now() + limit;
  while (true) {
    if (pred()) return true;
    if (Clock::now() >= deadline) return false;
    std::this_thread::sleep_for(20ms);
  }
}

bool proxy_settled(uint16_t port, std::chrono::milliseconds limit) {
  return eventually(
      [&] {
        if (proxy_stat(port, "curr_connections") != 1) return false;
        try {
          RawClient c(port);
          std::istringstream lines(c.roundtrip("stats servers\r\n", "END\r\n"));
          for (std::string line; std::getline(lines, line);) {
            const size_t at = line.find(":out_queue ");
            if (at != std::string::npos && line.compare(at + 11, 2, "0\r") != 0) return false;
          }
          return true;
        } catch (const std::exception&) {
          return false;
        }
      },
      limit);
}

Proxy::Proxy(const TempDir& dir, const std::vector<std::string>& servers, Directives directives,
             std::vector<std::string> extra_args, std::vector<std::string> launcher) {
  port_ = free_port();
  PoolSpec pool;
  pool.name = "main";
  pool.listen = "127.0.0.1:" + std::to_string(port_);
  pool.directives = std::move(directives);
  pool.servers = servers;
  std::string tag = std::to_string(port_);
  config_ = dir.write("memshard-" + tag + ".yml", pool_yaml(pool));
  log_ = dir.path() + "/memshard-" + tag + ".log";
  memshard_ =
      std::make_unique<Memshard>(config_, std::move(extra_args), port_, log_, std::move(launcher));
}

void expect_no_sanitizer_report(const std::string& log) {
  for (const char* marker : {"AddressSanitizer", "LeakSanitizer", "runtime error:"}) {
    size_t at = log.find(marker);
    if (at != std::string::npos) {
      ADD_FAILURE() << "sanitizer report in memshard's log:\n"
                    << log.substr(at > 200 ? at - 200 : 0, 6000);
      return;
    }
  }
}

Proxy::~Proxy() {
  memshard_.reset();  // SIGTERM, so a sanitizer build writes its reports
  expect_no_sanitizer_report(log_tail(1 << 20));
  dump_log_on_failure();
}

std::string Proxy::log_tail(size_t bytes) const {
  std::ifstream log(log_);
  std::stringstream all;
  all << log.rdbuf();
  std::string text = all.str();
  if (text.size() > bytes) text = text.substr(text.size() - bytes);
  return text;
}

void Proxy::dump_log_on_failure() const {
  if (!::testing::Test::HasFailure()) return;
  std::cerr << "---- memshard log (tail) ----\n" << log_tail() << "\n----\n";
}

std::vector<std::vector<std::string>> keys_by_address(const std::string& config,
                                                      const std::vector<std::string>& addresses,
                                                      size_t per_server,
                                                      const std::string& prefix) {
  std::vector<std::vector<std::string>> out(addresses.size());
  for (size_t round = 0; round < 40; ++round) {
    std::vector<std::string> candidates;
    // The varying part first: fnv1a_64 spreads keys that differ only at
    // their end poorly, and with some port sets all of them would land on
    // the same few servers.
    for (size_t i = 0; i < per_server * addresses.size() * 4 + 16; ++i) {
      candidates.push_back(std::to_string(i) + "_" + std::to_string(round) + "_" + prefix);
    }
    std::string error;
    std::vector<std::string> owners = ring_lookup(config, candidates, "", &error);
    if (owners.size() != candidates.size()) {
      ADD_FAILURE() << "ring lookup failed: " << error;
      return out;
    }
    for (size_t i = 0; i < owners.size(); ++i) {
      for (size_t s = 0; s < addresses.size(); ++s) {
        if (owners[i] == addresses[s] && out[s].size() < per_server)
          out[s].push_back(candidates[i]);
      }
    }
    bool done = true;
    for (const auto& v : out) done = done && v.size() == per_server;
    if (done) return out;
  }
  ADD_FAILURE() << "could not find " << per_server << " keys for every server";
  return out;
}

std::vector<std::vector<std::string>> keys_by_server(const std::string& config, Fleet& fleet,
                                                     size_t per_server, const std::string& prefix) {
  std::vector<std::string> addresses;
  for (size_t i = 0; i < fleet.size(); ++i) addresses.push_back(fleet[i].address());
  return keys_by_address(config, addresses, per_server, prefix);
}

size_t ReplyReader::complete_reply() const {
  std::string_view b(buf_);
  size_t at = 0;
  while (true) {
    size_t eol = b.find("\r\n", at);
    if (eol == std::string_view::npos) return 0;
    std::string_view line = b.substr(at, eol - at);
    if (at == 0 && line.starts_with("VA ")) {
      // Meta: VA <bytes> <flags>*, its data, and nothing more.
      std::istringstream fields{std::string(line.substr(3))};
      uint64_t bytes = 0;
      if (!(fields >> bytes)) return eol + 2;
      return b.size() < eol + 2 + bytes + 2 ? 0 : eol + 2 + bytes + 2;
    }
    if (!line.starts_with("VALUE ")) {
      // A line alone is a reply; after VALUE blocks, it is their END (or
      // whatever a broken server sent there).
      return eol + 2;
    }
    // VALUE <key> <flags> <bytes> [<cas>]
    std::istringstream fields{std::string(line.substr(6))};
    std::string key;
    uint64_t flags = 0, bytes = 0;
    if (!(fields >> key >> flags >> bytes)) return eol + 2;
    size_t next = eol + 2 + bytes + 2;
    if (b.size() < next) return 0;
    at = next;
  }
}

std::string ReplyReader::next(std::chrono::milliseconds limit) {
  auto deadline = Clock::now() + limit;
  while (true) {
    if (size_t n = complete_reply(); n > 0) {
      std::string reply = buf_.substr(0, n);
      buf_.erase(0, n);
      return reply;
    }
    auto left = std::chrono::duration_cast<std::chrono::milliseconds>(deadline - Clock::now());
    if (left.count() <= 0) return "";
    pollfd p{c_.fd(), POLLIN, 0};
    if (poll(&p, 1, static_cast<int>(left.count())) <= 0) continue;
    char chunk[65536];
    ssize_t got = recv(c_.fd(), chunk, sizeof(chunk), 0);
    if (got <= 0) return "";
    buf_.append(chunk, static_cast<size_t>(got));
  }
}

// ------------------------------------------------------------ fake server

FakeServer::FakeServer(Handler handler) : handler_(std::move(handler)) {
  // Close-on-exec, as every test socket: a process a test starts must not
  // hold a copy that keeps a connection open after the test closes it.
  listen_fd_ = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  int one = 1;
  setsockopt(listen_fd_, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  a.sin_port = 0;
  if (bind(listen_fd_, reinterpret_cast<sockaddr*>(&a), sizeof(a)) != 0 ||
      listen(listen_fd_, 64) != 0) {
    close(listen_fd_);
    throw std::runtime_error("fake server: bind/listen failed");
  }
  socklen_t len = sizeof(a);
  getsockname(listen_fd_, reinterpret_cast<sockaddr*>(&a), &len);
  port_ = ntohs(a.sin_port);
  acceptor_ = std::thread([this] { accept_loop(); });
}

FakeServer::~FakeServer() {
  stop_ = true;
  acceptor_.join();
  close(listen_fd_);
  std::vector<std::thread> conns;
  {
    std::lock_guard<std::mutex> lock(mu_);
    conns.swap(conns_);
  }
  for (auto& t : conns) t.join();
}

void FakeServer::accept_loop() {
  while (!stop_) {
    pollfd p{listen_fd_, POLLIN, 0};
    if (poll(&p, 1, 50) <= 0) continue;
    int fd = accept4(listen_fd_, nullptr, nullptr, SOCK_CLOEXEC);
    if (fd < 0) continue;
    ++accepted_;
    std::lock_guard<std::mutex> lock(mu_);
    conns_.emplace_back([this, fd] {
      try {
        handler_(fd, *this);
      } catch (const std::exception&) {
      }
      close(fd);
    });
  }
}

bool FakeServer::read_line(int fd, std::string& buffered, std::string& line,
                           std::chrono::milliseconds limit) {
  auto deadline = Clock::now() + limit;
  while (true) {
    size_t eol = buffered.find('\n');
    if (eol != std::string::npos) {
      line = buffered.substr(0, eol + 1);
      buffered.erase(0, eol + 1);
      return true;
    }
    if (stop_ || Clock::now() >= deadline) return false;
    pollfd p{fd, POLLIN, 0};
    if (poll(&p, 1, 50) <= 0) continue;
    char buf[8192];
    ssize_t n = recv(fd, buf, sizeof(buf), 0);
    if (n <= 0) return false;
    buffered.append(buf, static_cast<size_t>(n));
  }
}

bool FakeRequest::has(std::string_view word) const {
  for (size_t i = 2; i < words.size(); ++i) {
    if (words[i] == word) return true;
  }
  return false;
}

std::string FakeRequest::flag(char flag) const {
  for (size_t i = 2; i < words.size(); ++i) {
    if (!words[i].empty() && words[i][0] == flag) return words[i];
  }
  return {};
}

bool FakeServer::read_request(int fd, std::string& buffered, FakeRequest& request,
                              std::chrono::milliseconds limit) {
  auto deadline = Clock::now() + limit;
  std::string line;
  if (!read_line(fd, buffered, line, limit)) return false;
  request = FakeRequest{};
  while (!line.empty() && (line.back() == '\n' || line.back() == '\r')) line.pop_back();
  request.line = line;
  std::istringstream words(line);
  for (std::string w; words >> w;) request.words.push_back(w);
  const std::string verb = request.verb();
  size_t length_word = 0;
  if (verb == "ms") {
    length_word = 2;
  } else if (verb == "set" || verb == "add" || verb == "replace" || verb == "append" ||
             verb == "prepend" || verb == "cas") {
    length_word = 4;
  }
  if (length_word == 0) return true;
  if (request.words.size() <= length_word) return true;  // malformed: no data
  const size_t n = std::stoul(request.words[length_word]) + 2;
  while (buffered.size() < n) {
    if (stop_ || Clock::now() >= deadline) return false;
    pollfd p{fd, POLLIN, 0};
    if (poll(&p, 1, 50) <= 0) continue;
    char buf[8192];
    ssize_t got = recv(fd, buf, sizeof(buf), 0);
    if (got <= 0) return false;
    buffered.append(buf, static_cast<size_t>(got));
  }
  request.data = buffered.substr(0, n - 2);
  buffered.erase(0, n);
  return true;
}

void FakeServer::send_all(int fd, std::string_view bytes) {
  while (!bytes.empty()) {
    ssize_t n = ::send(fd, bytes.data(), bytes.size(), MSG_NOSIGNAL);
    if (n <= 0) return;
    bytes.remove_prefix(static_cast<size_t>(n));
  }
}

}  // namespace memshard::testing::failures
