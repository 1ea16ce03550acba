#include "harness.h"

#include <arpa/inet.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <openssl/err.h>
#include <openssl/ssl.h>
#include <poll.h>
#include <signal.h>
#include <sys/file.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <mutex>
#include <random>
#include <set>
#include <sstream>
#include <stdexcept>
#include <thread>
#include <tuple>

namespace memshard::testing {

using namespace std::chrono_literals;
using Clock = std::chrono::steady_clock;

namespace {
bool bindable(uint16_t port) {
  int fd = socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  a.sin_port = htons(port);
  bool ok = bind(fd, reinterpret_cast<sockaddr*>(&a), sizeof(a)) == 0;
  close(fd);
  return ok;
}
}  // namespace

// Test processes run in parallel (ctest -j), and a port that is free when
// chosen may be taken by another test before its server binds it. So ports
// come from below the kernel's ephemeral range (which outgoing connections
// draw from) and each is claimed with an flock on a file named after it,
// held until this process exits: two harness users never get the same port.
std::string printable(std::string_view s, size_t max, bool break_lines) {
  std::string out;
  auto emit = [&](std::string_view part) {
    for (unsigned char ch : part) {
      if (ch == '\r') {
        out += "\\r";
      } else if (ch == '\n') {
        out += break_lines ? "\\n\n" : "\\n";
      } else if (ch < 0x20 || ch >= 0x7f) {
        char buf[8];
        snprintf(buf, sizeof(buf), "\\x%02x", ch);
        out += buf;
      } else {
        out.push_back(static_cast<char>(ch));
      }
    }
  };
  if (s.size() <= max) {
    emit(s);
  } else {
    const char* gap = break_lines ? "\n" : "";
    emit(s.substr(0, max / 2));
    out += gap + std::string("[... ") + std::to_string(s.size() - max) + " bytes ...]" + gap;
    emit(s.substr(s.size() - max / 2));
  }
  return out;
}

namespace {
// Ports that a process started without a port option takes by itself: a
// memshard (or nutcracker) run without -s binds the stats port 22222, and
// one run from an example config listens on 22121/22122. A test handed one
// of them could find another test's process there once it had checked the
// port was free, and then talk to the wrong memshard (CI saw a test read
// another memshard's /metrics that way).
bool well_known(uint16_t port) {
  return port == 22121 || port == 22122 || port == 22222 || (port >= 21211 && port <= 21213);
}
}  // namespace

uint16_t free_port() {
  static std::mutex mu;
  static std::vector<int> claims;  // lock files kept open: the claims last
  static std::mt19937 rng(
      static_cast<uint32_t>(std::random_device{}() ^ static_cast<uint32_t>(getpid()) ^
                            static_cast<uint32_t>(Clock::now().time_since_epoch().count())));
  std::lock_guard<std::mutex> lock(mu);
  const std::string dir = "/tmp/memshard-test-ports";
  mkdir(dir.c_str(), 0777);
  chmod(dir.c_str(), 01777);
  for (int attempt = 0; attempt < 2000; ++attempt) {
    auto port = static_cast<uint16_t>(20000 + rng() % 12000);
    if (well_known(port)) continue;
    std::string file = dir + "/" + std::to_string(port);
    int fd = open(file.c_str(), O_RDWR | O_CREAT | O_CLOEXEC, 0666);
    if (fd < 0) continue;
    if (flock(fd, LOCK_EX | LOCK_NB) != 0 || !bindable(port)) {
      close(fd);
      continue;
    }
    claims.push_back(fd);
    return port;
  }
  throw std::runtime_error("free_port: no free port found");
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
    // A test that crashes or is killed by its time limit must not leave
    // servers behind (they would hold ctest's output pipe open forever).
    prctl(PR_SET_PDEATHSIG, SIGKILL);
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

Process::Process(Process&& o) noexcept : pid_(o.pid_), status_(o.status_) {
  o.pid_ = -1;
}

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

bool Process::suspend(std::chrono::milliseconds limit) {
  if (pid_ <= 0) return false;
  kill(pid_, SIGSTOP);
  auto deadline = Clock::now() + limit;
  const std::string tasks = "/proc/" + std::to_string(pid_) + "/task";
  while (Clock::now() < deadline) {
    bool all = true;
    std::error_code ec;
    for (const auto& t : std::filesystem::directory_iterator(tasks, ec)) {
      std::ifstream st(t.path() / "stat");
      std::string line;
      std::getline(st, line);
      size_t paren = line.rfind(')');  // "pid (comm) S ..."
      if (paren == std::string::npos || paren + 2 >= line.size()) continue;
      char state = line[paren + 2];
      if (state != 'T' && state != 't') all = false;
    }
    if (ec) return false;
    if (all) return true;
    std::this_thread::sleep_for(1ms);
  }
  return false;
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

bool wait_listening_at(const std::string& host, uint16_t port, std::chrono::milliseconds limit) {
  auto deadline = Clock::now() + limit;
  sockaddr_in a = loopback(port);
  if (inet_pton(AF_INET, host.c_str(), &a.sin_addr) != 1) return false;
  while (Clock::now() < deadline) {
    if (try_connect(reinterpret_cast<sockaddr*>(&a), sizeof(a), AF_INET)) return true;
    std::this_thread::sleep_for(10ms);
  }
  return false;
}

Memcached::Memcached(uint16_t port, std::vector<std::string> extra_args, std::string host)
    : port_(port == 0 ? free_port() : port),
      extra_args_(std::move(extra_args)),
      host_(std::move(host)) {
  launch();
}

void Memcached::launch() {
  std::vector<std::string> argv = {"memcached", "-l", host_, "-p", std::to_string(port_), "-U", "0",
                                   "-t",        "1",  "-m",  "64"};
  if (geteuid() == 0) {
    argv.push_back("-u");
    argv.push_back("root");
  }
  argv.insert(argv.end(), extra_args_.begin(), extra_args_.end());
  process_ = Process(argv);
  if (!wait_listening_at(host_, port_)) {
    throw std::runtime_error("memcached did not start on " + address());
  }
  // What answers must be our memcached, not another one on the same port.
  if (stat("pid") != static_cast<uint64_t>(process_.pid())) {
    throw std::runtime_error("another process listens on " + address());
  }
}

Memcached::~Memcached() {
  if (process_.running()) process_.signal(SIGKILL);
}

void Memcached::restart() {
  if (process_.running()) process_.signal(SIGKILL);
  process_.stop();
  launch();
}

size_t count_of(std::string_view text, std::string_view needle) {
  size_t n = 0;
  for (size_t at = text.find(needle); at != std::string_view::npos;
       at = text.find(needle, at + needle.size())) {
    ++n;
  }
  return n;
}

std::vector<TcpSocket> tcp_sockets_of(pid_t pid) {
  const std::string proc = "/proc/" + std::to_string(pid);
  std::set<std::string> inodes;
  std::error_code ec;
  for (std::filesystem::directory_iterator it(proc + "/fd", ec), end; !ec && it != end;
       it.increment(ec)) {
    std::error_code link_ec;
    std::string target = std::filesystem::read_symlink(it->path(), link_ec).string();
    if (!link_ec && target.rfind("socket:[", 0) == 0) {
      inodes.insert(target.substr(8, target.size() - 9));
    }
  }
  // Lines of "sl local remote st tx:rx tr:when retrnsmt uid timeout inode
  // ...", addresses as hex ADDRESS:PORT; the first line is the header.
  auto port_of = [](const std::string& address) {
    size_t colon = address.rfind(':');
    return static_cast<uint16_t>(std::stoul(address.substr(colon + 1), nullptr, 16));
  };
  std::vector<TcpSocket> out;
  for (const char* table : {"/net/tcp", "/net/tcp6"}) {
    std::ifstream in(proc + table);
    std::string line;
    std::getline(in, line);
    while (std::getline(in, line)) {
      std::istringstream f(line);
      std::vector<std::string> fields;
      for (std::string w; f >> w;) fields.push_back(w);
      if (fields.size() < 10 || !inodes.contains(fields[9])) continue;
      if (fields[1].find(':') == std::string::npos || fields[2].find(':') == std::string::npos)
        continue;
      TcpSocket s;
      s.local_port = port_of(fields[1]);
      s.remote_address = fields[2].substr(0, fields[2].rfind(':'));
      s.remote_port = port_of(fields[2]);
      s.state = static_cast<int>(std::stoul(fields[3], nullptr, 16));
      out.push_back(s);
    }
  }
  return out;
}

std::optional<std::string> stat_value(std::string_view stats_reply, std::string_view name) {
  const std::string prefix = "STAT " + std::string(name) + " ";
  for (size_t at = 0; at < stats_reply.size();) {
    size_t end = stats_reply.find("\r\n", at);
    if (end == std::string_view::npos) end = stats_reply.size();
    std::string_view line = stats_reply.substr(at, end - at);
    if (line.starts_with(prefix)) return std::string(line.substr(prefix.size()));
    at = end + 2;
  }
  return std::nullopt;
}

uint64_t Memcached::stat(const std::string& name) const {
  RawClient c(host_, port_);
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
                   uint16_t wait_port, const std::string& log_file,
                   std::vector<std::string> launcher) {
  std::vector<std::string> argv = std::move(launcher);
  argv.insert(argv.end(), {memshard_binary(), "-c", config_path});
  argv.insert(argv.end(), extra_args.begin(), extra_args.end());
  process_ = Process(argv, log_file);
  if (wait_port != 0 && !wait_listening(wait_port)) {
    // What it said, and whether it is still there, for the failure message.
    std::string said;
    if (!log_file.empty()) {
      std::ifstream log(log_file);
      said.assign(std::istreambuf_iterator<char>(log), std::istreambuf_iterator<char>());
      if (said.size() > 3000) said = said.substr(said.size() - 3000);
    }
    throw std::runtime_error(
        "memshard did not start listening on port " + std::to_string(wait_port) +
        (process_.running() ? " (still running)" : " (exited)") + "; its log:\n" + said);
  }
}

namespace {
SSL_CTX* raw_client_tls = nullptr;
}  // namespace

TlsFiles make_tls_files(const TempDir& dir) {
  const std::string& d = dir.path();
  dir.write("san.ext", "subjectAltName=DNS:localhost,IP:127.0.0.1\n");
  for (const std::string& args : {
           std::string("req -x509 -newkey ec -pkeyopt ec_paramgen_curve:P-256 -nodes -keyout "
                       "ca.key -out ca.crt -days 2 -subj /CN=test-ca"),
           std::string("req -newkey ec -pkeyopt ec_paramgen_curve:P-256 -nodes -keyout tls.key "
                       "-out tls.csr -subj /CN=localhost"),
           std::string("x509 -req -in tls.csr -CA ca.crt -CAkey ca.key -CAcreateserial -days 2 "
                       "-extfile san.ext -out tls.crt"),
       }) {
    CommandResult r = run_command({"sh", "-c", "cd '" + d + "' && openssl " + args});
    if (r.exit_code != 0) throw std::runtime_error("openssl " + args + ": " + r.err);
  }
  return TlsFiles{d + "/ca.crt", d + "/tls.crt", d + "/tls.key"};
}

void raw_clients_use_tls(const std::string& ca_file) {
  signal(SIGPIPE, SIG_IGN);  // SSL_write writes without MSG_NOSIGNAL
  if (raw_client_tls != nullptr) SSL_CTX_free(raw_client_tls);
  raw_client_tls = nullptr;
  if (ca_file.empty()) return;
  raw_client_tls = SSL_CTX_new(TLS_client_method());
  if (SSL_CTX_load_verify_locations(raw_client_tls, ca_file.c_str(), nullptr) != 1)
    throw std::runtime_error("cannot load " + ca_file);
  SSL_CTX_set_verify(raw_client_tls, SSL_VERIFY_PEER, nullptr);
  // A server that closes without close_notify (as memcached does) ends the
  // stream, as a plain close would.
  SSL_CTX_set_options(raw_client_tls, SSL_OP_IGNORE_UNEXPECTED_EOF);
  // TLS 1.2: a 1.3 server sends its session tickets after the handshake, and
  // a blocking SSL_read woken by one waits for application data that a case
  // which leaves the server waiting never brings. (tls_test.py covers 1.3.)
  SSL_CTX_set_max_proto_version(raw_client_tls, TLS1_2_VERSION);
}

void RawClient::start_tls_if_asked() {
  if (raw_client_tls == nullptr) return;
  ssl_ = SSL_new(raw_client_tls);
  SSL_set_fd(ssl_, fd_);
  if (SSL_connect(ssl_) != 1) {
    ERR_clear_error();
    throw std::runtime_error("TLS handshake failed");
  }
}

ssize_t RawClient::recv_some(char* buf, size_t n) {
  if (ssl_ == nullptr) return recv(fd_, buf, n, 0);
  int got = SSL_read(ssl_, buf, static_cast<int>(n));
  if (got > 0) return got;
  int e = SSL_get_error(ssl_, got);
  ERR_clear_error();
  if (e == SSL_ERROR_ZERO_RETURN) return 0;
  if (e == SSL_ERROR_SYSCALL && errno == 0) return 0;
  if (e == SSL_ERROR_SSL) errno = ECONNRESET;
  return -1;
}

bool RawClient::has_pending() const {
  return ssl_ != nullptr && SSL_pending(ssl_) > 0;
}

RawClient::RawClient(uint16_t port) {
  fd_ = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  sockaddr_in a = loopback(port);
  if (::connect(fd_, reinterpret_cast<sockaddr*>(&a), sizeof(a)) != 0) {
    close(fd_);
    throw std::runtime_error("cannot connect to port " + std::to_string(port));
  }
  int one = 1;
  setsockopt(fd_, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
  start_tls_if_asked();
}

RawClient::RawClient(const std::string& host, uint16_t port) {
  fd_ = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  sockaddr_in a = loopback(port);
  if (inet_pton(AF_INET, host.c_str(), &a.sin_addr) != 1 ||
      ::connect(fd_, reinterpret_cast<sockaddr*>(&a), sizeof(a)) != 0) {
    close(fd_);
    throw std::runtime_error("cannot connect to " + host + ":" + std::to_string(port));
  }
  int one = 1;
  setsockopt(fd_, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
  start_tls_if_asked();
}

RawClient::RawClient(const std::string& unix_path) {
  fd_ = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
  sockaddr_un a = unix_address(unix_path);
  if (::connect(fd_, reinterpret_cast<sockaddr*>(&a), sizeof(a)) != 0) {
    close(fd_);
    throw std::runtime_error("cannot connect to " + unix_path);
  }
}

RawClient::~RawClient() {
  if (ssl_ != nullptr) SSL_free(ssl_);
  if (fd_ >= 0) close(fd_);
}

void RawClient::send(std::string_view bytes) {
  bool sent_any = false;
  while (!bytes.empty()) {
    // TLS: a record ends at every line's end, so memcached -Z reads each
    // request whole; its TLS leaves what OpenSSL holds past a request
    // unread until the socket is readable again (docs/tls.md), and a
    // request that ends mid-record would wait for ever.
    size_t piece = std::min(bytes.find('\n') + 1, bytes.size());
    ssize_t n = ssl_ != nullptr ? SSL_write(ssl_, bytes.data(), static_cast<int>(piece))
                                : ::send(fd_, bytes.data(), bytes.size(), MSG_NOSIGNAL);
    // A peer that closed after an earlier line (quit) refuses the next
    // record, where a plain send would have handed the kernel all at once.
    if (n <= 0 && ssl_ != nullptr && sent_any) {
      ERR_clear_error();
      return;
    }
    if (n <= 0) throw std::runtime_error("send failed");
    sent_any = true;
    bytes.remove_prefix(static_cast<size_t>(n));
  }
}

namespace {
// Appends what arrives within the time left; false on EOF or timeout.
bool read_some(RawClient& c, std::string& out, Clock::time_point deadline) {
  auto left = std::chrono::duration_cast<std::chrono::milliseconds>(deadline - Clock::now());
  if (left.count() <= 0) return false;
  pollfd p{c.fd(), POLLIN, 0};
  if (!c.has_pending() && poll(&p, 1, static_cast<int>(left.count())) <= 0) return false;
  char buf[65536];
  ssize_t n = c.recv_some(buf, sizeof(buf));
  if (n <= 0) return false;
  out.append(buf, static_cast<size_t>(n));
  return true;
}
}  // namespace

std::string RawClient::read_until(std::string_view suffix, std::chrono::milliseconds limit) {
  std::string out;
  auto deadline = Clock::now() + limit;
  while (!std::string_view(out).ends_with(suffix)) {
    if (!read_some(*this, out, deadline)) break;
  }
  return out;
}

std::string RawClient::read_count(std::string_view token, size_t count,
                                  std::chrono::milliseconds limit) {
  std::string out;
  auto deadline = Clock::now() + limit;
  size_t found = 0, scan = 0;
  while (found < count) {
    if (!read_some(*this, out, deadline)) break;
    size_t at;
    while (found < count && (at = out.find(token, scan)) != std::string::npos) {
      ++found;
      scan = at + token.size();
    }
  }
  return out;
}

std::string RawClient::read_exact(size_t n, std::chrono::milliseconds limit) {
  std::string out;
  auto deadline = Clock::now() + limit;
  while (out.size() < n) {
    if (!read_some(*this, out, deadline)) break;
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
    if (!read_some(*this, out, deadline)) break;
  }
  return out;
}

void RawClient::shutdown_write() {
  ::shutdown(fd_, SHUT_WR);
}

bool RawClient::closed_by_peer(std::chrono::milliseconds limit) {
  auto deadline = Clock::now() + limit;
  while (Clock::now() < deadline) {
    auto left = std::chrono::duration_cast<std::chrono::milliseconds>(deadline - Clock::now());
    pollfd p{fd_, POLLIN, 0};
    if (!has_pending() && poll(&p, 1, static_cast<int>(std::max<int64_t>(1, left.count()))) <= 0)
      return false;
    char buf[4096];
    ssize_t n = recv_some(buf, sizeof(buf));
    if (n == 0) return true;
    if (n < 0) return errno == ECONNRESET;
  }
  return false;
}

// ------------------------------------------------------------------ helpers

size_t read_until_closed(int fd, int& end) {
  size_t bytes = 0;
  char buf[65536];
  for (;;) {
    const ssize_t n = recv(fd, buf, sizeof(buf), 0);
    if (n > 0) {
      bytes += static_cast<size_t>(n);
    } else if (n == 0 || errno != EINTR) {
      end = n == 0 ? 0 : errno;
      return bytes;
    }
  }
}

namespace {
void set_nonblocking(int fd) {
  fcntl(fd, F_SETFL, fcntl(fd, F_GETFL) | O_NONBLOCK);
}
}  // namespace

CommandResult run_command(const std::vector<std::string>& argv, std::string_view input,
                          std::chrono::milliseconds limit) {
  // A command may exit before it reads its input (one that refuses its
  // options at once): the write to its stdin then fails with EPIPE, which
  // the loop below handles, instead of killing the test with SIGPIPE.
  signal(SIGPIPE, SIG_IGN);
  CommandResult r;
  int in_pipe[2], out_pipe[2], err_pipe[2];
  if (pipe(in_pipe) != 0 || pipe(out_pipe) != 0 || pipe(err_pipe) != 0) {
    throw std::runtime_error("pipe failed");
  }
  std::vector<std::string> copy = argv;
  std::vector<char*> args;
  for (auto& a : copy) args.push_back(a.data());
  args.push_back(nullptr);
  pid_t pid = fork();
  if (pid < 0) throw std::runtime_error("fork failed");
  if (pid == 0) {
    dup2(in_pipe[0], STDIN_FILENO);
    dup2(out_pipe[1], STDOUT_FILENO);
    dup2(err_pipe[1], STDERR_FILENO);
    for (int fd : {in_pipe[0], in_pipe[1], out_pipe[0], out_pipe[1], err_pipe[0], err_pipe[1]}) {
      close(fd);
    }
    execvp(args[0], args.data());
    _exit(127);
  }
  close(in_pipe[0]);
  close(out_pipe[1]);
  close(err_pipe[1]);
  int in_fd = in_pipe[1], out_fd = out_pipe[0], err_fd = err_pipe[0];
  set_nonblocking(in_fd);
  if (input.empty()) {
    close(in_fd);
    in_fd = -1;
  }
  auto deadline = Clock::now() + limit;
  while (out_fd >= 0 || err_fd >= 0) {
    auto left = std::chrono::duration_cast<std::chrono::milliseconds>(deadline - Clock::now());
    if (left.count() <= 0) {
      r.timed_out = true;
      break;
    }
    pollfd p[3];
    int n = 0;
    int idx_in = -1, idx_out = -1, idx_err = -1;
    if (in_fd >= 0) {
      idx_in = n;
      p[n++] = pollfd{in_fd, POLLOUT, 0};
    }
    if (out_fd >= 0) {
      idx_out = n;
      p[n++] = pollfd{out_fd, POLLIN, 0};
    }
    if (err_fd >= 0) {
      idx_err = n;
      p[n++] = pollfd{err_fd, POLLIN, 0};
    }
    if (poll(p, static_cast<nfds_t>(n), static_cast<int>(left.count())) < 0 && errno != EINTR)
      break;
    if (idx_in >= 0 && p[idx_in].revents != 0) {
      ssize_t w = write(in_fd, input.data(), input.size());
      if (w > 0) input.remove_prefix(static_cast<size_t>(w));
      if (w < 0 && errno != EAGAIN) input = {};
      if (input.empty()) {
        close(in_fd);
        in_fd = -1;
      }
    }
    for (auto [idx, fd, dest] :
         {std::tuple{idx_out, &out_fd, &r.out}, std::tuple{idx_err, &err_fd, &r.err}}) {
      if (idx < 0 || p[idx].revents == 0) continue;
      char buf[65536];
      ssize_t got = read(*fd, buf, sizeof(buf));
      if (got > 0) {
        dest->append(buf, static_cast<size_t>(got));
      } else if (got == 0 || errno != EAGAIN) {
        close(*fd);
        *fd = -1;
      }
    }
  }
  for (int fd : {in_fd, out_fd, err_fd}) {
    if (fd >= 0) close(fd);
  }
  int st = 0;
  if (r.timed_out) {
    kill(pid, SIGKILL);
    waitpid(pid, &st, 0);
    return r;
  }
  // Output closed: the program is exiting; still bound the wait.
  while (true) {
    pid_t w = waitpid(pid, &st, WNOHANG);
    if (w == pid) break;
    if (Clock::now() > deadline) {
      kill(pid, SIGKILL);
      waitpid(pid, &st, 0);
      r.timed_out = true;
      return r;
    }
    std::this_thread::sleep_for(2ms);
  }
  r.exit_code = WIFEXITED(st) ? WEXITSTATUS(st) : -1;
  return r;
}

std::vector<std::string> ring_lookup(const std::string& config_path,
                                     const std::vector<std::string>& keys, const std::string& pool,
                                     std::string* error) {
  std::vector<std::string> argv = {memshard_binary(), "ring", "lookup", "-c", config_path};
  if (!pool.empty()) {
    argv.push_back("--pool");
    argv.push_back(pool);
  }
  std::string input;
  for (const auto& k : keys) input.append(k).append("\n");
  CommandResult r = run_command(argv, input);
  auto fail = [&](const std::string& why) {
    if (error != nullptr) *error += why;
    return std::vector<std::string>{};
  };
  if (r.exit_code != 0) {
    return fail("ring lookup exited with " + std::to_string(r.exit_code) + ": " + r.err);
  }
  std::vector<std::string> servers;
  std::istringstream lines(r.out);
  std::string line;
  size_t i = 0;
  while (std::getline(lines, line)) {
    size_t tab = line.rfind('\t');
    if (tab == std::string::npos || i >= keys.size() || line.substr(0, tab) != keys[i]) {
      return fail("ring lookup: unexpected line " + std::to_string(i + 1) + ": " + line);
    }
    servers.push_back(line.substr(tab + 1));
    ++i;
  }
  if (servers.size() != keys.size()) {
    return fail("ring lookup printed " + std::to_string(servers.size()) + " lines for " +
                std::to_string(keys.size()) + " keys");
  }
  return servers;
}

Fleet::Fleet(size_t n, std::vector<std::string> extra_args) {
  for (size_t i = 0; i < n; ++i) {
    servers_.push_back(std::make_unique<Memcached>(0, extra_args));
  }
}

size_t Fleet::index_of(const std::string& address) const {
  for (size_t i = 0; i < servers_.size(); ++i) {
    if (servers_[i]->address() == address) return i;
  }
  return std::string::npos;
}

std::vector<std::string> Fleet::server_lines(uint32_t weight) const {
  std::vector<std::string> out;
  for (const auto& s : servers_) out.push_back(s->address() + ":" + std::to_string(weight));
  return out;
}

void Fleet::flush_all() {
  for (auto& s : servers_) {
    if (!s->process().running()) continue;  // stopped by the test
    RawClient c(s->host(), s->port());
    c.roundtrip("flush_all\r\n", "OK\r\n");
  }
}

std::string pool_yaml(const PoolSpec& pool) {
  std::string y = pool.name + ":\n";
  y += "  listen: " + pool.listen + "\n";
  for (const auto& [k, v] : pool.directives) y += "  " + k + ": " + v + "\n";
  y += "  servers:\n";
  for (const auto& s : pool.servers) y += "   - " + s + "\n";
  return y;
}

std::string config_yaml(const std::vector<PoolSpec>& pools) {
  std::string y;
  for (const auto& p : pools) y += pool_yaml(p);
  return y;
}

bool have_nutcracker() {
  return run_command({"nutcracker", "-V"}, {}, 10s).exit_code == 0;
}

Nutcracker::Nutcracker(const std::string& config_path, uint16_t listen_port,
                       const std::string& log_file) {
  uint16_t stats = free_port();
  process_ = Process({"nutcracker", "-c", config_path, "-s", std::to_string(stats), "-a",
                      "127.0.0.1", "-o", log_file},
                     log_file);
  if (!wait_listening(listen_port)) {
    throw std::runtime_error("nutcracker did not start listening on port " +
                             std::to_string(listen_port));
  }
}

bool parse_values(std::string_view reply, std::vector<Value>& out) {
  while (true) {
    size_t eol = reply.find("\r\n");
    if (eol == std::string_view::npos) return false;
    std::string_view line = reply.substr(0, eol);
    reply.remove_prefix(eol + 2);
    if (line == "END") return reply.empty();
    if (!line.starts_with("VALUE ")) return false;
    std::istringstream fields{std::string(line.substr(6))};
    Value v;
    uint64_t bytes = 0;
    if (!(fields >> v.key >> v.flags >> bytes)) return false;
    fields >> v.cas;
    if (reply.size() < bytes + 2 || reply.substr(bytes, 2) != "\r\n") return false;
    v.data = std::string(reply.substr(0, bytes));
    reply.remove_prefix(bytes + 2);
    out.push_back(std::move(v));
  }
}

std::string set_command(std::string_view key, std::string_view value, std::string_view verb,
                        uint32_t flags, std::string_view extra) {
  std::string c;
  c.append(verb).append(" ").append(key).append(" ").append(std::to_string(flags));
  c.append(" 0 ").append(std::to_string(value.size()));
  if (!extra.empty()) c.append(" ").append(extra);
  c.append("\r\n").append(value).append("\r\n");
  return c;
}

}  // namespace memshard::testing
