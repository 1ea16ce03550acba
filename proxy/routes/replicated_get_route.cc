#include "proxy/routes/replicated_get_route.h"

#include <charconv>
#include <string>

#include "proxy/protocol/meta_codec.h"
#include "proxy/protocol/replies.h"
#include "proxy/routes/held_request.h"
#include "proxy/support/stats.h"

namespace memshard::proxy {

namespace {

std::string contents(evbuffer* b) {
  std::string s(evbuffer_get_length(b), '\0');
  evbuffer_copyout(b, s.data(), s.size());
  return s;
}

template <typename Int>
Int number(std::string_view s) {
  Int v = 0;
  std::from_chars(s.data(), s.data() + s.size(), v);
  return v;
}

// A request the proxy sends without waiting for its answer (read repair,
// the touches of a gat's other copies): it frees itself once answered.
class Unanswered final : public SlotOwner {
 public:
  static void send(const HeldRequest& like, std::string bytes, size_t header_bytes, Route& route,
                   RouteLife* life) {
    auto* u = new Unanswered(like, std::move(bytes), header_bytes, life);
    u->slot_ = u->held_.slots().acquire_slot(u);
    u->sending_ = true;
    u->held_.send_copy(route, *u->slot_);
    u->sending_ = false;
    if (u->slot_->complete) u->on_slot_complete();
  }
  void on_slot_complete() override {
    if (sending_) return;
    held_.slots().release_slot(slot_);
    delete this;
  }

 private:
  Unanswered(const HeldRequest& like, std::string bytes, size_t header_bytes, RouteLife* life)
      : count_(life), held_(like, std::move(bytes), header_bytes) {}
  HeldCount count_;
  HeldRequest held_;
  ReplySlot* slot_ = nullptr;
  bool sending_ = false;
};

}  // namespace

// One key of the client's retrieval, going down its copies.
class ReplicatedGetRoute::KeyRead final : public SlotOwner {
 public:
  KeyRead(const ReplicatedGetRoute& route, const RouteRequest& req, ReplySlot& client,
          uint32_t position, std::string_view key)
      : count_(route.life_),
        route_(route),
        held_(req, first_line(req.request, key), first_line(req.request, key).size()),
        client_(client),
        position_(position),
        key_(key) {
    with_cas_ =
        req.request.command == proto::Command::gets || req.request.command == proto::Command::gats;
    touch_ =
        req.request.command == proto::Command::gat || req.request.command == proto::Command::gats;
    exptime_value_ = req.request.exptime_value;
  }

  // gat, gats: every other live copy is touched as the read's copy is.
  void touch_others(std::string_view exptime) {
    for (size_t copy = 1; copy < route_.keys_.size(); ++copy) {
      std::string line = "touch " + key_ + " " + std::string(exptime) + " noreply\r\n";
      const size_t header = line.size();
      Unanswered::send(held_, std::move(line), header, *route_.keys_[copy], route_.life_);
    }
  }

  // Tries until one waits for a server; true when this key is done (this
  // is then gone).
  bool run() {
    while (next_ < route_.reads_.size()) {
      const size_t copy = next_++;
      slot_ = held_.slots().acquire_slot(this);
      sending_ = true;
      if (copy == 0) {
        held_.send_copy(*route_.reads_[0], *slot_);
      } else {
        held_.send_copy(*route_.keys_[copy], *slot_);
      }
      sending_ = false;
      if (!slot_->complete) return false;
      if (settled(copy)) return true;
    }
    return finish_failed();  // no copy at all
  }

  void on_slot_complete() override {
    if (sending_) return;
    if (!settled(next_ - 1)) run();
  }

  bool synchronous = true;

 private:
  static std::string first_line(const proto::Request& r, std::string_view key) {
    std::string line;
    switch (r.command) {
      case proto::Command::gets:
        line = "gets ";
        break;
      case proto::Command::gat:
        line.append("gat ").append(r.exptime).append(" ");
        break;
      case proto::Command::gats:
        line.append("gats ").append(r.exptime).append(" ");
        break;
      default:
        line = "get ";
        break;
    }
    line.append(key).append("\r\n");
    return line;
  }

  // The mg for a try after the first: the value, its flags, its TTL (for
  // repair), the cas for gets/gats, the touch for gat/gats.
  std::string retry_line() const {
    proto::Request r;
    r.command = proto::Command::meta_get;
    r.keys.push_back(key_);
    r.meta_flags.add('v');
    r.meta_flags.add('f');
    r.meta_flags.add('t');
    if (with_cas_) r.meta_flags.add('c');
    if (touch_) {
      r.has_exptime = true;
      r.exptime_value = exptime_value_;
    }
    std::string out;
    (void)proto::append_meta_request(r, {}, out);
    return out;
  }

  // The try at `copy` ended: true when the key is done.
  bool settled(size_t copy) {
    const std::string reply = contents(slot_->reply);
    held_.slots().release_slot(slot_);
    slot_ = nullptr;
    const bool error = reply.starts_with("SERVER_ERROR") || reply.empty();
    const bool miss = reply == "END\r\n" || reply == "EN\r\n";
    if (!error && !miss) return finish_hit(reply);
    if (miss) {
      missed_copies_.push_back(copy);
      if (!route_.on_miss_) return done();
    } else if (error_.empty()) {
      error_ = reply;
    }
    // A miss is an answer: copies that fail after it do not turn it into
    // an error.
    if (next_ >= route_.reads_.size()) return missed_copies_.empty() ? finish_failed() : done();
    held_.pool_stats().read_failovers.add();
    if (ServerStats* c = counters(copy)) c->read_failovers.add();
    std::string line = retry_line();
    const size_t header = line.size();
    held_.replace(std::move(line), header);
    return false;
  }

