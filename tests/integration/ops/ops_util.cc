#include "ops_util.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <signal.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <cctype>
#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <set>
#include <sstream>
#include <thread>
#include <utility>

namespace memshard::testing::ops {

using Clock = std::chrono::steady_clock;

// ------------------------------------------------------------------ JSON

const Json* Json::get(std::string_view key) const {
  for (const auto& [k, v] : members) {
    if (k == key) return &v;
  }
  return nullptr;
}

std::optional<uint64_t> Json::u64() const {
  if (kind != Kind::number || number.empty()) return std::nullopt;
  for (char c : number) {
    if (c < '0' || c > '9') return std::nullopt;
  }
  errno = 0;
  unsigned long long v = std::strtoull(number.c_str(), nullptr, 10);
  if (errno != 0) return std::nullopt;
  return static_cast<uint64_t>(v);
}

namespace {

class JsonParser {
 public:
  explicit JsonParser(std::string_view text) : s_(text) {}

  std::optional<Json> document(std::string* error) {
    Json v;
    skip_ws();
    bool ok = value(v, 0);
    if (ok) {
      skip_ws();
      if (i_ != s_.size()) ok = fail("trailing bytes after the document");
    }
    if (!ok) {
      if (error != nullptr) *error = error_ + " at byte " + std::to_string(i_);
      return std::nullopt;
    }
    return v;
  }

 private:
  bool fail(const std::string& why) {
    if (error_.empty()) error_ = why;
    return false;
  }
  void skip_ws() {
    while (i_ < s_.size() &&
           (s_[i_] == ' ' || s_[i_] == '\t' || s_[i_] == '\n' || s_[i_] == '\r')) {
      ++i_;
    }
  }
  bool literal(std::string_view word) {
    if (s_.substr(i_, word.size()) != word) return fail("invalid literal");
    i_ += word.size();
    return true;
  }

  bool value(Json& out, int depth) {
    if (depth > 64) return fail("nesting too deep");
    if (i_ >= s_.size()) return fail("unexpected end");
    char c = s_[i_];
    switch (c) {
      case '{':
        return object(out, depth);
      case '[':
        return array(out, depth);
      case '"':
        out.kind = Json::Kind::string;
        return string(out.string);
      case 't':
        out.kind = Json::Kind::boolean;
        out.boolean = true;
        return literal("true");
      case 'f':
        out.kind = Json::Kind::boolean;
        return literal("false");
      case 'n':
        out.kind = Json::Kind::null;
        return literal("null");
      default:
        out.kind = Json::Kind::number;
        return number(out.number);
    }
  }

  bool object(Json& out, int depth) {
    out.kind = Json::Kind::object;
    ++i_;  // '{'
    skip_ws();
    if (i_ < s_.size() && s_[i_] == '}') {
      ++i_;
      return true;
    }
    std::set<std::string> seen;
    while (true) {
      skip_ws();
      if (i_ >= s_.size() || s_[i_] != '"') return fail("expected a member name");
      std::string key;
      if (!string(key)) return false;
      if (!seen.insert(key).second) return fail("duplicate key \"" + key + "\"");
      skip_ws();
      if (i_ >= s_.size() || s_[i_] != ':') return fail("expected ':'");
      ++i_;
      skip_ws();
      Json v;
      if (!value(v, depth + 1)) return false;
      out.members.emplace_back(std::move(key), std::move(v));
      skip_ws();
      if (i_ < s_.size() && s_[i_] == ',') {
        ++i_;
        continue;
      }
      if (i_ < s_.size() && s_[i_] == '}') {
        ++i_;
        return true;
      }
      return fail("expected ',' or '}'");
    }
  }

  bool array(Json& out, int depth) {
    out.kind = Json::Kind::array;
    ++i_;  // '['
    skip_ws();
    if (i_ < s_.size() && s_[i_] == ']') {
      ++i_;
      return true;
    }
    while (true) {
      skip_ws();
      Json v;
      if (!value(v, depth + 1)) return false;
      out.items.push_back(std::move(v));
      skip_ws();
      if (i_ < s_.size() && s_[i_] == ',') {
        ++i_;
        continue;
      }
      if (i_ < s_.size() && s_[i_] == ']') {
        ++i_;
        return true;
      }
      return fail("expected ',' or ']'");
    }
  }

