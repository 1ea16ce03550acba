#include "proxy/routes/warm_copy.h"

#include <optional>
#include <string>

#include "proxy/protocol/own_requests.h"
#include "proxy/protocol/retrieval_reply.h"
#include "proxy/routes/key_route.h"
#include "proxy/routes/unanswered.h"
#include "proxy/routes/work.h"
#include "proxy/support/stats.h"

namespace memshard::proxy {

namespace {

// One add on one current server, and the delete that may follow it.
Work guarded_copy(const HeldRequest& like, std::string bytes, std::string key, Server& target,
                  WarmGuard& guard, WarmGuard::Sample sample, RouteLife* life) {
  const size_t header = bytes.find('\n') + 1;
  HeldRequest held(like, std::move(bytes), header);  // like is not touched past this point
  ServerRoute route(target);
  const Reply reply = co_await Call(held, route);
  if (reply.status() != proto::ReplyStatus::done) co_return;
  held.pool_stats().warmup_copies.add();
  if (!guard.changed(key, sample)) co_return;
  // A write of the key began while the copy was on its way: it may have
  // been applied before the copy (a delete, an incr of a missing key),
  // which must not outlive it. Only the copy itself goes: a set that
  // landed after it replaced it and has another CAS, and stays.
  std::string md;
  const std::optional<uint64_t> cas = proto::copied_cas(reply.text());
  const bool built =
      cas ? proto::append_delete_if(key, *cas, true, md) : proto::append_delete(key, true, md);
  if (built) send_unanswered(held, std::move(md), route, life);
}

}  // namespace

void copy_to_current(const HeldRequest& like, std::string_view key, const proto::MetaValue& value,
                     std::span<Server* const> targets, WarmGuard& guard,
                     const WarmGuard::Sample& sample, RouteLife* life) {
  if (sample.writing || sample.poisoned) return;
  for (Server* target : targets) {
    std::string bytes;
    if (!proto::append_copy_request(key, value, false, bytes)) return;
    guarded_copy(like, std::move(bytes), std::string(key), *target, guard, sample, life)
        .start_unanswered(life);
  }
}

}  // namespace memshard::proxy
