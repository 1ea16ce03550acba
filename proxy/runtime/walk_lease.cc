#include "proxy/runtime/walk_lease.h"

#include <algorithm>
#include <memory>
#include <sstream>

#include "ketama/hash.h"
#include "proxy/protocol/numbers.h"
#include "proxy/protocol/own_requests.h"
#include "proxy/protocol/reply_status.h"
#include "proxy/protocol/retrieval_reply.h"

namespace memshard::proxy {

namespace {

// What makes two instances' walks the same walk: the pool, every
// placement involved (points and servers), and the server walked.
void describe_ring(std::string& out, const ketama::Ring& ring,
                   const std::vector<ServerInfo>& servers, size_t replicas) {
  out += "ring " + std::to_string(replicas) + "\n";
  for (const ServerInfo& s : servers) out += s.identity + "\n";
  for (const auto& p : ring.points()) {
    out += std::to_string(p.value) + ":" + std::to_string(p.server) + " ";
  }
  out += "\n";
  // mcrouter's hashes have no points: their list, salt and weights.
  const ketama::RingOptions& o = ring.options();
  if (ketama::is_mcrouter_distribution(o.distribution)) {
    out += std::string(ketama::distribution_name(o.distribution)) + " salt " + o.hash_salt + "\n";
    for (uint32_t slot : ring.slots()) {
      out += std::to_string(slot) + ":" + ring.servers()[slot].weight_text() + " ";
    }
    out += "\n";
  }
}

std::string hex(const unsigned char* bytes, size_t n) {
  static constexpr char kDigits[] = "0123456789abcdef";
  std::string out;
  for (size_t i = 0; i < n; ++i) {
    out.push_back(kDigits[bytes[i] >> 4]);
    out.push_back(kDigits[bytes[i] & 15]);
  }
  return out;
}

}  // namespace

std::string WalkLease::key_for(const Pool& pool, const ServerInfo& server) {
  std::string text = pool.config.name + "\n";
  describe_ring(text, pool.ring, pool.servers, pool.config.replicas);
  for (const PastRing& p : pool.past) describe_ring(text, p.ring, p.servers, p.replicas);
  text += "walk " + server.identity + "\n";
  unsigned char digest[16];
  ketama::md5_digest(text, digest);
  return std::string(kKeyPrefix) + hex(digest, sizeof(digest));
}

WalkLease::WalkLease(const Pool& pool, const ServerInfo& server, std::string instance,
                     int timeout_ms)
    : server_(server),
      key_(key_for(pool, server)),
      instance_(std::move(instance)),
      timeout_ms_(timeout_ms) {}

WalkLease::~WalkLease() = default;

BlockingConn& WalkLease::conn() {
  if (!conn_ || !conn_->ok()) conn_ = std::make_unique<BlockingConn>(server_, timeout_ms_);
  return *conn_;
}

std::string WalkLease::value(bool done, uint64_t seen, uint64_t moved) const {
  return std::string(done ? "done " : "walking ") + instance_ + " " + std::to_string(seen) + " " +
         std::to_string(moved);
}

bool WalkLease::read(Holder& out, uint64_t& cas, bool& missing) {
  cas = 0;
  std::string reply;
  proto::MetaValue value;
  // A lease's value is a few words: anything long is not one.
  const BlockingConn::Lookup found = conn().meta_get(key_, true, 1024, reply, value);
  missing = found == BlockingConn::Lookup::miss;
  uint64_t token = 0;
  if (found != BlockingConn::Lookup::hit || !proto::parse_mc_uint64(value.cas, token)) return false;
  std::istringstream words{std::string(value.data)};
  std::string state;
  Holder h;
  if (!(words >> state >> h.instance >> h.seen >> h.moved)) return false;
  h.done = state == "done";
  out = std::move(h);
  cas = token;
  return true;
}

bool WalkLease::write(const std::string& value, int64_t ttl_seconds, uint64_t cas) {
  BlockingConn& c = conn();
  std::string request, line;
  return proto::append_store_once(key_, value, ttl_seconds, cas, request) && c.send(request) &&
         c.read_line(line) && proto::classify_reply_line(line) == proto::ReplyStatus::done;
}

WalkLease::Outcome WalkLease::take() {
  // Twice at most: a lease that lapses between the add and the read is
  // free for the second add.
  for (int attempt = 0; attempt < 2; ++attempt) {
    if (write(value(false, 0, 0), kTtlSeconds, 0)) {
      ours_ = true;
      holder_ = Holder{false, instance_, 0, 0};
      return Outcome::taken;
    }
    if (!conn().ok()) return Outcome::unreachable;
    uint64_t cas = 0;
    bool missing = false;
    if (read(holder_, cas, missing)) return holder_.done ? Outcome::done : Outcome::held;
    if (!missing) return conn().ok() ? Outcome::held : Outcome::unreachable;
  }
  return Outcome::held;
}

bool WalkLease::renew(uint64_t seen, uint64_t moved) {
  Holder h;
  uint64_t cas = 0;
  bool missing = false;
  if (!read(h, cas, missing)) {
    // Lapsed (this walker was too slow): ours again only if nobody took it.
    ours_ = missing && write(value(false, seen, moved), kTtlSeconds, 0);
    return ours_;
  }
  if (h.done || h.instance != instance_) {
    holder_ = h;
    ours_ = false;
    return false;
  }
  ours_ = write(value(false, seen, moved), kTtlSeconds, cas);
  return ours_;
}

bool WalkLease::finish(uint64_t seen, uint64_t moved, int64_t ttl_seconds) {
  Holder h;
  uint64_t cas = 0;
  bool missing = false;
  const int64_t ttl = std::max<int64_t>(ttl_seconds, 1);
  if (!read(h, cas, missing)) {
    return missing && write(value(true, seen, moved), ttl, 0);
  }
  if (h.instance != instance_) return false;
  ours_ = false;
  return write(value(true, seen, moved), ttl, cas);
}

void WalkLease::release() {
  if (!ours_) return;
  ours_ = false;
  Holder h;
  uint64_t cas = 0;
  bool missing = false;
  if (!read(h, cas, missing) || h.done || h.instance != instance_) return;
  std::string request, line;
  if (proto::append_delete_if(key_, cas, false, request) && conn().send(request)) {
    conn().read_line(line);
  }
}

}  // namespace memshard::proxy
