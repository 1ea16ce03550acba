#include "proxy/routes/held_request.h"

#include <limits>

namespace memshard::proxy {

HeldRequest::HeldRequest(RouteRequest& req)
    : line_(req.line),
      header_bytes_(req.header_bytes),
      in_(evbuffer_new()),
      affinity_(req.affinity),
      now_usec_(req.now_usec),
      scratch_(req.scratch),
      slots_(req.slots),
      worker_stats_(req.worker_stats),
      pool_stats_(req.pool_stats),
      home_(req.home) {
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
      pool_stats_(context.pool_stats),
      home_(context.home) {
  replace(std::move(bytes), header_bytes);
}

HeldRequest::HeldRequest(const HeldRequest& like, std::string bytes, size_t header_bytes)
    : in_(evbuffer_new()),
      affinity_(like.affinity_),
      now_usec_(like.now_usec_),
      // Made once `like` was sent (a lookup after a miss, a repair, a
      // delete after a copy): its sends are later sends, at the clock's time.
      sent_(like.sent_),
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
  RouteRequest req{request_, in_,      header_bytes_, line_,         affinity_,   now,
                   scratch_, slots_,   worker_stats_, pool_stats_,   home_};
  route.send(req, slot);
}

}  // namespace memshard::proxy
