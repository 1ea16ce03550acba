#include "binary_util.h"

#include <poll.h>
#include <sys/socket.h>
#include <sys/wait.h>

#include <fstream>
#include <sstream>
#include <stdexcept>
#include <thread>

namespace memshard::testing::bin {
namespace {

using namespace std::chrono_literals;
using Clock = std::chrono::steady_clock;

std::string read_file(const std::string& path) {
  std::ifstream in(path);
  std::stringstream all;
  all << in.rdbuf();
  return all.str();
}

}  // namespace

std::string be16(uint16_t v) {
  return {char(v >> 8), char(v & 0xff)};
}
std::string be32(uint32_t v) {
  return be16(uint16_t(v >> 16)) + be16(uint16_t(v));
}
std::string be64(uint64_t v) {
  return be32(uint32_t(v >> 32)) + be32(uint32_t(v));
}
uint64_t read_be(std::string_view bytes) {
  uint64_t v = 0;
  for (size_t i = 0; i < bytes.size() && i < 8; ++i) v = (v << 8) | uint8_t(bytes[i]);
  return v;
}

std::string Frame::bytes() const {
  std::string out;
  out += char(magic);
  out += char(opcode);
  out += be16(key_length.value_or(uint16_t(key.size())));
  out += char(extras_length.value_or(uint8_t(extras.size())));
  out += char(data_type);
  out += be16(status);
  out += be32(body_length.value_or(uint32_t(extras.size() + key.size() + value.size())));
  out += be32(opaque);
  out += be64(cas);
  out += extras;
  out += key;
  out += value;
  return out;
}

std::string request(uint8_t opcode, std::string_view key, std::string_view extras,
                    std::string_view value, uint32_t opaque, uint64_t cas) {
  Frame f;
  f.opcode = opcode;
  f.key = key;
  f.extras = extras;
  f.value = value;
  f.opaque = opaque;
  f.cas = cas;
  return f.bytes();
}

std::string store_extras(uint32_t flags, uint32_t exptime) {
  return be32(flags) + be32(exptime);
}
std::string arith_extras(uint64_t delta, uint64_t initial, uint32_t exptime) {
  return be64(delta) + be64(initial) + be32(exptime);
}
std::string touch_extras(uint32_t exptime) {
  return be32(exptime);
}

std::vector<Frame> parse_frames(std::string_view bytes, std::string* rest) {
  std::vector<Frame> out;
  size_t at = 0;
  while (bytes.size() - at >= 24) {
    std::string_view h = bytes.substr(at, 24);
    Frame f;
    f.magic = uint8_t(h[0]);
    f.opcode = uint8_t(h[1]);
    f.key_length = uint16_t(read_be(h.substr(2, 2)));
    f.extras_length = uint8_t(h[4]);
    f.data_type = uint8_t(h[5]);
    f.status = uint16_t(read_be(h.substr(6, 2)));
    f.body_length = uint32_t(read_be(h.substr(8, 4)));
    f.opaque = uint32_t(read_be(h.substr(12, 4)));
    f.cas = read_be(h.substr(16, 8));
    if (bytes.size() - at - 24 < *f.body_length) break;
    std::string_view body = bytes.substr(at + 24, *f.body_length);
    size_t e = std::min<size_t>(*f.extras_length, body.size());
    size_t k = std::min<size_t>(*f.key_length, body.size() - e);
    f.extras = body.substr(0, e);
    f.key = body.substr(e, k);
    f.value = body.substr(e + k);
    out.push_back(std::move(f));
    at += 24 + body.size();
  }
  if (rest != nullptr) *rest = std::string(bytes.substr(at));
  return out;
}

std::string describe(const Frame& f) {
  std::ostringstream o;
  o << std::hex << "magic=0x" << int(f.magic) << " op=0x" << int(f.opcode) << " status=0x"
    << f.status << " opaque=0x" << f.opaque << std::dec << " cas=" << f.cas
    << " extras=" << printable(f.extras) << " key=" << printable(f.key)
    << " value=" << printable(f.value, 120);
  return o.str();
}
std::string describe(const std::vector<Frame>& frames) {
  std::string out;
  for (const Frame& f : frames) out += describe(f) + "\n";
  return out.empty() ? "(no frames)\n" : out;
}

namespace {
// Up to n bytes from fd (never more: what follows stays in the socket for
// the next read); empty on timeout or close.
std::string recv_upto(int fd, size_t n, Clock::time_point deadline) {
  auto left = std::chrono::duration_cast<std::chrono::milliseconds>(deadline - Clock::now());
  if (left.count() <= 0) return {};
  pollfd p{fd, POLLIN, 0};
  if (poll(&p, 1, static_cast<int>(left.count())) <= 0) return {};
  std::string buf(n, '\0');
  ssize_t got = recv(fd, buf.data(), n, 0);
  if (got <= 0) return {};
  buf.resize(size_t(got));
  return buf;
}

// Reads frames until `done(frames)` or time runs out; bytes of a partial
// frame are kept between reads.
template <class Done>
std::vector<Frame> read_frames_while(RawClient& c, std::chrono::milliseconds limit, Done done) {
  std::vector<Frame> frames;
  std::string pending;
  auto deadline = Clock::now() + limit;
  while (!done(frames)) {
    // At least a header, then the rest of the frame it announces.
    size_t want = 24;
    if (pending.size() >= 24) want = 24 + size_t(read_be(std::string_view(pending).substr(8, 4)));
    std::string got = recv_upto(c.fd(), want - std::min(want, pending.size()), deadline);
    if (got.empty()) break;
    pending += got;
    std::string rest;
    for (Frame& f : parse_frames(pending, &rest)) frames.push_back(std::move(f));
    pending = std::move(rest);
  }
  return frames;
}
}  // namespace

std::vector<Frame> read_frames(RawClient& c, size_t n, std::chrono::milliseconds limit) {
  return read_frames_while(c, limit, [n](const std::vector<Frame>& f) { return f.size() >= n; });
}
std::optional<Frame> read_frame(RawClient& c, std::chrono::milliseconds limit) {
  auto frames = read_frames(c, 1, limit);
  if (frames.empty()) return std::nullopt;
  return frames.front();
}
std::vector<Frame> read_frames_until(RawClient& c, const std::function<bool(const Frame&)>& last,
                                     std::chrono::milliseconds limit) {
  return read_frames_while(
      c, limit, [&last](const std::vector<Frame>& f) { return !f.empty() && last(f.back()); });
}
std::vector<Frame> read_frames_until(RawClient& c, uint8_t opcode,
                                     std::chrono::milliseconds limit) {
  return read_frames_until(
      c, [opcode](const Frame& f) { return f.opcode == opcode; }, limit);
}

std::optional<Held> held(uint16_t server_port, std::string_view key) {
  RawClient c(server_port);
  c.send(request(kGet, key));
  auto f = read_frame(c);
  if (!f)
    throw std::runtime_error("no answer from memcached on port " + std::to_string(server_port));
  if (f->status != kOk) return std::nullopt;
  return Held{f->value, f->flags(), f->cas};
}

std::string kind_name(Kind k) {
  return k == Kind::memcached ? "memcached" : "memshard";
}

Target::Target(Kind kind, std::vector<std::string> memcached_args)
    : kind_(kind), dir_(std::make_unique<TempDir>()) {
  if (kind == Kind::memcached) {
    lone_ = std::make_unique<Memcached>(0, memcached_args);
    port_ = lone_->port();
    return;
  }
  fleet_ = std::make_unique<Fleet>(3, memcached_args);
  port_ = free_port();
  PoolSpec pool;
  pool.name = "binary";
  pool.listen = "127.0.0.1:" + std::to_string(port_);
  pool.directives = {{"hash", "fnv1a_64"}, {"distribution", "ketama"}, {"timeout", "3000"}};
  pool.servers = fleet_->server_lines();
  config_ = dir_->write("memshard.yml", pool_yaml(pool));
  log_ = dir_->path() + "/memshard.log";
  // -s 0: no stats port (the default one would be shared by tests run at once).
  memshard_ = std::make_unique<Memshard>(
      config_, std::vector<std::string>{"--threads", "2", "-s", "0"}, port_, log_);
  // memshard handles SIGTERM once it has logged that it started.
  auto deadline = Clock::now() + 10s;
  while (Clock::now() < deadline && read_file(log_).find(" started: ") == std::string::npos) {
    std::this_thread::sleep_for(5ms);
  }
}

Target::~Target() {
  std::string why;
  stop(&why);
}

size_t Target::backends() const {
  return kind_ == Kind::memcached ? 1 : fleet_->size();
}

uint16_t Target::backend_port(size_t i) {
  return kind_ == Kind::memcached ? lone_->port() : (*fleet_)[i].port();
}

std::vector<size_t> Target::owners(const std::vector<std::string>& keys) {
  if (kind_ == Kind::memcached) return std::vector<size_t>(keys.size(), 0);
  std::string error;
  std::vector<std::string> addresses = ring_lookup(config_, keys, "", &error);
  if (addresses.size() != keys.size()) throw std::runtime_error("ring lookup failed: " + error);
  std::vector<size_t> out;
  for (const auto& a : addresses) out.push_back(fleet_->index_of(a));
  return out;
}

std::vector<std::vector<std::string>> Target::keys_by_backend(size_t per_backend,
                                                              const std::string& prefix) {
  std::vector<std::vector<std::string>> out(backends());
  for (size_t round = 0; round < 40; ++round) {
    std::vector<std::string> candidates;
    for (size_t i = 0; i < per_backend * backends() * 4; ++i) {
      candidates.push_back(std::to_string(i) + "_" + std::to_string(round) + "_" + prefix);
    }
    std::vector<size_t> own = owners(candidates);
    for (size_t i = 0; i < own.size(); ++i) {
      if (own[i] < out.size() && out[own[i]].size() < per_backend)
        out[own[i]].push_back(candidates[i]);
    }
    bool done = true;
    for (const auto& v : out) done = done && v.size() == per_backend;
    if (done) return out;
  }
  throw std::runtime_error("could not find keys for every backend");
}

std::vector<size_t> Target::holders(std::string_view key) {
  std::vector<size_t> out;
  for (size_t i = 0; i < backends(); ++i) {
    if (held(backend_port(i), key)) out.push_back(i);
  }
  return out;
}

std::string Target::log_tail(size_t max) const {
  if (log_.empty()) return "";
  std::string text = read_file(log_);
  return text.size() > max ? text.substr(text.size() - max) : text;
}

bool Target::stop(std::string* why) {
  if (!memshard_) return true;
  int st = memshard_->process().stop(std::chrono::milliseconds(10000));
  memshard_.reset();
  bool ok = WIFEXITED(st) && WEXITSTATUS(st) == 0;
  if (!ok) *why = "memshard did not exit cleanly on SIGTERM: status " + std::to_string(st);
  std::string log = read_file(log_);
  for (const char* report :
       {"AddressSanitizer", "LeakSanitizer", "runtime error:", "ThreadSanitizer"}) {
    if (log.find(report) != std::string::npos) {
      ok = false;
      *why += std::string(" memshard log has a ") + report + " report;";
    }
  }
  return ok;
}

}  // namespace memshard::testing::bin