  bool finish_hit(const std::string& reply) {
    Fragment& f = client_.fragments[client_.key_refs[position_].fragment];
    std::string block;
    if (reply.starts_with("VALUE ")) {
      block = reply.substr(0, reply.size() - 5);  // without END
    } else {
      // VA <len> f<flags> t<ttl> [c<cas>]: the classic block it stands for.
      const size_t eol = reply.find("\r\n");
      std::string_view line(reply.data(), eol);
      uint64_t length = 0;
      std::string_view flags = "0", ttl, cas;
      size_t i = 3;
      bool first = true;
      while (i < line.size()) {
        size_t end = line.find(' ', i);
        if (end == std::string_view::npos) end = line.size();
        std::string_view token = line.substr(i, end - i);
        i = end + 1;
        if (token.empty()) continue;
        if (first) {
          length = number<uint64_t>(token);
          first = false;
        } else if (token[0] == 'f') {
          flags = token.substr(1);
        } else if (token[0] == 't') {
          ttl = token.substr(1);
        } else if (token[0] == 'c') {
          cas = token.substr(1);
        }
      }
      const std::string_view data = std::string_view(reply).substr(eol + 2, length);
      block.append("VALUE ").append(key_).append(" ").append(flags).append(" ");
      block.append(std::to_string(length));
      if (with_cas_) block.append(" ").append(cas);
      block.append("\r\n").append(data).append("\r\n");
      if (route_.repair_) repair(flags, ttl, data);
    }
    evbuffer_add(f.values, block.data(), block.size());
    client_.key_refs[position_].block_bytes = static_cast<uint32_t>(block.size());
    f.next_key = 1;
    return done();
  }

  // Writes what a later copy had back to the copies that missed it.
  void repair(std::string_view flags, std::string_view ttl, std::string_view data) {
    for (size_t copy : missed_copies_) {
      proto::Request r;
      r.command = proto::Command::meta_set;
      r.keys.push_back(key_);
      r.flags = number<uint32_t>(flags);
      // t-1: no expiry (T0 is memcached's "never"); else what remains.
      const int64_t remaining = ttl == "-1" || ttl.empty() ? 0 : number<int64_t>(ttl);
      r.has_exptime = remaining != 0;
      r.exptime_value = remaining;
      r.mode = proto::Mode::add;
      r.meta_flags.add('M');
      r.quiet = true;
      r.data_bytes = data.size() + 2;
      std::string bytes;
      if (!proto::append_meta_request(r, data, bytes)) continue;
      const size_t header = bytes.size() - data.size() - 2;
      held_.pool_stats().read_repairs.add();
      if (ServerStats* c = counters(copy)) c->read_repairs.add();
      Unanswered::send(held_, std::move(bytes), header, *route_.keys_[copy], route_.life_);
    }
  }

  ServerStats* counters(size_t copy) const {
    return route_.replicas_ == nullptr ? nullptr : route_.replicas_->counters(key_, copy);
  }

  bool finish_failed() {
    Fragment& f = client_.fragments[client_.key_refs[position_].fragment];
    f.failed = true;
    if (client_.error.empty()) {
      client_.error =
          error_.empty() ? std::string(proto::reply::own::kBackendUnavailable) + "\r\n" : error_;
    }
    return done();
  }

  bool done() {
    finish_work(this, client_, synchronous);
    return true;
  }

  HeldCount count_;
  const ReplicatedGetRoute& route_;
  HeldRequest held_;
  ReplySlot& client_;
  uint32_t position_;
  std::string key_;
  int64_t exptime_value_ = 0;
  bool with_cas_ = false;
  bool touch_ = false;
  ReplySlot* slot_ = nullptr;
  size_t next_ = 0;
  std::vector<size_t> missed_copies_;
  std::string error_;
  bool sending_ = false;
};

void ReplicatedGetRoute::send(RouteRequest& req, ReplySlot& slot) {
  slot.kind = SlotKind::retrieval;
  const auto& keys = req.request.keys;
  for (uint32_t pos = 0; pos < keys.size(); ++pos) {
    const auto f = static_cast<uint32_t>(slot.fragment_count);
    slot.add_fragment().key_positions.push_back(pos);
    const auto offset = static_cast<uint32_t>(slot.keys.size());
    slot.keys.append(keys[pos]);
    slot.key_refs.push_back(KeyRef{offset, static_cast<uint32_t>(keys[pos].size()), f, 0});
  }
  const bool touch =
      req.request.command == proto::Command::gat || req.request.command == proto::Command::gats;
  // Counted before any key can finish, so that the last one completes it.
  slot.outstanding += static_cast<uint32_t>(keys.size());
  for (uint32_t pos = 0; pos < keys.size(); ++pos) {
    auto* read = new KeyRead(*this, req, slot, pos, slot.key(pos));
    if (touch) read->touch_others(req.request.exptime);
    if (!read->run()) read->synchronous = false;
  }
  evbuffer_drain(req.in, req.header_bytes);
}

}  // namespace memshard::proxy
