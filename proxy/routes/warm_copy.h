// The copy a reload warm-up makes of a value found on a key's old server:
// an add of it on each of the key's current servers, then, when the copy
// was stored and a write of the key began meanwhile, its delete again
// (warm_guard.h says why that is needed and enough).
#pragma once

#include <span>
#include <string_view>

#include "proxy/backends/outbox.h"
#include "proxy/protocol/retrieval_reply.h"
#include "proxy/routes/held_request.h"
#include "proxy/routes/warm_guard.h"

namespace memshard::proxy {

// Sends the copies without waiting for them; `sample` is what the guard
// said when the miss was seen. Nothing when a write was in flight then.
void copy_to_current(const HeldRequest& like, std::string_view key, const proto::MetaValue& value,
                     std::span<Server* const> targets, WarmGuard& guard,
                     const WarmGuard::Sample& sample, RouteLife* life);

}  // namespace memshard::proxy
