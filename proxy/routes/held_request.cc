#include "proxy/routes/held_request.h"

#include <limits>

namespace memshard::proxy {

namespace {

// Whether the slot's reply starts with `prefix`.
bool starts_with(const ReplySlot& slot, std::string_view prefix) {
  size_t n = evbuffer_get_length(slot.reply);
  if (n < prefix.size()) return false;
  char head[16];
  evbuffer_copyout(slot.reply, head, prefix.size());
  return std::string_view(head, prefix.size()) == prefix;
}

}  // namespace

HeldRequest::HeldRequest(RouteRequest& req)
    : line_(req.line),
      header_bytes_(req.header_bytes),
      in_(evbuffer_new()),
      affinity_(req.affinity),
      now_usec_(req.now_usec),
      scratch_(req.scratch),
      slots_(req.slots),
      worker_stats_(req.worker_stats),
      pool_stats_(req.pool_stats) {
  bytes_.resize(req.bytes());
  evbuffer_remove(req.in, bytes_.data(), bytes_.size());
  parse();
}

HeldRequest::HeldRequest(const RouteRequest& context, std::string bytes, size_t header_bytes)
    : in_(evbuffer_new()),
      affinity_(context.affinity),
      now_usec_(context.now_usec),
      scratch_(context.scratch),
      slots_(context.slots),
      worker_stats_(context.worker_stats),
      pool_stats_(context.pool_stats) {
  replace(std::move(bytes), header_bytes);
}

HeldRequest::HeldRequest(const HeldRequest& like, std::string bytes, size_t header_bytes)
    : in_(evbuffer_new()),
      affinity_(like.affinity_),
      now_usec_(like.now_usec_),
      scratch_(like.scratch_),
      slots_(like.slots_),
      worker_stats_(like.worker_stats_),
      pool_stats_(like.pool_stats_) {
  replace(std::move(bytes), header_bytes);
}

void HeldRequest::replace(std::string bytes, size_t header_bytes) {
  bytes_ = std::move(bytes);
  header_bytes_ = header_bytes;
  line_.assign(bytes_, 0, header_bytes);
  while (!line_.empty() && (line_.back() == '\n' || line_.back() == '\r')) line_.pop_back();
  parse();
}

void HeldRequest::parse() {
  // Already checked against the pool's limits when it was first parsed.
  proto::Limits any{std::numeric_limits<uint32_t>::max()};
  proto::parse_request_line(line_, any, request_);
}

std::string_view HeldRequest::value() const {
  const size_t data = request_.data_bytes;
  if (data < 2 || bytes_.size() < header_bytes_ + data) return {};
  return std::string_view(bytes_).substr(header_bytes_, data - 2);
}

HeldRequest::~HeldRequest() {
  evbuffer_free(in_);
}

void HeldRequest::send_copy(Route& route, ReplySlot& slot) {
  evbuffer_drain(in_, evbuffer_get_length(in_));
  evbuffer_add(in_, bytes_.data(), bytes_.size());
  const uint64_t now = sent_ ? slots_.now_usec() : now_usec_;
  sent_ = true;
  RouteRequest req{request_, in_,      header_bytes_, line_,         affinity_,
                   now,      scratch_, slots_,        worker_stats_, pool_stats_};
  route.send(req, slot);
}

namespace {

class Unanswered final : public SlotOwner {
 public:
  Unanswered(const HeldRequest& like, std::string bytes, size_t header_bytes, RouteLife* life)
      : count_(life), held_(like, std::move(bytes), header_bytes) {}
  void send(Route& route) {
    slot_ = held_.slots().acquire_slot(this);
    sending_ = true;
    held_.send_copy(route, *slot_);
    sending_ = false;
    if (slot_->complete) on_slot_complete();
  }
  void on_slot_complete() override {
    if (sending_) return;
    held_.slots().release_slot(slot_);
    delete this;
  }

 private:
  HeldCount count_;
  HeldRequest held_;
  ReplySlot* slot_ = nullptr;
  bool sending_ = false;
};

}  // namespace

void send_unanswered(const HeldRequest& like, std::string bytes, size_t header_bytes, Route& route,
                     RouteLife* life) {
  (new Unanswered(like, std::move(bytes), header_bytes, life))->send(route);
}

bool is_server_error(const ReplySlot& slot) {
  return starts_with(slot, "SERVER_ERROR");
}

bool failed_silently(const ReplySlot& slot) {
  return slot.kind == SlotKind::direct && slot.fragment_count > 0 && slot.fragments[0].failed;
}

bool is_miss(const ReplySlot& slot) {
  size_t n = evbuffer_get_length(slot.reply);
  return (n == 5 && starts_with(slot, "END\r\n")) || starts_with(slot, "EN\r\n");
}

std::string reply_text(const ReplySlot& slot) {
  std::string s(evbuffer_get_length(slot.reply), '\0');
  evbuffer_copyout(slot.reply, s.data(), s.size());
  return s;
}

void take_reply(ReplySlot& to, ReplySlot& from) {
  evbuffer_add_buffer(to.reply, from.reply);
}

}  // namespace memshard::proxy