  static void utf8(std::string& out, uint32_t cp) {
    if (cp < 0x80) {
      out.push_back(static_cast<char>(cp));
    } else if (cp < 0x800) {
      out.push_back(static_cast<char>(0xc0 | (cp >> 6)));
      out.push_back(static_cast<char>(0x80 | (cp & 0x3f)));
    } else if (cp < 0x10000) {
      out.push_back(static_cast<char>(0xe0 | (cp >> 12)));
      out.push_back(static_cast<char>(0x80 | ((cp >> 6) & 0x3f)));
      out.push_back(static_cast<char>(0x80 | (cp & 0x3f)));
    } else {
      out.push_back(static_cast<char>(0xf0 | (cp >> 18)));
      out.push_back(static_cast<char>(0x80 | ((cp >> 12) & 0x3f)));
      out.push_back(static_cast<char>(0x80 | ((cp >> 6) & 0x3f)));
      out.push_back(static_cast<char>(0x80 | (cp & 0x3f)));
    }
  }

  bool hex4(uint32_t& cp) {
    if (i_ + 4 > s_.size()) return fail("short \\u escape");
    cp = 0;
    for (int k = 0; k < 4; ++k) {
      char h = s_[i_++];
      cp <<= 4;
      if (h >= '0' && h <= '9') {
        cp |= static_cast<uint32_t>(h - '0');
      } else if (h >= 'a' && h <= 'f') {
        cp |= static_cast<uint32_t>(h - 'a' + 10);
      } else if (h >= 'A' && h <= 'F') {
        cp |= static_cast<uint32_t>(h - 'A' + 10);
      } else {
        return fail("bad hex digit in \\u escape");
      }
    }
    return true;
  }

  bool string(std::string& out) {
    ++i_;  // '"'
    while (true) {
      if (i_ >= s_.size()) return fail("unterminated string");
      auto c = static_cast<unsigned char>(s_[i_++]);
      if (c == '"') return true;
      if (c < 0x20) return fail("raw control character in a string");
      if (c != '\\') {
        out.push_back(static_cast<char>(c));
        continue;
      }
      if (i_ >= s_.size()) return fail("unterminated escape");
      char e = s_[i_++];
      switch (e) {
        case '"':
          out.push_back('"');
          break;
        case '\\':
          out.push_back('\\');
          break;
        case '/':
          out.push_back('/');
          break;
        case 'b':
          out.push_back('\b');
          break;
        case 'f':
          out.push_back('\f');
          break;
        case 'n':
          out.push_back('\n');
          break;
        case 'r':
          out.push_back('\r');
          break;
        case 't':
          out.push_back('\t');
          break;
        case 'u': {
          uint32_t cp;
          if (!hex4(cp)) return false;
          if (cp >= 0xd800 && cp < 0xdc00) {
            uint32_t low;
            if (s_.substr(i_, 2) != "\\u") return fail("lone high surrogate");
            i_ += 2;
            if (!hex4(low) || low < 0xdc00 || low >= 0xe000) return fail("bad low surrogate");
            cp = 0x10000 + ((cp - 0xd800) << 10) + (low - 0xdc00);
          } else if (cp >= 0xdc00 && cp < 0xe000) {
            return fail("lone low surrogate");
          }
          utf8(out, cp);
          break;
        }
        default:
          return fail("invalid escape");
      }
    }
  }

  bool number(std::string& out) {
    size_t start = i_;
    auto digit = [&] { return i_ < s_.size() && s_[i_] >= '0' && s_[i_] <= '9'; };
    if (i_ < s_.size() && s_[i_] == '-') ++i_;
    if (!digit()) return fail("expected a value");
    if (s_[i_] == '0') {
      ++i_;
    } else {
      while (digit()) ++i_;
    }
    if (i_ < s_.size() && s_[i_] == '.') {
      ++i_;
      if (!digit()) return fail("expected a digit after '.'");
      while (digit()) ++i_;
    }
    if (i_ < s_.size() && (s_[i_] == 'e' || s_[i_] == 'E')) {
      ++i_;
      if (i_ < s_.size() && (s_[i_] == '+' || s_[i_] == '-')) ++i_;
      if (!digit()) return fail("expected an exponent");
      while (digit()) ++i_;
    }
    out.assign(s_.substr(start, i_ - start));
    return true;
  }

