#include "replica_util.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <sstream>
#include <stdexcept>

namespace memshard::testing::replicas {

// ------------------------------------------------------------------ keys

namespace {

uint64_t seed() {
  static const uint64_t s = [] {
    const char* env = std::getenv("MEMSHARD_REPLICA_SEED");
    // Fixed, so that a run's keys are the same in every run; another seed
    // (MEMSHARD_REPLICA_SEED=N) varies them on purpose.
    uint64_t v = env != nullptr ? std::strtoull(env, nullptr, 10) : 20261203;
    std::fprintf(stderr, "replica tests: key seed %llu (MEMSHARD_REPLICA_SEED)\n",
                 static_cast<unsigned long long>(v));
    return v;
  }();
  return s;
}

std::mutex key_mu;
std::mt19937_64& key_rng() {
  static std::mt19937_64 rng(seed());
  return rng;
}

std::vector<std::string> fields_of(std::string_view line) {
  std::vector<std::string> out;
  std::istringstream in{std::string(line)};
  for (std::string f; in >> f;) out.push_back(f);
  return out;
}

}  // namespace

std::string random_key(std::string_view tag, uint64_t n) {
  std::string suffix(8, 'a');
  {
    std::lock_guard<std::mutex> lock(key_mu);
    for (char& c : suffix) c = static_cast<char>('a' + key_rng()() % 26);
  }
  return std::string(tag) + ":" + std::to_string(n) + ":" + suffix;
}

std::vector<std::string> random_keys(std::string_view tag, size_t count) {
  std::vector<std::string> out;
  out.reserve(count);
  for (size_t i = 0; i < count; ++i) out.push_back(random_key(tag, i));
  return out;
}

std::string value_of(std::string_view key, std::string_view salt) {
  std::string v = std::string(salt) + "=" + std::string(key) + "|";
  size_t fill = std::hash<std::string_view>{}(key) % 200;
  for (size_t i = 0; i < fill; ++i) v.push_back(static_cast<char>('a' + i % 26));
  return v;
}

// --------------------------------------------------------------- configs

std::string pool_config(uint16_t listen, const std::vector<uint16_t>& servers,
                        const std::vector<std::string>& directives,
                        const std::vector<uint32_t>& weights) {
  reload::PoolDef def;
  def.listen = reload::listen_on(listen);
  for (size_t i = 0; i < servers.size(); ++i) {
    def.servers.push_back({servers[i], i < weights.size() ? weights[i] : 1u});
  }
  def.directives = directives;
  return reload::yaml(def);
}

Copies::Copies(const std::string& config_text, size_t replicas)
    : where_(config_text), replicas_(replicas) {}

std::vector<uint16_t> Copies::of(std::string_view key) const {
  std::vector<uint16_t> out;
  for (size_t i : where_.ring().preference_list(key, replicas_)) out.push_back(where_.ports()[i]);
  return out;
}

uint16_t Copies::primary(std::string_view key) const { return where_.port_of(key); }

// ---------------------------------------------------------------- client

Client::Client(uint16_t port, std::chrono::milliseconds limit) : limit_(limit) {
  fd_ = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (fd_ < 0) {
    error_ = std::string("socket: ") + std::strerror(errno);
    return;
  }
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_port = htons(port);
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  if (::connect(fd_, reinterpret_cast<sockaddr*>(&a), sizeof(a)) != 0) {
    error_ = "connect to " + std::to_string(port) + ": " + std::strerror(errno);
    return;
  }
  int one = 1;
  setsockopt(fd_, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
}

Client::~Client() {
  if (fd_ >= 0) ::close(fd_);
}

bool Client::send(std::string_view bytes) {
  if (!ok()) return false;
  while (!bytes.empty()) {
    ssize_t n = ::send(fd_, bytes.data(), bytes.size(), MSG_NOSIGNAL);
    if (n <= 0) {
      error_ = std::string("send: ") + std::strerror(errno);
      return false;
    }
    bytes.remove_prefix(static_cast<size_t>(n));
  }
  return true;
}

bool Client::fill(Clock::time_point deadline) {
  auto left = std::chrono::duration_cast<std::chrono::milliseconds>(deadline - Clock::now());
  if (left.count() <= 0) {
    error_ = "timed out after " + std::to_string(limit_.count()) + " ms with '" +
             printable(buf_, 300) + "' received";
    return false;
  }
  pollfd p{fd_, POLLIN, 0};
  int r = poll(&p, 1, static_cast<int>(left.count()));
  if (r < 0 && errno == EINTR) return true;
  if (r <= 0) return true;  // the deadline check above decides
  char chunk[65536];
  ssize_t got = recv(fd_, chunk, sizeof(chunk), 0);
  if (got <= 0) {
    error_ = got == 0 ? "closed by peer" : std::string("recv: ") + std::strerror(errno);
    error_ += " with '" + printable(buf_, 300) + "' received";
    return false;
  }
  buf_.append(chunk, static_cast<size_t>(got));
  return true;
}

size_t Client::complete() const {
  std::string_view b(buf_);
  size_t at = 0;
  while (true) {
    size_t eol = b.find("\r\n", at);
    if (eol == std::string_view::npos) return 0;
    std::string_view line = b.substr(at, eol - at);
    if (line.starts_with("VALUE ")) {
      std::vector<std::string> f = fields_of(line);
      if (f.size() < 4) return eol + 2;
      size_t next = eol + 2 + std::stoull(f[3]) + 2;
      if (b.size() < next) return 0;
      at = next;
      continue;
    }
    if (line.starts_with("VA ")) {
      std::vector<std::string> f = fields_of(line);
      if (f.size() < 2) return eol + 2;
      size_t next = eol + 2 + std::stoull(f[1]) + 2;
      return b.size() < next ? 0 : next;
    }
    return eol + 2;
  }
}

std::string Client::read_reply() {
  auto deadline = Clock::now() + limit_;
  while (ok()) {
    if (size_t n = complete(); n > 0) {
      std::string reply = buf_.substr(0, n);
      buf_.erase(0, n);
      return reply;
    }
    if (!fill(deadline)) break;
  }
  return "";
}

std::string Client::call(std::string_view request) {
  if (!send(request)) return "";
  return read_reply();
}

std::string Client::read_for(std::chrono::milliseconds limit) {
  auto deadline = Clock::now() + limit;
  while (ok() && Clock::now() < deadline) {
    pollfd p{fd_, POLLIN, 0};
    auto left = std::chrono::duration_cast<std::chrono::milliseconds>(deadline - Clock::now());
    if (poll(&p, 1, static_cast<int>(std::max<int64_t>(left.count(), 0))) <= 0) continue;
    char chunk[65536];
    ssize_t got = recv(fd_, chunk, sizeof(chunk), 0);
    if (got <= 0) break;
    buf_.append(chunk, static_cast<size_t>(got));
  }
  std::string out = std::move(buf_);
  buf_.clear();
  return out;
}

std::string Client::set(std::string_view key, std::string_view value, uint32_t flags,
                        int64_t exptime, std::string_view verb, std::string_view extra) {
  std::string req = std::string(verb) + " " + std::string(key) + " " + std::to_string(flags) + " " +
                    std::to_string(exptime) + " " + std::to_string(value.size());
  if (!extra.empty()) req += " " + std::string(extra);
  req += "\r\n" + std::string(value) + "\r\n";
  return call(req);
}

std::optional<std::string> Client::get(std::string_view key) {
  std::string reply = call("get " + std::string(key) + "\r\n");
  std::vector<Value> values;
  if (!parse_values(reply, values) || values.size() > 1) {
    throw std::runtime_error("get " + std::string(key) + ": '" + printable(reply, 300) + "' " +
                             error_);
  }
  if (values.empty()) return std::nullopt;
  return values[0].data;
}

std::optional<Held> held_on(uint16_t port, std::string_view key) {
  Client c(port);
  std::string reply = c.call("mg " + std::string(key) + " v f t\r\n");
  if (reply == "EN\r\n") return std::nullopt;
  if (!reply.starts_with("VA ")) {
    throw std::runtime_error("mg on " + std::to_string(port) + ": '" + printable(reply, 300) +
                             "' " + c.error());
  }
  size_t eol = reply.find("\r\n");
  Held h;
  std::vector<std::string> f = fields_of(std::string_view(reply).substr(0, eol));
  for (size_t i = 2; i < f.size(); ++i) {
    if (f[i][0] == 'f') h.flags = static_cast<uint32_t>(std::stoul(f[i].substr(1)));
    if (f[i][0] == 't') h.ttl = std::stoll(f[i].substr(1));
  }
  h.data = reply.substr(eol + 2, reply.size() - eol - 4);
  return h;
}

std::map<std::string, std::string> values_on(uint16_t port, const std::vector<std::string>& keys) {
  std::map<std::string, std::string> out;
  reload::Conn c(port);
  for (size_t at = 0; at < keys.size(); at += 100) {
    std::vector<std::string> batch(keys.begin() + static_cast<ptrdiff_t>(at),
                                   keys.begin() + static_cast<ptrdiff_t>(std::min(at + 100, keys.size())));
    std::vector<reload::Hit> hits;
    if (!c.get(batch, hits)) {
      throw std::runtime_error("multi-get on " + std::to_string(port) + ": " + c.describe());
    }
    for (reload::Hit& h : hits) out[h.key] = std::move(h.data);
  }
  return out;
}

bool set_on(uint16_t port, std::string_view key, std::string_view value, uint32_t flags,
            int64_t exptime) {
  Client c(port);
  return c.set(key, value, flags, exptime) == "STORED\r\n";
}

// ---------------------------------------------------------------- proxy

Proxy::Proxy(const std::function<std::string(uint16_t listen)>& config,
             std::vector<std::string> extra)
    : port_(free_port()) {
  text_ = config(port_);
  log_ = dir_.path() + "/memshard.log";
  proxy_ = ops::start_proxy(dir_, text_, port_, std::move(extra), log_);
}

Proxy::~Proxy() {
  if (::testing::Test::HasFailure()) {
    std::fprintf(stderr, "--- memshard's config:\n%s--- memshard's log (tail):\n%s\n", text_.c_str(),
                 log_tail().c_str());
  }
}

std::string Proxy::log_tail(size_t bytes) const {
  std::string all = reload::read_file(log_);
  return all.size() > bytes ? all.substr(all.size() - bytes) : all;
}

::testing::AssertionResult Proxy::reload(const std::string& text) {
  uint64_t g = reload::stat_of(reload::proxy_stats(port_), "config_generation");
  text_ = text;
  dir_.write("memshard.yml", text);
  proxy_->process().signal(SIGHUP);
  if (!reload::wait_stat(port_, "config_generation", [&](uint64_t v) { return v == g + 1; })) {
    return ::testing::AssertionFailure() << "config_generation did not move past " << g;
  }
  return ::testing::AssertionSuccess();
}

std::optional<uint64_t> json_pool_counter(uint16_t stats_port, const std::string& name) {
  std::optional<ops::Json> j = ops::fetch_stats_json(stats_port);
  if (!j) return std::nullopt;
  const ops::Json* pool = j->get("main");
  const ops::Json* v = pool != nullptr ? pool->get(name) : nullptr;
  return v != nullptr ? v->u64() : std::nullopt;
}

std::optional<double> metric_pool_value(uint16_t stats_port, const std::string& name) {
  std::vector<ops::Sample> samples;
  if (!ops::fetch_metrics(stats_port, samples)) return std::nullopt;
  return ops::metric(samples, name, {{"pool", "main"}});
}

bool eventually(const std::function<bool()>& pred, std::chrono::milliseconds limit) {
  auto deadline = Clock::now() + limit;
  while (true) {
    if (pred()) return true;
    if (Clock::now() >= deadline) return false;
    std::this_thread::sleep_for(20ms);
  }
}

// ----------------------------------------------------------------- load

Load::Load(uint16_t port, std::vector<std::pair<std::string, std::string>> existing,
           std::string tag, int threads, uint64_t max_ops_per_thread,
           std::chrono::milliseconds max_time)
    : port_(port),
      existing_(std::move(existing)),
      tag_(std::move(tag)),
      max_ops_(max_ops_per_thread),
      start_(Clock::now()),
      deadline_(start_ + max_time) {
  for (int i = 0; i < threads; ++i) threads_.emplace_back([this, i] { run(i); });
}

Load::~Load() { stop(); }

void Load::stop() {
  stop_ = true;
  for (std::thread& t : threads_) {
    if (t.joinable()) t.join();
  }
}

void Load::error(const std::string& what) {
  ++errors_;
  std::lock_guard<std::mutex> lock(mu_);
  if (first_errors_.size() < 10) {
    auto at = std::chrono::duration_cast<std::chrono::milliseconds>(Clock::now() - start_);
    first_errors_.push_back("at " + std::to_string(at.count()) + " ms: " + what);
  }
}

std::string Load::first_errors() const {
  std::lock_guard<std::mutex> lock(mu_);
  std::string out;
  for (const std::string& e : first_errors_) out += "  " + e + "\n";
  return out;
}

std::vector<std::pair<std::string, std::string>> Load::written() const {
  std::lock_guard<std::mutex> lock(mu_);
  return written_;
}

void Load::run(int index) {
  std::mt19937_64 rng(seed() + static_cast<uint64_t>(index) * 7919);
  auto client = std::make_unique<Client>(port_);
  std::string last_key, last_value;
  for (uint64_t i = 0; i < max_ops_ && !stop_ && Clock::now() < deadline_; ++i) {
    if (!client->ok()) {
      error("thread " + std::to_string(index) + ": connection: " + client->error());
      client = std::make_unique<Client>(port_);
      std::this_thread::sleep_for(10ms);
      continue;
    }
    ++ops_;
    if (i % 10 == 9) std::this_thread::sleep_for(1ms);
    uint64_t kind = i % 8;
    if (kind == 0) {
      std::string key = random_key(tag_ + ":" + std::to_string(index), i);
      std::string value = value_of(key, tag_);
      std::string reply = client->set(key, value);
      if (reply != "STORED\r\n") {
        error("set " + key + ": '" + printable(reply, 200) + "' " + client->error());
        continue;
      }
      std::lock_guard<std::mutex> lock(mu_);
      written_.emplace_back(key, value);
      last_key = key;
      last_value = value;
    } else if (kind == 1 && !last_key.empty()) {
      std::string reply = client->call("get " + last_key + "\r\n");
      std::vector<Value> got;
      if (!parse_values(reply, got) || got.size() != 1 || got[0].data != last_value) {
        error("get " + last_key + " (just set): '" + printable(reply, 200) + "' " +
              client->error());
      }
    } else if (kind == 2 && existing_.size() >= 5) {
      std::vector<size_t> picks;
      std::string req = "get";
      for (int k = 0; k < 5; ++k) {
        picks.push_back(rng() % existing_.size());
        req += " " + existing_[picks.back()].first;
      }
      std::string reply = client->call(req + "\r\n");
      std::vector<Value> got;
      bool good = parse_values(reply, got) && got.size() == picks.size();
      for (size_t k = 0; good && k < picks.size(); ++k) {
        good = got[k].key == existing_[picks[k]].first && got[k].data == existing_[picks[k]].second;
      }
      if (!good) error(req + ": '" + printable(reply, 300) + "' " + client->error());
    } else if (!existing_.empty()) {
      const auto& [key, value] = existing_[rng() % existing_.size()];
      std::string reply = client->call("get " + key + "\r\n");
      std::vector<Value> got;
      if (!parse_values(reply, got) || got.size() != 1 || got[0].data != value) {
        error("get " + key + ": '" + printable(reply, 200) + "' " + client->error());
      }
    }
  }
}

}  // namespace memshard::testing::replicas
