#include "proxy/routes/unanswered.h"

#include "proxy/routes/work.h"

namespace memshard::proxy {

namespace {

Work unanswered(const HeldRequest& like, std::string bytes, Route& route) {
  const size_t header = bytes.find('\n') + 1;
  HeldRequest held(like, std::move(bytes), header);  // like is not touched past this point
  co_await Call(held, route);
}

}  // namespace

void send_unanswered(const HeldRequest& like, std::string bytes, Route& route, RouteLife* life) {
  unanswered(like, std::move(bytes), route).start_unanswered(life);
}

}  // namespace memshard::proxy
