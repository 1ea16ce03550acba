#include "proxy/routes/warm_key_route.h"

#include <array>
#include <string>
#include <vector>

#include "proxy/protocol/base64.h"
#include "proxy/protocol/meta_codec.h"
#include "proxy/routes/held_request.h"
#include "proxy/routes/key_route.h"
#include "proxy/support/stats.h"

namespace memshard::proxy {

namespace {

bool is_read(const proto::Request& r) {
  if (r.command == proto::Command::meta_debug) return true;
  return r.command == proto::Command::meta_get && !r.has_exptime && !r.has_vivify;
}

// "md <key>", or "md <base64> b" for a key a text line cannot carry.
std::string delete_line(std::string_view key) {
  std::string line = "md ";
  if (proto::meta_key_is_plain(key)) {
    line.append(key);
  } else {
    proto::base64_encode(key, line);
    line.append(" b");
  }
  line.append("\r\n");
  return line;
}

}  // namespace

// A read: the pool's route, then each old server until one has the key.
class WarmKeyRoute::Read final : public SlotOwner {
 public:
  Read(const WarmKeyRoute& route, RouteRequest& req, ReplySlot& client,
       const std::array<Server*, kMaxPastOwners>& owners, size_t count)
      : count_(route.life_),
        route_(route),
        held_(req),
        client_(client),
        owners_(owners),
        owner_count_(count) {}

  bool run() {
    slot_ = held_.slots().acquire_slot(this);
    sending_ = true;
    held_.send_copy(route_.inner_, *slot_);
    sending_ = false;
    while (slot_->complete) {
      if (settled()) return true;
    }
    return false;
  }

  void on_slot_complete() override {
    if (sending_) return;
    while (!settled()) {
      if (!slot_->complete) return;
    }
  }

  bool synchronous = true;

 private:
  // The try in slot_ ended: true when done (this is gone); else the next
  // try was sent into a new slot_. An old server that fails does not turn
  // the pool's miss into an error: the miss is the answer.
  bool settled() {
    const bool miss = is_miss(*slot_);
    if (!tried_any_ && !miss) return answer(*slot_);
    if (tried_any_ && !miss && !is_server_error(*slot_)) {
      held_.pool_stats().warmup_hits.add();
      return answer(*slot_);
    }
    if (!tried_any_)
      miss_ = slot_;  // kept as the answer should no old server have it
    else
      held_.slots().release_slot(slot_);
    slot_ = nullptr;
    if (next_ >= owner_count_) return answer(*miss_);
    Server* server = owners_[next_++];
    held_.pool_stats().warmup_lookups.add();
    tried_any_ = true;
    slot_ = held_.slots().acquire_slot(this);
    sending_ = true;
    ServerRoute to(*server);
    held_.send_copy(to, *slot_);
    sending_ = false;
    return false;
  }

  bool answer(ReplySlot& chosen) {
    take_reply(client_, chosen);
    if (slot_ != nullptr) held_.slots().release_slot(slot_);
    if (miss_ != nullptr) held_.slots().release_slot(miss_);
    finish_work(this, client_, synchronous);
    return true;
  }

  HeldCount count_;
  const WarmKeyRoute& route_;
  HeldRequest held_;
  ReplySlot& client_;
  std::array<Server*, kMaxPastOwners> owners_;
  size_t owner_count_;
  size_t next_ = 0;
  bool tried_any_ = false;
  ReplySlot* slot_ = nullptr;
  ReplySlot* miss_ = nullptr;  // the pool's own answer, a miss
  bool sending_ = false;
};

// A write: the pool's route and the old copies' deletes, answered together.
class WarmKeyRoute::Write final : public SlotOwner {
 public:
  Write(const WarmKeyRoute& route, RouteRequest& req, ReplySlot& client)
      : count_(route.life_), route_(route), key_(req.request.keys[0]), held_(req), client_(client) {
    route_.guard_.begin(key_);
  }
  ~Write() { route_.guard_.end(key_); }

  bool run(const std::array<Server*, kMaxPastOwners>& owners, size_t count) {
    slots_.reserve(count + 1);
    sending_ = true;
    slots_.push_back(held_.slots().acquire_slot(this));
    held_.send_copy(route_.inner_, *slots_.back());
    const std::string md = delete_line(key_);
    for (size_t i = 0; i < count; ++i) {
      HeldRequest one(held_, md, md.size());
      slots_.push_back(held_.slots().acquire_slot(this));
      ServerRoute to(*owners[i]);
      one.send_copy(to, *slots_.back());
    }
    sending_ = false;
    return maybe_finish();
  }

  void on_slot_complete() override {
    if (!sending_) maybe_finish();
  }

  bool synchronous = true;

 private:
  bool maybe_finish() {
    for (ReplySlot* s : slots_) {
      if (!s->complete) return false;
    }
    for (size_t i = 1; i < slots_.size(); ++i) {
      char head[4] = {};
      const size_t n = evbuffer_copyout(slots_[i]->reply, head, sizeof(head));
      const std::string_view said(head, n > 0 ? static_cast<size_t>(n) : 0);
      if (said == "HD\r\n") {
        held_.pool_stats().warmup_invalidations.add();
      } else if (said.substr(0, 2) != "NF") {
        // Not known to be gone there: no fallback for it any more.
        route_.guard_.poison(key_);
      }
    }
    take_reply(client_, *slots_.front());
    for (ReplySlot* s : slots_) held_.slots().release_slot(s);
    finish_work(this, client_, synchronous);
    return true;
  }

  HeldCount count_;
  const WarmKeyRoute& route_;
  std::string key_;
  HeldRequest held_;
  ReplySlot& client_;
  std::vector<ReplySlot*> slots_;
  bool sending_ = false;
};

void WarmKeyRoute::send(RouteRequest& req, ReplySlot& slot) {
  std::array<Server*, kMaxPastOwners> owners;
  const size_t n = past_.open(req.now_usec) && !req.request.keys.empty()
                       ? past_.owners(req.request.keys[0], req.now_usec, owners)
                       : 0;
  if (n == 0) return inner_.send(req, slot);
  ++slot.outstanding;
  slot.add_fragment();
  if (is_read(req.request)) {
    auto* read = new Read(*this, req, slot, owners, n);
    if (!read->run()) read->synchronous = false;
    return;
  }
  auto* write = new Write(*this, req, slot);
  if (!write->run(owners, n)) write->synchronous = false;
}

void WarmKeyRoute::invalidate(RouteRequest& req, ReplySlot& slot) {
  inner_.invalidate(req, slot);
  std::array<Server*, kMaxPastOwners> owners;
  const size_t n = past_.open(req.now_usec) && !req.request.keys.empty()
                       ? past_.owners(req.request.keys[0], req.now_usec, owners)
                       : 0;
  for (size_t i = 0; i < n; ++i) send_delete(*owners[i], req, slot);
  slot.complete = slot.outstanding == 0;
}

}  // namespace memshard::proxy
