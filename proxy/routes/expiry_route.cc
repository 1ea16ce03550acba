#include "proxy/routes/expiry_route.h"

#include <ctime>
#include <optional>
#include <string>

#include "proxy/routes/work.h"

namespace memshard::proxy {

namespace {

// req's bytes with its expiries rewritten, when it sets any.
std::optional<std::string> rewritten_bytes(const RouteRequest& req, proto::ExpiryRule rule) {
  std::optional<std::string> line =
      proto::rewrite_expiry(req.request, req.line, rule, static_cast<int64_t>(std::time(nullptr)));
  if (!line) return std::nullopt;
  line->append("\r\n");
  const size_t header = line->size();
  line->resize(header + req.request.data_bytes);
  evbuffer_ptr data;
  evbuffer_ptr_set(req.in, &data, req.header_bytes, EVBUFFER_PTR_SET);
  evbuffer_copyout_from(req.in, &data, line->data() + header, req.request.data_bytes);
  return line;
}

// A request that goes on with other bytes than the client's; `bytes`
// holds a line of `header` bytes, then any data.
Work rewritten(const RouteRequest& req, std::string bytes, size_t header, ReplySlot& client,
               Route& inner) {
  HeldRequest held(req, std::move(bytes), header);  // req is not touched past this point
  Reply reply = co_await Call(held, inner);
  reply.pass_to(client);
}

}  // namespace

void ExpiryRoute::send(RouteRequest& req, ReplySlot& slot) {
  std::optional<std::string> bytes = rewritten_bytes(req, rule_);
  if (!bytes) return inner_.send(req, slot);  // nothing to rewrite: the client's bytes go
  evbuffer_drain(req.in, req.bytes());
  const size_t header = bytes->size() - req.request.data_bytes;
  slot.add_fragment();
  rewritten(req, std::move(*bytes), header, slot, inner_).start(slot, life_);
}

proto::ExpiryRule pool_expiry_rule(uint32_t ttl_max_s, const std::optional<uint32_t>& ttl_set_s) {
  if (ttl_set_s) return proto::ExpiryRule::set_to(*ttl_set_s);
  if (ttl_max_s != 0) return proto::ExpiryRule::cap_at(ttl_max_s);
  return {};
}

}  // namespace memshard::proxy
