#include "reload_util.h"

#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cerrno>
#include <csignal>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <set>
#include <sstream>
#include <stdexcept>
#include <thread>
#include <utility>

#include "proxy/runtime/worker_picker.h"

namespace memshard::testing::reload {

using Clock = std::chrono::steady_clock;

// ------------------------------------------------------------ config text

std::string listen_on(uint16_t port) {
  return "127.0.0.1:" + std::to_string(port);
}

std::string yaml(const std::vector<PoolDef>& pools) {
  std::string out;
  for (const PoolDef& p : pools) {
    out += p.name + ":\n";
    out += "  listen: " + p.listen + "\n";
    out += "  hash: " + p.hash + "\n";
    out += "  distribution: " + p.distribution + "\n";
    for (const std::string& d : p.directives) out += "  " + d + "\n";
    out += "  servers:\n";
    for (const ServerRef& s : p.servers) {
      out += "   - 127.0.0.1:" + std::to_string(s.port) + ":" + std::to_string(s.weight) + "\n";
    }
  }
  return out;
}

std::string yaml(const PoolDef& pool) {
  return yaml(std::vector<PoolDef>{pool});
}

// --------------------------------------------------------------- client

Conn::Conn(uint16_t port, std::chrono::milliseconds limit) : limit_(limit) {
  fd_ = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (fd_ < 0) {
    error_ = std::string("socket: ") + strerror(errno);
    return;
  }
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  a.sin_port = htons(port);
  if (::connect(fd_, reinterpret_cast<sockaddr*>(&a), sizeof(a)) != 0) {
    error_ = "connect to port " + std::to_string(port) + ": " + strerror(errno);
    ::close(fd_);
    fd_ = -1;
    return;
  }
  int one = 1;
  setsockopt(fd_, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
}

Conn::~Conn() {
  close();
}

void Conn::close() {
  if (fd_ >= 0) ::close(fd_);
  fd_ = -1;
}

bool Conn::fail(std::string why) {
  if (error_.empty()) error_ = std::move(why);
  return false;
}

bool Conn::send(std::string_view bytes) {
  if (!ok()) return fail("send on a broken connection");
  while (!bytes.empty()) {
    ssize_t n = ::send(fd_, bytes.data(), bytes.size(), MSG_NOSIGNAL);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return fail(std::string("send: ") + strerror(errno));
    bytes.remove_prefix(static_cast<size_t>(n));
  }
  return true;
}

bool Conn::fill() {
  if (pos_ > 0 && pos_ == buf_.size()) {
    buf_.clear();
    pos_ = 0;
  } else if (pos_ > (1u << 20)) {
    buf_.erase(0, pos_);
    pos_ = 0;
  }
  pollfd p{fd_, POLLIN, 0};
  int r;
  do {
    r = poll(&p, 1, static_cast<int>(limit_.count()));
  } while (r < 0 && errno == EINTR);
  if (r == 0) return fail("no reply within " + std::to_string(limit_.count()) + " ms");
  if (r < 0) return fail(std::string("poll: ") + strerror(errno));
  char tmp[65536];
  ssize_t n = recv(fd_, tmp, sizeof(tmp), 0);
  if (n == 0) return fail("connection closed by the proxy");
  if (n < 0) return fail(std::string("recv: ") + strerror(errno));
  buf_.append(tmp, static_cast<size_t>(n));
  return true;
}

bool Conn::read_line(std::string& line) {
  if (!ok()) return fail("read on a broken connection");
  while (true) {
    size_t eol = buf_.find("\r\n", pos_);
    if (eol != std::string::npos) {
      line.assign(buf_, pos_, eol - pos_);
      pos_ = eol + 2;
      return true;
    }
    if (buf_.size() - pos_ > (4u << 20)) return fail("line longer than 4 MiB");
    if (!fill()) return false;
  }
}

bool Conn::set(std::string_view key, std::string_view value) {
  std::string req = "set ";
  req.append(key).append(" 0 0 ").append(std::to_string(value.size())).append("\r\n");
  req.append(value).append("\r\n");
  if (!send(req)) return false;
  std::string line;
  if (!read_line(line)) return false;
  if (line != "STORED") return fail("set " + std::string(key) + ": got '" + line + "'");
  return true;
}

bool Conn::get(const std::vector<std::string>& keys, std::vector<Hit>& hits) {
  std::string req = "get";
  for (const auto& k : keys) req.append(" ").append(k);
  req.append("\r\n");
  if (!send(req)) return false;
  return read_values(hits);
}

bool Conn::read_values(std::vector<Hit>& hits) {
  hits.clear();
  std::string line;
  while (true) {
    if (!read_line(line)) return false;
    if (line == "END") return true;
    if (!line.starts_with("VALUE ")) return fail("retrieval: unexpected line '" + line + "'");
    std::istringstream in(line.substr(6));
    std::string key;
    uint64_t flags = 0, bytes = 0;
    if (!(in >> key >> flags >> bytes)) return fail("retrieval: bad VALUE line '" + line + "'");
    while (buf_.size() - pos_ < bytes + 2) {
      if (!fill()) return false;
    }
    if (buf_.compare(pos_ + bytes, 2, "\r\n") != 0) {
      return fail("retrieval: data block of " + key + " not followed by CRLF");
    }
    hits.push_back(Hit{key, buf_.substr(pos_, bytes)});
    pos_ += bytes + 2;
  }
}

bool Conn::stats(std::map<std::string, std::string>& out) {
  out.clear();
  if (!send("stats\r\n")) return false;
  std::string line;
  while (true) {
    if (!read_line(line)) return false;
    if (line == "END") return true;
    if (!line.starts_with("STAT ")) return fail("stats: unexpected line '" + line + "'");
    size_t sp = line.find(' ', 5);
    if (sp == std::string::npos) return fail("stats: bad line '" + line + "'");
    out[line.substr(5, sp - 5)] = line.substr(sp + 1);
  }
}

bool Conn::closed_by_peer(std::chrono::milliseconds limit) {
  if (fd_ < 0) return false;
  if (pos_ < buf_.size()) return false;  // something unread arrived
  auto deadline = Clock::now() + limit;
  while (true) {
    auto left = std::chrono::duration_cast<std::chrono::milliseconds>(deadline - Clock::now());
    if (left.count() <= 0) return false;
    pollfd p{fd_, POLLIN, 0};
    int r = poll(&p, 1, static_cast<int>(left.count()));
    if (r < 0 && errno == EINTR) continue;
    if (r <= 0) return false;
    char tmp[4096];
    ssize_t n = recv(fd_, tmp, sizeof(tmp), 0);
    if (n == 0) return true;
    if (n < 0) return errno == ECONNRESET;
    buf_.append(tmp, static_cast<size_t>(n));
    return false;
  }
}

bool Conn::idle_for(std::chrono::milliseconds limit) {
  if (fd_ < 0) return false;
  if (pos_ < buf_.size()) return false;
  pollfd p{fd_, POLLIN, 0};
  int r;
  do {
    r = poll(&p, 1, static_cast<int>(limit.count()));
  } while (r < 0 && errno == EINTR);
  if (r == 0) return true;
  char tmp[65536];
  ssize_t n = recv(fd_, tmp, sizeof(tmp), 0);
  if (n > 0) buf_.append(tmp, static_cast<size_t>(n));
  if (n == 0) fail("connection closed by the proxy");
  return false;
}

std::string Conn::describe() const {
  std::string out = "received '";
  for (char ch : std::string_view(buf_).substr(pos_, 200)) {
    if (ch == '\r') {
      out += "\\r";
    } else if (ch == '\n') {
      out += "\\n";
    } else {
      out += ch;
    }
  }
  out += "'";
  if (!error_.empty()) out += "; " + error_;
  return out;
}

bool accepts(uint16_t port) {
  Conn c(port);
  return c.ok();
}

std::string key_of(std::string_view tag, uint64_t i) {
  return std::to_string(i) + ":" + std::string(tag);
}

std::string value_for(std::string_view key, uint64_t counter) {
  std::string v(key);
  v.append("|").append(std::to_string(counter)).append("|");
  size_t h = std::hash<std::string_view>{}(key);
  size_t fill = (h + counter * 131) % 1500;
  for (size_t i = 0; i < fill; ++i) v.push_back(static_cast<char>('a' + (counter + i) % 26));
  return v;
}

// ------------------------------------------------------------ the proxy

std::vector<std::string> memshard_args(std::vector<std::string> extra) {
  extra.push_back("-s");
  extra.push_back("0");
  return extra;
}

std::map<std::string, std::string> proxy_stats(uint16_t port) {
  Conn c(port, 3s);
  std::map<std::string, std::string> out;
  if (!c.stats(out)) out.clear();
  return out;
}

uint64_t stat_of(const std::map<std::string, std::string>& stats, const std::string& name) {
  auto it = stats.find(name);
  if (it == stats.end()) throw std::runtime_error("no stat " + name);
  return std::stoull(it->second);
}

bool wait_ready(uint16_t port, std::chrono::milliseconds limit) {
  auto deadline = Clock::now() + limit;
  while (Clock::now() < deadline) {
    if (!proxy_stats(port).empty()) return true;
    std::this_thread::sleep_for(20ms);
  }
  return false;
}

std::optional<uint64_t> wait_stat(uint16_t port, const std::string& name,
                                  const std::function<bool(uint64_t)>& ok,
                                  std::chrono::milliseconds limit) {
  auto deadline = Clock::now() + limit;
  while (Clock::now() < deadline) {
    auto s = proxy_stats(port);
    if (s.contains(name)) {
      uint64_t v = stat_of(s, name);
      if (ok(v)) return v;
    }
    std::this_thread::sleep_for(5ms);
  }
  return std::nullopt;
}

std::optional<uint64_t> wait_generation_settled(uint16_t port, std::chrono::milliseconds quiet,
                                                std::chrono::milliseconds limit) {
  auto deadline = Clock::now() + limit;
  std::optional<uint64_t> last;
  auto since = Clock::now();
  while (Clock::now() < deadline) {
    auto s = proxy_stats(port);
    if (s.contains("config_generation")) {
      uint64_t g = stat_of(s, "config_generation");
      if (!last || *last != g) {
        last = g;
        since = Clock::now();
      } else if (Clock::now() - since >= quiet) {
        return last;
      }
    }
    std::this_thread::sleep_for(20ms);
  }
  return std::nullopt;
}

char process_state(pid_t pid) {
  std::string stat = read_file("/proc/" + std::to_string(pid) + "/stat");
  size_t paren = stat.rfind(')');
  if (paren == std::string::npos || paren + 2 >= stat.size()) return '?';
  return stat[paren + 2];
}

bool stop_process(pid_t pid, std::chrono::milliseconds limit) {
  if (kill(pid, SIGSTOP) != 0) return false;
  auto deadline = Clock::now() + limit;
  while (Clock::now() < deadline) {
    if (process_state(pid) == 'T') return true;
    std::this_thread::sleep_for(1ms);
  }
  return false;
}

int count_fds(pid_t pid) {
  std::error_code ec;
  int n = 0;
  for (std::filesystem::directory_iterator it("/proc/" + std::to_string(pid) + "/fd", ec), end;
       !ec && it != end; it.increment(ec)) {
    ++n;
  }
  return ec ? -1 : n;
}

int settled_fds(pid_t pid, std::chrono::milliseconds quiet, std::chrono::milliseconds limit) {
  auto deadline = Clock::now() + limit;
  int last = count_fds(pid);
  auto since = Clock::now();
  while (Clock::now() < deadline) {
    std::this_thread::sleep_for(50ms);
    int n = count_fds(pid);
    if (n != last) {
      last = n;
      since = Clock::now();
    } else if (Clock::now() - since >= quiet) {
      break;
    }
  }
  return last;
}

int connections_to(pid_t pid, uint16_t port) {
  int n = 0;
  for (const TcpSocket& s : tcp_sockets_of(pid))
    if (s.state == TCP_ESTABLISHED && s.remote_address == "0100007F" && s.remote_port == port) ++n;
  return n;
}

::testing::AssertionResult warm_every_worker(uint16_t port, pid_t pid,
                                             const std::vector<uint16_t>& servers, int threads) {
  const uint64_t reaching =
      memshard::proxy::WorkerPicker::reaching_every_worker(static_cast<uint64_t>(threads));
  std::vector<std::string> keys;
  for (uint64_t i = 0; i < 200; ++i) keys.push_back(key_of("warm", i));
  std::string short_of;
  for (uint64_t attempt = 1; attempt <= 4; ++attempt) {
    {
      std::vector<std::unique_ptr<Conn>> conns;
      for (uint64_t i = 0; i < reaching * attempt; ++i)
        conns.push_back(std::make_unique<Conn>(port));
      for (auto& c : conns) {
        std::vector<Hit> hits;
        if (!c->get(keys, hits)) return ::testing::AssertionFailure() << "warm-up: " << c->error();
      }
    }
    // Connections to servers are made as the gets route; they are up by
    // the time the replies came back, so there is nothing to wait for.
    short_of.clear();
    for (uint16_t server : servers) {
      int n = connections_to(pid, server);
      if (n < threads) {
        short_of += " " + std::to_string(server) + " (" + std::to_string(n) + ")";
      }
    }
    if (short_of.empty()) return ::testing::AssertionSuccess();
  }
  return ::testing::AssertionFailure() << "warm-up: after 4 attempts, fewer than " << threads
                                       << " connections from memshard to server(s)" << short_of;
}

std::string read_file(const std::string& path) {
  std::ifstream f(path, std::ios::binary);
  std::ostringstream s;
  s << f.rdbuf();
  return s.str();
}

// ----------------------------------------------------------------- rings

namespace {
ketama::Ring ring_of(const std::string& text, const std::string& pool,
                     std::vector<uint16_t>& ports) {
  conf::LoadResult r = conf::parse_config(text, "placement.yml");
  if (!r.errors.empty()) {
    throw std::runtime_error("placement: config does not load: " + r.errors[0].to_string());
  }
  const conf::PoolConfig* pc = r.config->find_pool(pool);
  if (pc == nullptr) throw std::runtime_error("placement: no pool " + pool);
  std::vector<ketama::ServerEntry> entries;
  for (const conf::ServerConfig& s : pc->servers) {
    entries.push_back(s.entry);
    ports.push_back(s.entry.port);
  }
  return ketama::Ring::build(std::move(entries), pc->ring);
}
}  // namespace

Placement::Placement(const std::string& config_text, const std::string& pool)
    : ring_(ring_of(config_text, pool, ports_)) {}

uint16_t Placement::port_of(std::string_view key) const {
  size_t i = ring_.lookup(key);
  if (i == ketama::Ring::npos) throw std::runtime_error("placement: no live server");
  return ports_[i];
}

namespace {

void put_be(std::string& s, size_t at, uint64_t v, int bytes) {
  for (int i = 0; i < bytes; ++i)
    s[at + static_cast<size_t>(i)] = static_cast<char>(v >> (8 * (bytes - 1 - i)));
}

// Sends one binary request and reads its whole reply: status and body.
std::pair<uint16_t, std::string> binary_call(RawClient& c, uint8_t opcode, const std::string& key,
                                             const std::string& extras, const std::string& value) {
  std::string frame(24, '\0');
  frame[0] = static_cast<char>(0x80);
  frame[1] = static_cast<char>(opcode);
  put_be(frame, 2, key.size(), 2);
  frame[4] = static_cast<char>(extras.size());
  put_be(frame, 8, extras.size() + key.size() + value.size(), 4);
  c.send(frame + extras + key + value);
  // read_exact may return more than asked: what arrived in one read.
  std::string got = c.read_exact(24);
  if (got.size() < 24) throw std::runtime_error("no binary reply");
  const auto at = [&](size_t i) { return static_cast<uint32_t>(static_cast<uint8_t>(got[i])); };
  const uint32_t body = at(8) << 24 | at(9) << 16 | at(10) << 8 | at(11);
  while (got.size() < 24 + body) {
    const std::string more = c.read_exact(24 + body - got.size());
    if (more.empty()) throw std::runtime_error("binary reply cut short");
    got += more;
  }
  const uint16_t status = static_cast<uint16_t>(at(6) << 8 | at(7));
  const size_t reply_extras = at(4);
  return {status, got.substr(24 + reply_extras, body - reply_extras)};
}

std::string base64(const std::string& in) {
  static const char* kAlphabet = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
  std::string out;
  for (size_t i = 0; i < in.size(); i += 3) {
    uint32_t n = static_cast<uint32_t>(static_cast<uint8_t>(in[i])) << 16;
    if (i + 1 < in.size()) n |= static_cast<uint32_t>(static_cast<uint8_t>(in[i + 1])) << 8;
    if (i + 2 < in.size()) n |= static_cast<uint8_t>(in[i + 2]);
    out += kAlphabet[(n >> 18) & 63];
    out += kAlphabet[(n >> 12) & 63];
    out += i + 1 < in.size() ? kAlphabet[(n >> 6) & 63] : '=';
    out += i + 2 < in.size() ? kAlphabet[n & 63] : '=';
  }
  return out;
}

}  // namespace

std::optional<std::string> binary_get(RawClient& c, const std::string& key) {
  auto [status, body] = binary_call(c, 0x00, key, {}, {});
  if (status != 0) return std::nullopt;
  return body;
}

uint16_t binary_set(RawClient& c, const std::string& key, const std::string& value) {
  return binary_call(c, 0x01, key, std::string(8, '\0'), value).first;
}

uint16_t binary_delete(RawClient& c, const std::string& key) {
  return binary_call(c, 0x04, key, {}, {}).first;
}

std::optional<std::string> direct_meta_get(uint16_t port, const std::string& key) {
  RawClient c(port);
  // The first read may hold the data block too: what follows the line is
  // taken from it before reading more.
  std::string got = c.roundtrip("mg " + base64(key) + " b v\r\n", "\r\n");
  const size_t eol = got.find("\r\n");
  if (eol == std::string::npos || !got.starts_with("VA ")) return std::nullopt;
  const size_t length = std::stoul(got.substr(3, eol - 3));
  std::string data = got.substr(eol + 2);
  while (data.size() < length + 2) {
    const std::string more = c.read_exact(length + 2 - data.size());
    if (more.empty()) throw std::runtime_error("mg reply cut short");
    data += more;
  }
  return data.substr(0, length);
}

std::optional<std::string> direct_get(uint16_t port, const std::string& key) {
  Conn c(port);
  std::vector<Hit> hits;
  if (!c.get({key}, hits)) throw std::runtime_error("direct get: " + c.error());
  if (hits.empty()) return std::nullopt;
  return hits[0].data;
}

::testing::AssertionResult keys_land_per_config(uint16_t proxy_port, const std::string& config_text,
                                                const std::vector<uint16_t>& fleet,
                                                const std::string& prefix, int n,
                                                const std::string& pool) {
  Placement where(config_text, pool);
  std::vector<std::string> keys;
  {
    Conn c(proxy_port);
    for (int i = 0; i < n; ++i) {
      std::string key = key_of(prefix, static_cast<uint64_t>(i));
      if (!c.set(key, value_for(key, static_cast<uint64_t>(i)))) {
        return ::testing::AssertionFailure()
               << "set " << key << " through the proxy: " << c.error();
      }
      keys.push_back(key);
    }
  }
  std::set<uint16_t> servers(fleet.begin(), fleet.end());
  for (uint16_t p : where.ports()) servers.insert(p);
  std::map<std::string, std::vector<uint16_t>> found;  // key -> servers holding it
  std::map<std::string, std::string> data;
  for (uint16_t port : servers) {
    Conn c(port);
    std::vector<Hit> hits;
    if (!c.get(keys, hits)) {
      return ::testing::AssertionFailure() << "get from memcached " << port << ": " << c.error();
    }
    for (const Hit& h : hits) {
      found[h.key].push_back(port);
      data[h.key] = h.data;
    }
  }
  std::ostringstream bad;
  int wrong = 0;
  for (int i = 0; i < n; ++i) {
    const std::string& key = keys[static_cast<size_t>(i)];
    uint16_t want = where.port_of(key);
    const auto& on = found[key];
    bool good =
        on.size() == 1 && on[0] == want && data[key] == value_for(key, static_cast<uint64_t>(i));
    if (good) continue;
    if (++wrong <= 5) {
      bad << "\n  " << key << ": config says port " << want << ", found on";
      if (on.empty()) bad << " no server";
      for (uint16_t p : on) bad << " " << p;
    }
  }
  if (wrong == 0) return ::testing::AssertionSuccess();
  return ::testing::AssertionFailure()
         << wrong << " of " << n << " keys not where the config puts them:" << bad.str();
}

}  // namespace memshard::testing::reload
