#include "proxy/routes/replicated_get_route.h"

#include <string>

#include "proxy/protocol/meta_codec.h"
#include "proxy/protocol/replies.h"
#include "proxy/protocol/retrieval_reply.h"
#include "proxy/routes/held_request.h"
#include "proxy/routes/warm_copy.h"
#include "proxy/support/stats.h"

namespace memshard::proxy {

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
      send_unanswered(held_, std::move(line), header, *route_.keys_[copy], route_.life_);
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

  // The mg for a try after the first (warm_copy.h).
  std::string retry_line() const {
    return fallback_line(key_, with_cas_, touch_ ? &exptime_value_ : nullptr);
  }

  // The try at `copy` ended: true when the key is done.
  bool settled(size_t copy) {
    const std::string reply = reply_text(*slot_);
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
    } else if (auto v = proto::parse_meta_value(reply)) {
      block = proto::classic_block(key_, *v, with_cas_);
      if (route_.repair_) repair(*v);
    }
    evbuffer_add(f.values, block.data(), block.size());
    client_.key_refs[position_].block_bytes = static_cast<uint32_t>(block.size());
    f.next_key = 1;
    return done();
  }

  // Writes what a later copy had back to the copies that missed it.
  void repair(const proto::MetaValue& v) {
    for (size_t copy : missed_copies_) {
      std::string bytes;
      if (!proto::append_copy_request(key_, v, true, bytes)) continue;
      const size_t header = bytes.size() - v.data.size() - 2;
      held_.pool_stats().read_repairs.add();
      if (ServerStats* c = counters(copy)) c->read_repairs.add();
      send_unanswered(held_, std::move(bytes), header, *route_.keys_[copy], route_.life_);
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
