#include "proxy/routes/warm_get_route.h"

#include <array>
#include <deque>
#include <optional>
#include <string>
#include <vector>

#include "proxy/protocol/retrieval_reply.h"
#include "proxy/routes/held_request.h"
#include "proxy/routes/key_route.h"
#include "proxy/routes/warm_copy.h"
#include "proxy/support/stats.h"

namespace memshard::proxy {

namespace {

bool touches(proto::Command c) {
  return c == proto::Command::gat || c == proto::Command::gats;
}
bool with_cas(proto::Command c) {
  return c == proto::Command::gets || c == proto::Command::gats;
}

}  // namespace

// One client retrieval: the pool's answer, then the lookups of its moved
// misses. Deletes itself once the client's slot has its reply.
class WarmGetRoute::Read final : public SlotOwner {
 public:
  Read(const WarmGetRoute& route, RouteRequest& req, ReplySlot& client)
      : count_(route.life_), route_(route), held_(req), client_(client) {}

  // True when the reply was complete before returning (this is gone).
  bool run() {
    first_ = held_.slots().acquire_slot(this);
    sending_ = true;
    held_.send_copy(route_.inner_, *first_);
    sending_ = false;
    if (!first_->complete) return false;
    return answered_first();
  }

  // Only the pool's answer has this as its owner; lookups have their own.
  void on_slot_complete() override {
    if (!sending_) answered_first();
  }

  bool synchronous = true;

 private:
  // A lookup of one missed key on one old server, or the next.
  struct Lookup final : SlotOwner {
    Read* read = nullptr;
    size_t position = 0;
    std::array<Server*, kMaxPastOwners> owners{};
    size_t owner_count = 0;
    size_t next = 0;
    WarmGuard::Sample sample;
    ReplySlot* slot = nullptr;
    bool sending = false;
    void on_slot_complete() override {
      if (!sending) read->lookup_answered(*this);
    }
  };

  // The pool's own answer is in: keep it as it is unless a moved key missed.
  bool answered_first() {
    reply_ = reply_text(*first_);
    held_.slots().release_slot(first_);
    first_ = nullptr;
    const auto& keys = held_.request().keys;
    auto blocks = proto::parse_value_blocks(reply_);
    if (blocks) {
      // The blocks come in key order, hits only: match them to positions.
      blocks_.assign(keys.size(), std::string_view());
      size_t b = 0;
      for (size_t pos = 0; pos < keys.size() && b < blocks->size(); ++pos) {
        if ((*blocks)[b].key == keys[pos]) blocks_[pos] = (*blocks)[b++].block;
      }
      const uint64_t now = held_.slots().now_usec();
      lookups_.reserve(keys.size());
      for (size_t pos = 0; pos < keys.size(); ++pos) {
        if (!blocks_[pos].empty()) continue;
        Lookup l;
        l.owner_count = route_.past_.owners(keys[pos], now, l.owners);
        if (l.owner_count == 0) continue;
        l.sample = route_.guard_.sample(keys[pos]);
        if (l.sample.poisoned) continue;
        l.read = this;
        l.position = pos;
        lookups_.push_back(l);
      }
    }
    if (lookups_.empty()) return finish();
    // Counted before any can end, so that the last one finishes.
    pending_ = lookups_.size();
    for (Lookup& l : lookups_) {
      if (ask(l)) --pending_;
    }
    if (pending_ == 0) return finish();
    return false;
  }

  // Sends `l` to its next old server; true when it is done already.
  bool ask(Lookup& l) {
    while (l.next < l.owner_count) {
      Server* server = l.owners[l.next++];
      const std::string_view key = held_.request().keys[l.position];
      std::string line = fallback_line(
          key, with_cas(held_.request().command),
          touches(held_.request().command) ? &held_.request().exptime_value : nullptr);
      const size_t header = line.size();
      HeldRequest one(held_, std::move(line), header);
      held_.pool_stats().warmup_lookups.add();
      l.slot = held_.slots().acquire_slot(&l);
      l.sending = true;
      ServerRoute to(*server);
      one.send_copy(to, *l.slot);
      l.sending = false;
      if (!l.slot->complete) return false;
      if (settled(l)) return true;
    }
    return true;
  }

  void lookup_answered(Lookup& l) {
    if (!settled(l) && !ask(l)) return;
    if (--pending_ == 0) finish();
  }

  // The lookup's answer: true when the key is done (a hit, or nothing
  // more to ask).
  bool settled(Lookup& l) {
    const std::string answer = reply_text(*l.slot);
    held_.slots().release_slot(l.slot);
    l.slot = nullptr;
    auto v = proto::parse_meta_value(answer);
    if (!v) return l.next >= l.owner_count;  // a miss or an error: the next old server
    held_.pool_stats().warmup_hits.add();
    const std::string_view key = held_.request().keys[l.position];
    found_.push_back(proto::classic_block(key, *v, with_cas(held_.request().command)));
    blocks_[l.position] = found_.back();
    std::array<Server*, kMaxReplicas> now;
    const size_t n = route_.past_.current(key, now);
    copy_to_current(held_, key, *v, std::span<Server* const>(now.data(), n), route_.guard_,
                    l.sample, route_.life_);
    return true;
  }

  bool finish() {
    if (blocks_.empty()) {
      // Not a retrieval reply (the pool's own error): as it is.
      evbuffer_add(client_.reply, reply_.data(), reply_.size());
    } else {
      for (std::string_view b : blocks_) evbuffer_add(client_.reply, b.data(), b.size());
      evbuffer_add(client_.reply, "END\r\n", 5);
    }
    finish_work(this, client_, synchronous);
    return true;
  }

  HeldCount count_;
  const WarmGetRoute& route_;
  HeldRequest held_;
  ReplySlot& client_;
  ReplySlot* first_ = nullptr;
  std::string reply_;  // the pool's answer
  // Per key position its block, in reply_ or found_; empty: a miss.
  std::vector<std::string_view> blocks_;
  std::deque<std::string> found_;  // blocks found on old servers (stable addresses)
  std::vector<Lookup> lookups_;    // reserved once: each is its slot's owner
  size_t pending_ = 0;
  bool sending_ = false;
};

void WarmGetRoute::send(RouteRequest& req, ReplySlot& slot) {
  bool moved = false;
  if (past_.open(req.now_usec)) {
    std::array<Server*, kMaxPastOwners> owners;
    for (std::string_view key : req.request.keys) {
      if (past_.owners(key, req.now_usec, owners) > 0) {
        moved = true;
        break;
      }
    }
  }
  if (!moved) return inner_.send(req, slot);
  ++slot.outstanding;
  slot.add_fragment();
  auto* read = new Read(*this, req, slot);
  if (!read->run()) read->synchronous = false;
}

}  // namespace memshard::proxy
