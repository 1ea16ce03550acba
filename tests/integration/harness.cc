#include "harness.h"

#include <fcntl.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <signal.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <stdexcept>
#include <thread>

namespace memshard::testing {

using namespace std::chrono_literals;
using Clock = std::chrono::steady_clock;

uint16_t free_port() {
  int fd = socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  a.sin_port = 0;
  if (bind(fd, reinterpret_cast<sockaddr*>(&a), sizeof(a)) != 0) {
    close(fd);
    throw std::runtime_error("free_port: bind failed");
  }
  socklen_t len = sizeof(a);
  getsockname(fd, reinterpret_cast<sockaddr*>(&a), &len);
  close(fd);
  return ntohs(a.sin_port);
}

TempDir::TempDir() {
  char tmpl[] = "/tmp/memshard-test-XXXXXX";
  if (mkdtemp(tmpl) == nullptr) throw std::runtime_error("mkdtemp failed");
  path_ = tmpl;
}

TempDir::~TempDir() {
  std::error_code ec;
  std::filesystem::remove_all(path_, ec);
}

std::string TempDir::write(const std::string& name, const std::string& text) const {
  std::string p = path_ + "/" + name;
  std::string tmp = p + ".tmp";
  {
    std::ofstream f(tmp, std::ios::binary);
    f << text;
  }
  std::filesystem::rename(tmp, p);  // readers never see half a file
  return p;
}

Process::Process(std::vector<std::string> argv, const std::string& log_file) {
  std::vector<char*> args;
  for (auto& a : argv) args.push_back(a.data());
  args.push_back(nullptr);
  pid_ = fork();
  if (pid_ < 0) throw std::runtime_error("fork failed");
  if (pid_ == 0) {
    if (!log_file.empty()) {
      int fd = open(log_file.c_str(), O_WRONLY | O_CREAT | O_APPEND, 0644);
      if (fd >= 0) {
        dup2(fd, STDOUT_FILENO);
        dup2(fd, STDERR_FILENO);
        close(fd);
      }
    }
    execvp(args[0], args.data());
    _exit(127);
  }
}

Process::~Process() {
  if (pid_ > 0) stop(1000ms);
}

Process::Process(Process&& o) noexcept : pid_(o.pid_), status_(o.status_) { o.pid_ = -1; }

Process& Process::operator=(Process&& o) noexcept {
  if (this != &o) {
    if (pid_ > 0) stop(1000ms);
    pid_ = o.pid_;
    status_ = o.status_;
    o.pid_ = -1;
  }
  return *this;
}

bool Process::running() {
  if (pid_ <= 0) return false;
  int st;
  pid_t r = waitpid(pid_, &st, WNOHANG);
  if (r == pid_) {
    status_ = st;
    pid_ = -1;
    return false;
  }
  return true;
}

void Process::signal(int sig) {
  if (pid_ > 0) kill(pid_, sig);
}

int Process::wait_exit(std::chrono::milliseconds limit) {
  auto deadline = Clock::now() + limit;
  while (Clock::now() < deadline) {
    if (!running()) return status_;
    std::this_thread::sleep_for(5ms);
  }
  return -1;
}

int Process::stop(std::chrono::milliseconds grace) {
  if (pid_ <= 0) return status_;
  kill(pid_, SIGCONT);  // a stopped process cannot act on SIGTERM
  kill(pid_, SIGTERM);
  if (wait_exit(grace) != -1 || pid_ <= 0) return status_;
  kill(pid_, SIGKILL);
  int st = 0;
  waitpid(pid_, &st, 0);
  status_ = st;
  pid_ = -1;
  return status_;
}

namespace {
bool try_connect(const sockaddr* a, socklen_t len, int family) {
  int fd = socket(family, SOCK_STREAM, 0);
  bool ok = ::connect(fd, a, len) == 0;
  close(fd);
  return ok;
}

sockaddr_in loopback(uint16_t port) {
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  a.sin_port = htons(port);
  return a;
}

sockaddr_un unix_address(const std::string& path) {
  sockaddr_un a{};
  a.sun_family = AF_UNIX;
  std::strncpy(a.sun_path, path.c_str(), sizeof(a.sun_path) - 1);
  return a;
}
}  // namespace

bool wait_listening(uint16_t port, std::chrono::milliseconds limit) {
  auto deadline = Clock::now() + limit;
  sockaddr_in a = loopback(port);
  while (Clock::now() < deadline) {
    if (try_connect(reinterpret_cast<sockaddr*>(&a), sizeof(a), AF_INET)) return true;
    std::this_thread::sleep_for(10ms);
  }
  return false;
}

bool wait_listening(const std::string& unix_path, std::chrono::milliseconds limit) {
  auto deadline = Clock::now() + limit;
  sockaddr_un a = unix_address(unix_path);
  while (Clock::now() < deadline) {
    if (try_connect(reinterpret_cast<sockaddr*>(&a), sizeof(a), AF_UNIX)) return true;
    std::this_thread::sleep_for(10ms);
  }
  return false;
}

Memcached::Memcached(uint16_t port, std::vector<std::string> extra_args)
    : port_(port == 0 ? free_port() : port), extra_args_(std::move(extra_args)) {
  launch();
}

void Memcached::launch() {
  std::vector<std::string> argv = {"memcached", "-l", "127.0.0.1", "-p", std::to_string(port_),
                                   "-U", "0", "-t", "1", "-m", "64"};
  if (geteuid() == 0) {
    argv.push_back("-u");
    argv.push_back("root");
  }
  argv.insert(argv.end(), extra_args_.begin(), extra_args_.end());
  process_ = Process(argv);
  if (!wait_listening(port_)) throw std::runtime_error("memcached did not start on " + address());
}

void Memcached::restart() {
  process_.stop();
  launch();
}

uint64_t Memcached::stat(const std::string& name) const {
  RawClient c(port_);
  std::string all = c.roundtrip("stats\r\n", "END\r\n");
  std::string needle = "STAT " + name + " ";
  size_t at = all.find(needle);
  if (at == std::string::npos) throw std::runtime_error("no stat " + name);
  return std::stoull(all.substr(at + needle.size()));
}

std::string memshard_binary() {
  const char* env = std::getenv("MEMSHARD_BINARY");
  return env != nullptr ? env : MEMSHARD_BINARY_PATH;
}

Memshard::Memshard(const std::string& config_path, std::vector<std::string> extra_args,
                   uint16_t wait_port, const std::string& log_file) {
  std::vector<std::string> argv = {memshard_binary(), "-c", config_path};
  argv.insert(argv.end(), extra_args.begin(), extra_args.end());
  process_ = Process(argv, log_file);
  if (wait_port != 0 && !wait_listening(wait_port)) {
    throw std::runtime_error("memshard did not start listening on port " +
                             std::to_string(wait_port));
  }
}

RawClient::RawClient(uint16_t port) {
  fd_ = socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in a = loopback(port);
  if (::connect(fd_, reinterpret_cast<sockaddr*>(&a), sizeof(a)) != 0) {
    close(fd_);
    throw std::runtime_error("cannot connect to port " + std::to_string(port));
  }
  int one = 1;
  setsockopt(fd_, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
}

RawClient::RawClient(const std::string& unix_path) {
  fd_ = socket(AF_UNIX, SOCK_STREAM, 0);
  sockaddr_un a = unix_address(unix_path);
  if (::connect(fd_, reinterpret_cast<sockaddr*>(&a), sizeof(a)) != 0) {
    close(fd_);
    throw std::runtime_error("cannot connect to " + unix_path);
  }
}

RawClient::~RawClient() {
  if (fd_ >= 0) close(fd_);
}

void RawClient::send(std::string_view bytes) {
  while (!bytes.empty()) {
    ssize_t n = ::send(fd_, bytes.data(), bytes.size(), MSG_NOSIGNAL);
    if (n <= 0) throw std::runtime_error("send failed");
    bytes.remove_prefix(static_cast<size_t>(n));
  }
}

namespace {
// Appends what arrives within the time left; false on EOF or timeout.
bool read_some(int fd, std::string& out, Clock::time_point deadline) {
  auto left = std::chrono::duration_cast<std::chrono::milliseconds>(deadline - Clock::now());
  if (left.count() <= 0) return false;
  pollfd p{fd, POLLIN, 0};
  if (poll(&p, 1, static_cast<int>(left.count())) <= 0) return false;
  char buf[65536];
  ssize_t n = recv(fd, buf, sizeof(buf), 0);
  if (n <= 0) return false;
  out.append(buf, static_cast<size_t>(n));
  return true;
}
}  // namespace

std::string RawClient::read_until(std::string_view suffix, std::chrono::milliseconds limit) {
  std::string out;
  auto deadline = Clock::now() + limit;
  while (!std::string_view(out).ends_with(suffix)) {
    if (!read_some(fd_, out, deadline)) break;
  }
  return out;
}

std::string RawClient::read_exact(size_t n, std::chrono::milliseconds limit) {
  std::string out;
  auto deadline = Clock::now() + limit;
  while (out.size() < n) {
    if (!read_some(fd_, out, deadline)) break;
  }
  return out;
}

std::string RawClient::roundtrip(std::string_view request, std::string_view suffix) {
  send(request);
  return read_until(suffix);
}

std::string RawClient::read_for(std::chrono::milliseconds limit) {
  std::string out;
  auto deadline = Clock::now() + limit;
  while (Clock::now() < deadline) {
    if (!read_some(fd_, out, deadline)) break;
  }
  return out;
}

bool RawClient::closed_by_peer(std::chrono::milliseconds limit) {
  auto deadline = Clock::now() + limit;
  while (Clock::now() < deadline) {
    auto left = std::chrono::duration_cast<std::chrono::milliseconds>(deadline - Clock::now());
    pollfd p{fd_, POLLIN, 0};
    if (poll(&p, 1, static_cast<int>(std::max<int64_t>(1, left.count()))) <= 0) return false;
    char buf[4096];
    ssize_t n = recv(fd_, buf, sizeof(buf), 0);
    if (n == 0) return true;
    if (n < 0) return errno == ECONNRESET;
  }
  return false;
}

}  // namespace memshard::testing
