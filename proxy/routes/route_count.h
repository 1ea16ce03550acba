// Counting a routing pool's routes (docs/routing.md): a
// reply's hits, misses and errors, on the counters of the route it took.
#pragma once

#include "proxy/backends/reply_slot.h"
#include "proxy/support/stats.h"

namespace memshard::proxy {

// A complete reply: a retrieval's keys by whether they came back, another
// read's hit or miss, any request's error.
inline void count_reply(RouteStats& stats, ReplySlot& slot) {
  const proto::ReplyStatus status = slot.status();
  if (proto::failed(status)) return stats.errors.add();
  if (slot.kind() == SlotKind::retrieval) {
    uint64_t hits = 0;
    for (uint32_t i = 0; i < slot.key_count(); ++i) hits += slot.key_ref(i).block_bytes > 0;
    stats.hits.add(hits);
    stats.misses.add(slot.key_count() - hits);
  } else if (status == proto::ReplyStatus::hit) {
    stats.hits.add();
  } else if (proto::missed(status)) {
    stats.misses.add();
  }
}

}  // namespace memshard::proxy
