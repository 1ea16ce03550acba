#include "proxy/routes/warm_copy.h"

#include <string>

#include "proxy/protocol/meta_codec.h"
#include "proxy/routes/key_route.h"
#include "proxy/support/stats.h"

namespace memshard::proxy {

namespace {

// One add on one current server, and the delete that may follow it.
class GuardedCopy final : public SlotOwner {
 public:
  GuardedCopy(const HeldRequest& like, std::string bytes, size_t header, std::string_view key,
              Server& target, WarmGuard& guard, const WarmGuard::Sample& sample, RouteLife* life)
      : count_(life),
        held_(like, std::move(bytes), header),
        key_(key),
        target_(target),
        guard_(guard),
        sample_(sample),
        life_(life) {}

  void send() {
    slot_ = held_.slots().acquire_slot(this);
    sending_ = true;
    ServerRoute route(target_);
    held_.send_copy(route, *slot_);
    sending_ = false;
    if (slot_->complete) on_slot_complete();
  }

  void on_slot_complete() override {
    if (sending_) return;
    char head[4] = {};
    const bool stored = evbuffer_get_length(slot_->reply) >= 4 &&
                        evbuffer_copyout(slot_->reply, head, 4) == 4 &&
                        std::string_view(head, 4) == "HD\r\n";
    held_.slots().release_slot(slot_);
    if (stored) {
      held_.pool_stats().warmup_copies.add();
      if (guard_.changed(key_, sample_)) {
        // A write of the key began while the copy was on its way: it may
        // have been applied before the copy, which must not outlive it.
        std::string md = "md " + key_ + " q\r\n";
        const size_t header = md.size();
        ServerRoute route(target_);
        send_unanswered(held_, std::move(md), header, route, life_);
      }
    }
    delete this;
  }

 private:
  HeldCount count_;
  HeldRequest held_;
  std::string key_;
  Server& target_;
  WarmGuard& guard_;
  WarmGuard::Sample sample_;
  RouteLife* life_;
  ReplySlot* slot_ = nullptr;
  bool sending_ = false;
};

}  // namespace

void copy_to_current(const HeldRequest& like, std::string_view key, const proto::MetaValue& value,
                     std::span<Server* const> targets, WarmGuard& guard,
                     const WarmGuard::Sample& sample, RouteLife* life) {
  if (sample.writing || sample.poisoned) return;
  // Keys that need base64 are not copied: the guard and the delete above
  // name keys as they are written.
  if (!proto::meta_key_is_plain(key)) return;
  for (Server* target : targets) {
    std::string bytes;
    if (!proto::append_copy_request(key, value, false, bytes)) return;
    const size_t header = bytes.size() - value.data.size() - 2;
    (new GuardedCopy(like, std::move(bytes), header, key, *target, guard, sample, life))->send();
  }
}

std::string fallback_line(std::string_view key, bool with_cas, const int64_t* exptime) {
  proto::Request r;
  r.command = proto::Command::meta_get;
  r.keys.push_back(key);
  r.meta_flags.add('v');
  r.meta_flags.add('f');
  r.meta_flags.add('t');
  if (with_cas) r.meta_flags.add('c');
  if (exptime != nullptr) {
    r.has_exptime = true;
    r.exptime_value = *exptime;
  }
  std::string out;
  (void)proto::append_meta_request(r, {}, out);
  return out;
}

}  // namespace memshard::proxy
