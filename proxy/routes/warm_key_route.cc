#include "proxy/routes/warm_key_route.h"

#include <string>

#include "proxy/protocol/own_requests.h"
#include "proxy/protocol/request_kind.h"
#include "proxy/protocol/retrieval_reply.h"
#include "proxy/routes/key_route.h"
#include "proxy/routes/warm_copy.h"
#include "proxy/support/stats.h"

namespace memshard::proxy {

// A read: the pool's route, then each old server until one has the key.
// An old server that fails does not turn the pool's miss into an error:
// the miss is the answer.
Work WarmKeyRoute::read(RouteRequest& req, ReplySlot& client, Owners owners, size_t count,
                        Kinds kinds) const {
  const std::string key(req.request.keys[0]);
  HeldRequest held(req);  // req is not touched past this point
  Reply miss = co_await Call(held, inner_);
  if (!miss.missed()) {
    miss.pass_to(client);
    co_return;
  }
  // An old copy a write could not delete may be stale: no fallback.
  const WarmGuard::Sample sample = guard_.sample(key);
  if (sample.poisoned) count = 0;
  if (count > 0 && kinds.switching) held.pool_stats().switch_fallback_reads.add();
  for (size_t i = 0; i < count; ++i) {
    held.pool_stats().warmup_lookups.add();
    ServerRoute to(*owners[i]);
    Reply found = co_await Call(held, to);
    if (found.missed() || found.failed()) continue;
    held.pool_stats().warmup_hits.add();
    // A hit that says its flags and TTL (a binary client's get asks for
    // them) is copied to the key's current servers, as a classic get's is;
    // one found where the key will be after a switch is not copied back.
    const std::string text = found.text();
    if (const auto v = proto::parse_meta_value(text); v && !v->ttl.empty() && i >= kinds.future) {
      std::array<Server*, kMaxReplicas> current;
      const size_t n = past_.current(key, current);
      copy_to_current(held, key, *v, std::span<Server* const>(current.data(), n), guard_, sample,
                      life_);
    }
    found.pass_to(client);
    co_return;
  }
  // Missed everywhere. A write of the key deletes its other copies only
  // once it is stored (write()), so a write through this or another
  // instance that this read overtook on the first server and that then
  // deleted the copy a fallback would have found has stored the value on
  // that first server by now: it is asked once more. Without it, a read
  // racing a write of a moved key could miss a key that never was absent.
  if (count > 0) {
    Reply again = co_await Call(held, inner_);
    if (!again.failed()) {
      again.pass_to(client);
      co_return;
    }
  }
  miss.pass_to(client);
}

// A write: the pool's route, then the old copies' deletes, answered once
// both are done, so that once the client has its reply no fallback read
// can find the value the write replaced. The deletes leave only once the
// write is stored: a read that finds the key nowhere (deleted from an old
// server, not yet stored on the new one) then finds it on the new one when
// it asks again (read()). The guard counts the write in flight.
Work WarmKeyRoute::write(RouteRequest& req, ReplySlot& client, Owners owners, size_t count,
                         Kinds kinds) const {
  const std::string key(req.request.keys[0]);
  guard_.begin(key);
  HeldRequest held(req);  // req is not touched past this point
  Reply written = co_await Call(held, inner_);
  std::string md;
  const bool deletable = proto::append_delete(key, false, md);
  if (deletable && count > 0) {
    Calls calls;
    {
      HeldRequest one(held, std::move(md));
      for (size_t i = 0; i < count; ++i) {
        ServerRoute to(*owners[i]);
        calls.add(one, to);
        if (i < kinds.future) held.pool_stats().switch_future_deletes.add();
      }
    }
    co_await calls.all();
    for (size_t i = 0; i < calls.size(); ++i) {
      if (calls.reply(i).status() == proto::ReplyStatus::done) {
        held.pool_stats().warmup_invalidations.add();
      } else if (calls.reply(i).status() != proto::ReplyStatus::not_found) {
        guard_.poison(key);  // not known to be gone there: no fallback for it any more
      }
    }
  }
  if (!deletable && count > 0) guard_.poison(key);
  written.pass_to(client);
  guard_.end(key);
}

void WarmKeyRoute::send(RouteRequest& req, ReplySlot& slot) {
  Owners owners;
  Kinds kinds;
  const size_t n = past_.open(req.now_usec) && !req.request.keys.empty()
                       ? past_.owners(req.request.keys[0], req.now_usec, owners, &kinds)
                       : 0;
  if (n == 0) return inner_.send(req, slot);
  slot.add_fragment();
  (proto::is_read(req.request) ? read(req, slot, owners, n, kinds)
                               : write(req, slot, owners, n, kinds))
      .start(slot, life_);
}

void WarmKeyRoute::invalidate(RouteRequest& req, ReplySlot& slot) {
  inner_.invalidate(req, slot);
  Owners owners;
  const size_t n = past_.open(req.now_usec) && !req.request.keys.empty()
                       ? past_.owners(req.request.keys[0], req.now_usec, owners)
                       : 0;
  for (size_t i = 0; i < n; ++i) send_delete(*owners[i], req, slot);
}

}  // namespace memshard::proxy
