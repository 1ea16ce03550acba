#include "proxy/routes/primary_first_route.h"

#include <string>

#include "proxy/protocol/meta_codec.h"
#include "proxy/routes/held_request.h"
#include "proxy/support/stats.h"

namespace memshard::proxy {

namespace {

bool is_meta_request(proto::Command c) {
  return c == proto::Command::meta_set || c == proto::Command::meta_get ||
         c == proto::Command::meta_delete || c == proto::Command::meta_arithmetic;
}

// The first bytes of a slot's reply.
std::string head_of(const ReplySlot& slot, size_t n) {
  std::string s(std::min(n, evbuffer_get_length(slot.reply)), '\0');
  evbuffer_copyout(slot.reply, s.data(), s.size());
  return s;
}

bool stored(const ReplySlot& slot) {
  return head_of(slot, 3) == "HD\r" || head_of(slot, 3) == "HD ";
}

// The classic reply a meta storage code stands for.
std::string_view classic_reply(std::string_view code) {
  if (code == "HD") return "STORED\r\n";
  if (code == "NS") return "NOT_STORED\r\n";
  if (code == "EX") return "EXISTS\r\n";
  if (code == "NF") return "NOT_FOUND\r\n";
  return {};
}

}  // namespace

class PrimaryFirstRoute::Write final : public SlotOwner {
 public:
  Write(const PrimaryFirstRoute& route, RouteRequest& req, ReplySlot& client, std::string bytes,
        size_t header_bytes)
      : count_(route.life_),
        route_(route),
        held_(req, std::move(bytes), header_bytes),
        client_(client),
        classic_(!is_meta_request(req.request.command)),
        noreply_(req.request.noreply),
        quiet_(req.request.quiet) {}

  // True when the client's slot got its reply before returning (this is
  // then gone).
  bool run() { return decide(); }

  void on_slot_complete() override {
    if (sending_) return;
    if (phase_ == Phase::copying) {
      copy_written();
    } else if (decided() == Next::retry) {
      decide();
    }
  }

  bool synchronous = true;

 private:
  enum class Phase : uint8_t { deciding, copying };
  // After a try: try the next copy, wait for the copies being written, or
  // finished (this is gone).
  enum class Next : uint8_t { retry, waiting, finished };

  // Tries copies from next_ until one answers; true when finished.
  bool decide() {
    while (next_ < route_.copies_.size()) {
      decider_ = next_++;
      primary_ = held_.slots().acquire_slot(this);
      sending_ = true;
      held_.send_copy(*route_.copies_[decider_], *primary_);
      sending_ = false;
      if (!primary_->complete) return false;
      const Next next = decided();
      if (next != Next::retry) return next == Next::finished;
    }
    return false;  // not reached: the last try always decides
  }

  // The try at decider_ answered.
  Next decided() {
    if (is_server_error(*primary_) && next_ < route_.copies_.size()) {
      held_.slots().release_slot(primary_);
      primary_ = nullptr;
      return Next::retry;
    }
    if (!stored(*primary_)) {
      finish();
      return Next::finished;
    }
    return copy() ? Next::finished : Next::waiting;
  }

  // The first copy stored the value: the others get it too, as a set.
  bool copy() {
    phase_ = Phase::copying;
    proto::Request set = held_.request();
    set.command = proto::Command::set;
    set.mode = proto::Mode::set;
    set.has_cas = false;
    set.cas = 0;
    set.quiet = set.noreply = false;
    set.meta_flags.clear();
    std::string bytes;
    const std::string_view value = held_.value();
    if (!proto::append_meta_request(set, value, bytes)) return finish();
    const size_t header = bytes.size() - value.size() - 2;
    held_.replace(std::move(bytes), header);
    for (size_t i = 0; i < route_.copies_.size(); ++i) {
      if (i == decider_) continue;
      ReplySlot* s = held_.slots().acquire_slot(this);
      copies_.push_back(s);
      copy_index_.push_back(i);
      sending_ = true;
      held_.send_copy(*route_.copies_[i], *s);
      sending_ = false;
    }
    return copy_written();
  }

  bool copy_written() {
    for (ReplySlot* s : copies_) {
      if (!s->complete) return false;
    }
    size_t ok = 1;  // the deciding copy
    ReplySlot* failed = nullptr;
    for (size_t k = 0; k < copies_.size(); ++k) {
      ReplySlot* s = copies_[k];
      ServerStats* server =
          route_.replicas_ == nullptr || held_.request().keys.empty()
              ? nullptr
              : route_.replicas_->counters(held_.request().keys[0], copy_index_[k]);
      held_.pool_stats().replica_writes.add();
      if (server != nullptr) server->replica_writes.add();
      if (stored(*s)) {
        ++ok;
      } else {
        held_.pool_stats().replica_write_failures.add();
        if (server != nullptr) server->replica_write_failures.add();
        if (failed == nullptr) failed = s;
      }
    }
    const size_t total = route_.copies_.size();
    const bool enough = route_.policy_ == ReplyPolicy::first      ? true
                        : route_.policy_ == ReplyPolicy::majority ? 2 * ok > total
                                                                  : ok == total;
    if (!enough && failed != nullptr && is_server_error(*failed)) {
      take_reply(client_, *failed);
      return done();
    }
    return finish();
  }

  // The client's reply from the deciding copy's, as the client asked.
  bool finish() {
    const std::string line = head_of(*primary_, 2);
    const bool error = is_server_error(*primary_) || head_of(*primary_, 6) == "CLIENT";
    if (noreply_) {
      // classic noreply: nothing at all, errors included
    } else if (classic_ && !error) {
      const std::string_view reply = classic_reply(line);
      evbuffer_add(client_.reply, reply.data(), reply.size());
    } else if (quiet_ && line == "HD") {
      // meta q hides HD only
    } else {
      take_reply(client_, *primary_);
    }
    return done();
  }

  bool done() {
    held_.slots().release_slot(primary_);
    for (ReplySlot* s : copies_) held_.slots().release_slot(s);
    finish_work(this, client_, synchronous);
    return true;
  }

  HeldCount count_;
  const PrimaryFirstRoute& route_;
  HeldRequest held_;
  ReplySlot& client_;
  bool classic_;
  bool noreply_;
  bool quiet_;
  Phase phase_ = Phase::deciding;
  size_t next_ = 0;
  size_t decider_ = 0;
  ReplySlot* primary_ = nullptr;
  std::vector<ReplySlot*> copies_;
  std::vector<size_t> copy_index_;  // per entry of copies_, its copy
  bool sending_ = false;
};

void PrimaryFirstRoute::send(RouteRequest& req, ReplySlot& slot) {
  proto::Request loud = req.request;
  loud.quiet = loud.noreply = false;
  std::string bytes;
  // The value as the client sent it, after its line.
  std::string value;
  if (req.request.data_bytes >= 2) {
    value.resize(req.request.data_bytes - 2);
    evbuffer_ptr at;
    evbuffer_ptr_set(req.in, &at, req.header_bytes, EVBUFFER_PTR_SET);
    evbuffer_copyout_from(req.in, &at, value.data(), value.size());
  }
  if (!proto::append_meta_request(loud, value, bytes)) return fallback_.send(req, slot);
  const size_t header = bytes.size() - value.size() - (req.request.data_bytes >= 2 ? 2 : 0);
  evbuffer_drain(req.in, req.bytes());
  ++slot.outstanding;
  slot.add_fragment();
  auto* write = new Write(*this, req, slot, std::move(bytes), header);
  if (!write->run()) write->synchronous = false;
}

}  // namespace memshard::proxy