  std::string_view s_;
  size_t i_ = 0;
  std::string error_;
};

}  // namespace

std::optional<Json> parse_json(std::string_view text, std::string* error) {
  return JsonParser(text).document(error);
}

std::optional<std::string> python_json_check(const std::string& text) {
  static const char kScript[] =
      "import json, sys\n"
      "def pairs(items):\n"
      "    keys = [k for k, _ in items]\n"
      "    dup = sorted({k for k in keys if keys.count(k) > 1})\n"
      "    if dup:\n"
      "        raise ValueError('duplicate keys: %r' % dup)\n"
      "    return dict(items)\n"
      "json.loads(sys.stdin.read(), object_pairs_hook=pairs)\n";
  CommandResult r = run_command({"python3", "-c", kScript}, text, 30s);
  if (r.exit_code == 127) return std::nullopt;
  if (r.exit_code == 0) return std::string();
  return "python3 json.loads failed (exit " + std::to_string(r.exit_code) + "): " + r.err;
}

// ------------------------------------------------------------- Prometheus

bool parse_prometheus(std::string_view text, std::vector<Sample>& out, std::string* error) {
  size_t line_no = 0;
  for (const std::string& line : lines_of(text)) {
    ++line_no;
    auto bad = [&](const std::string& why) {
      if (error != nullptr) *error = "line " + std::to_string(line_no) + ": " + why + ": " + line;
      return false;
    };
    if (line.empty() || line[0] == '#') continue;
    Sample s;
    size_t i = 0;
    while (i < line.size() && line[i] != '{' && line[i] != ' ') ++i;
    s.name = line.substr(0, i);
    if (s.name.empty()) return bad("no metric name");
    if (i < line.size() && line[i] == '{') {
      ++i;
      while (true) {
        if (i < line.size() && line[i] == '}') {
          ++i;
          break;
        }
        size_t eq = line.find('=', i);
        if (eq == std::string::npos) return bad("label without '='");
        std::string name = line.substr(i, eq - i);
        i = eq + 1;
        if (i >= line.size() || line[i] != '"') return bad("label value not quoted");
        ++i;
        std::string value;
        while (true) {
          if (i >= line.size()) return bad("unterminated label value");
          char c = line[i++];
          if (c == '"') break;
          if (c == '\\') {
            if (i >= line.size()) return bad("unterminated escape");
            char e = line[i++];
            value.push_back(e == 'n' ? '\n' : e);
          } else {
            value.push_back(c);
          }
        }
        if (!s.labels.emplace(name, value).second) return bad("label " + name + " twice");
        if (i < line.size() && line[i] == ',') ++i;
      }
    }
    if (i >= line.size() || line[i] != ' ') return bad("no value");
    std::string rest = line.substr(i + 1);
    std::string value_text = rest.substr(0, rest.find(' '));
    char* end = nullptr;
    s.value = std::strtod(value_text.c_str(), &end);
    if (value_text.empty() || end != value_text.c_str() + value_text.size()) {
      return bad("value is not a number");
    }
    out.push_back(std::move(s));
  }
  return true;
}

namespace {
bool labels_match(const Sample& s, const std::map<std::string, std::string>& match) {
  for (const auto& [k, v] : match) {
    auto it = s.labels.find(k);
    if (it == s.labels.end() || it->second != v) return false;
  }
  return true;
}
}  // namespace

std::vector<Sample> samples_of(const std::vector<Sample>& samples, const std::string& name,
                               const std::map<std::string, std::string>& match) {
  std::vector<Sample> out;
  for (const Sample& s : samples) {
    if (s.name == name && labels_match(s, match)) out.push_back(s);
  }
  return out;
}

std::optional<double> metric(const std::vector<Sample>& samples, const std::string& name,
                             const std::map<std::string, std::string>& match) {
  std::vector<Sample> found = samples_of(samples, name, match);
  if (found.size() != 1) return std::nullopt;
  return found[0].value;
}

// ------------------------------------------------------------ stats port

StatsExchange stats_exchange(uint16_t port, std::string_view request, bool half_close,
                             std::chrono::milliseconds limit) {
  StatsExchange r;
  int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  a.sin_port = htons(port);
  if (::connect(fd, reinterpret_cast<sockaddr*>(&a), sizeof(a)) != 0) {
    close(fd);
    return r;
  }
  while (!request.empty()) {
    ssize_t n = ::send(fd, request.data(), request.size(), MSG_NOSIGNAL);
    if (n <= 0) break;
    request.remove_prefix(static_cast<size_t>(n));
  }
  if (half_close) shutdown(fd, SHUT_WR);
  auto deadline = Clock::now() + limit;
  while (true) {
    auto left = std::chrono::duration_cast<std::chrono::milliseconds>(deadline - Clock::now());
    if (left.count() <= 0) break;
    pollfd p{fd, POLLIN, 0};
    if (poll(&p, 1, static_cast<int>(left.count())) <= 0) break;
    char buf[65536];
    ssize_t n = recv(fd, buf, sizeof(buf), 0);
    if (n <= 0) {
      r.closed = n == 0 || errno == ECONNRESET;
      break;
    }
    r.bytes.append(buf, static_cast<size_t>(n));
  }
  close(fd);
  return r;
}

HttpResponse http_get(uint16_t port, const std::string& path) {
  HttpResponse h;
  StatsExchange x = stats_exchange(
      port, "GET " + path + " HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n\r\n", false);
  h.raw = x.bytes;
  size_t head_end = h.raw.find("\r\n\r\n");
  if (!x.closed || head_end == std::string::npos) return h;
  std::vector<std::string> head = lines_of(std::string_view(h.raw).substr(0, head_end));
  if (head.empty()) return h;
  std::istringstream status(head[0]);
  std::string version;
  status >> version >> h.status;
  if (version.rfind("HTTP/1.", 0) != 0) return h;
  for (size_t i = 1; i < head.size(); ++i) {
    size_t colon = head[i].find(':');
    if (colon == std::string::npos) return h;
    std::string name = head[i].substr(0, colon);
    std::transform(name.begin(), name.end(), name.begin(),
                   [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
    std::string value = head[i].substr(colon + 1);
    value.erase(0, value.find_first_not_of(' '));
    h.headers[name] = value;
  }
  h.body = h.raw.substr(head_end + 4);
  auto len = h.headers.find("content-length");
  h.ok = len != h.headers.end() && std::to_string(h.body.size()) == len->second;
  return h;
}

std::optional<Json> fetch_stats_json(uint16_t port, std::string* error) {
  StatsExchange x = stats_exchange(port, "", true);
  if (!x.closed) {
    if (error != nullptr) *error = "the stats port did not close after its document";
    return std::nullopt;
  }
  std::string why;
  std::optional<Json> j = parse_json(x.bytes, &why);
  if (!j && error != nullptr) *error = why + " in: " + x.bytes;
  return j;
}

bool fetch_metrics(uint16_t port, std::vector<Sample>& out, std::string* body, std::string* error) {
  HttpResponse h = http_get(port, "/metrics");
  if (!h.ok || h.status != 200) {
    if (error != nullptr) *error = "GET /metrics: " + h.raw;
    return false;
  }
  if (body != nullptr) *body = h.body;
  return parse_prometheus(h.body, out, error);
}

std::map<std::string, std::map<std::string, std::string>> stats_servers(uint16_t proxy_port,
                                                                        const std::string& pool) {
  std::map<std::string, std::map<std::string, std::string>> out;
  RawClient c(proxy_port);
  std::string reply = c.roundtrip("stats servers\r\n", "END\r\n");
  const std::string prefix = "STAT " + pool + ":";
  for (const std::string& line : lines_of(reply)) {
    if (line.rfind(prefix, 0) != 0) continue;
    std::string rest = line.substr(prefix.size());
    size_t sp = rest.find(' ');
    if (sp == std::string::npos) continue;
    std::string key = rest.substr(0, sp);
    size_t colon = key.rfind(':');
    if (colon == std::string::npos) continue;
    out[key.substr(0, colon)][key.substr(colon + 1)] = rest.substr(sp + 1);
  }
  return out;
}

// ------------------------------------------------------------ processes

std::unique_ptr<Proxy> start_proxy(const TempDir& dir, const std::string& config_yaml,
                                   uint16_t listen_port, std::vector<std::string> extra,
                                   const std::string& stderr_file,
                                   std::vector<std::string> launcher) {
  auto p = std::make_unique<Proxy>();
  p->stats_port = free_port();
  p->config_path = dir.write("memshard.yml", config_yaml);
  std::vector<std::string> args = {"-s", std::to_string(p->stats_port), "-a", "127.0.0.1"};
  args.insert(args.end(), extra.begin(), extra.end());
  p->memshard = std::make_unique<Memshard>(p->config_path, args, listen_port, stderr_file,
                                           std::move(launcher));
  if (!wait_listening(p->stats_port)) {
    throw std::runtime_error("memshard's stats port " + std::to_string(p->stats_port) +
                             " does not accept connections");
  }
  // wait_listening's probe was a client connection: wait until it is gone,
  // so counts start from a quiet proxy.
  bool quiet = wait_until([&] {
    std::optional<Json> j = fetch_stats_json(p->stats_port);
    const Json* curr = j ? j->get("curr_connections") : nullptr;
    return curr != nullptr && curr->u64() == 0u;
  });
  if (!quiet) throw std::runtime_error("memshard never reported curr_connections 0");
  return p;
}

// ------------------------------------------------------------------ misc

bool wait_until(const std::function<bool()>& pred, std::chrono::milliseconds limit) {
  auto deadline = Clock::now() + limit;
  while (true) {
    if (pred()) return true;
    if (Clock::now() >= deadline) return false;
    std::this_thread::sleep_for(10ms);
  }
}

std::string read_file(const std::string& path) {
  std::ifstream f(path, std::ios::binary);
  std::ostringstream s;
  s << f.rdbuf();
  return s.str();
}

bool file_exists(const std::string& path) {
  return access(path.c_str(), F_OK) == 0;
}

std::vector<std::string> lines_of(std::string_view text) {
  std::vector<std::string> out;
  while (!text.empty()) {
    size_t nl = text.find('\n');
    std::string_view line = text.substr(0, nl);
    if (!line.empty() && line.back() == '\r') line.remove_suffix(1);
    out.emplace_back(line);
    if (nl == std::string_view::npos) break;
    text.remove_prefix(nl + 1);
  }
  return out;
}

std::map<std::string, std::vector<std::string>> keys_by_server(
    const std::string& config_path, const std::vector<std::string>& servers,
    const std::string& prefix, size_t per_server, const std::string& pool, std::string* error) {
  std::map<std::string, std::vector<std::string>> out;
  for (const auto& s : servers) out[s];
  size_t next = 0;
  auto done = [&] {
    return std::all_of(servers.begin(), servers.end(),
                       [&](const std::string& s) { return out[s].size() >= per_server; });
  };
  while (!done() && next < 20000) {
    std::vector<std::string> batch;
    for (size_t i = 0; i < 500; ++i) batch.push_back(prefix + std::to_string(next++));
    std::vector<std::string> where = ring_lookup(config_path, batch, pool, error);
    if (where.empty()) return {};
    for (size_t i = 0; i < batch.size(); ++i) {
      auto it = out.find(where[i]);
      if (it != out.end() && it->second.size() < per_server) it->second.push_back(batch[i]);
    }
  }
  if (!done()) {
    if (error != nullptr) *error += "some server got fewer than the keys wanted";
    return {};
  }
  return out;
}

bool stop_process(pid_t pid, std::chrono::milliseconds limit) {
  if (kill(pid, SIGSTOP) != 0) return false;
  const std::string tasks = "/proc/" + std::to_string(pid) + "/task";
  return wait_until(
      [&] {
        std::error_code ec;
        size_t seen = 0;
        for (const auto& task : std::filesystem::directory_iterator(tasks, ec)) {
          std::string stat = read_file(task.path().string() + "/stat");
          size_t paren = stat.rfind(')');
          if (paren == std::string::npos || paren + 2 >= stat.size()) return false;
          char state = stat[paren + 2];
          if (state != 'T' && state != 't') return false;
          ++seen;
        }
        return !ec && seen > 0;
      },
      limit);
}

std::vector<uint16_t> listening_tcp_ports(pid_t pid) {
  std::vector<uint16_t> ports;
  for (const TcpSocket& s : tcp_sockets_of(pid))
    if (s.state == TCP_LISTEN) ports.push_back(s.local_port);
  std::sort(ports.begin(), ports.end());
  return ports;
}

bool pid_alive(pid_t pid) {
  if (pid <= 0 || kill(pid, 0) != 0) return false;
  std::string stat = read_file("/proc/" + std::to_string(pid) + "/stat");
  size_t paren = stat.rfind(')');
  if (paren == std::string::npos || paren + 2 >= stat.size()) return false;
  return stat[paren + 2] != 'Z';
}

}  // namespace memshard::testing::ops

namespace memshard::testing::ops {

namespace {
std::string value_for(const std::string& key) {
  return "value-of-" + key + "-" + std::string(key.size() % 7, 'x');
}
std::string hit_block(const std::string& key) {
  std::string v = value_for(key);
  return "VALUE " + key + " 0 " + std::to_string(v.size()) + "\r\n" + v + "\r\n";
}
}  // namespace

bool run_traffic(uint16_t port, const std::map<std::string, std::vector<std::string>>& keys,
                 Traffic& out, std::string* failure) {
  auto fail = [&](const std::string& why) {
    if (failure != nullptr) *failure = why;
    return false;
  };
  for (const auto& [server, ks] : keys) {
    if (ks.size() < 4) return fail("fewer than 4 keys for " + server);
  }
  for (int i = 0; i < 3; ++i) out.clients.push_back(std::make_unique<RawClient>(port));
  RawClient& setter = *out.clients[0];
  RawClient& getter = *out.clients[1];
  RawClient& multi = *out.clients[2];

  for (const auto& [server, ks] : keys) {
    ServerExpect& e = out.servers[server];
    for (int i = 0; i < 2; ++i) {
      std::string cmd =
          set_command(ks[static_cast<size_t>(i)], value_for(ks[static_cast<size_t>(i)]));
      std::string reply = setter.roundtrip(cmd);
      if (reply != "STORED\r\n") return fail("set " + ks[static_cast<size_t>(i)] + ": " + reply);
      e.requests += 1;
      e.request_bytes += cmd.size();
      e.response_bytes += reply.size();
      e.stored += 1;
      out.requests += 1;
      out.fragments += 1;
    }
  }
  for (const auto& [server, ks] : keys) {
    ServerExpect& e = out.servers[server];
    std::string cmd = "get " + ks[0] + "\r\n";
    std::string reply = getter.roundtrip(cmd, "END\r\n");
    if (reply != hit_block(ks[0]) + "END\r\n") return fail("get " + ks[0] + ": " + reply);
    e.requests += 1;
    e.request_bytes += cmd.size();
    e.response_bytes += reply.size();
    e.hits += 1;
    cmd = "get " + ks[2] + "\r\n";
    reply = getter.roundtrip(cmd, "END\r\n");
    if (reply != "END\r\n") return fail("get " + ks[2] + ": " + reply);
    e.requests += 1;
    e.request_bytes += cmd.size();
    e.response_bytes += reply.size();
    e.misses += 1;
    out.requests += 2;
    out.fragments += 2;
  }
  // One multi-get, keys interleaved across the servers.
  std::string line = "get";
  std::string expected_reply;
  for (size_t j = 0; j < 4; ++j) {
    for (const auto& [server, ks] : keys) {
      line += " " + ks[j];
      if (j < 2) expected_reply += hit_block(ks[j]);
    }
  }
  expected_reply += "END\r\n";
  std::string reply = multi.roundtrip(line + "\r\n", "END\r\n");
  if (reply != expected_reply) return fail("multi-get: " + reply + "\nexpected: " + expected_reply);
  out.requests += 1;
  for (const auto& [server, ks] : keys) {
    ServerExpect& e = out.servers[server];
    // The fragment sent to each server asks for its keys in client order;
    // the server answers the two it holds, then END.
    std::string fragment = "get " + ks[0] + " " + ks[1] + " " + ks[2] + " " + ks[3] + "\r\n";
    e.requests += 1;
    e.request_bytes += fragment.size();
    e.response_bytes += hit_block(ks[0]).size() + hit_block(ks[1]).size() + 5;
    e.hits += 2;
    e.misses += 2;
    out.fragments += 1;
  }
  return true;
}

std::vector<int> allowed_cpus() {
  std::vector<int> cpus;
  cpu_set_t set;
  CPU_ZERO(&set);
  if (sched_getaffinity(0, sizeof(set), &set) != 0) return cpus;
  for (int cpu = 0; cpu < CPU_SETSIZE; ++cpu) {
    if (CPU_ISSET(cpu, &set)) cpus.push_back(cpu);
  }
  return cpus;
}

PinnedTo::PinnedTo(int cpu) {
  pthread_getaffinity_np(pthread_self(), sizeof(saved_), &saved_);
  cpu_set_t one;
  CPU_ZERO(&one);
  CPU_SET(cpu, &one);
  ok_ = pthread_setaffinity_np(pthread_self(), sizeof(one), &one) == 0;
}

PinnedTo::~PinnedTo() {
  pthread_setaffinity_np(pthread_self(), sizeof(saved_), &saved_);
}

}  // namespace memshard::testing::ops
