// Requests the proxy sends on a client's behalf without waiting for them:
// read repair, the touches of a gat's other copies, the delete that undoes
// a warm-up copy. Each is a Work (work.h) that ends when its server has
// answered; nobody reads the answer.
#pragma once

#include <string>

#include "proxy/routes/held_request.h"
#include "proxy/routes/route.h"

namespace memshard::proxy {

// Sends `bytes` (one request the proxy made, own_requests.h: its line,
// then any data) to `route`, on the behalf `like` acts on.
void send_unanswered(const HeldRequest& like, std::string bytes, Route& route, RouteLife* life);

}  // namespace memshard::proxy
