#include "proxy/backends/reply_slot.h"

#include "proxy/protocol/replies.h"

namespace memshard::proxy {

namespace {
using proto::reply::kEnd;
using proto::reply::kOk;

void append(evbuffer* buf, std::string_view s) {
  evbuffer_add(buf, s.data(), s.size());
}
}  // namespace

ReplySlot::ReplySlot() : reply(evbuffer_new()) {}

ReplySlot::~ReplySlot() {
  for (Fragment& f : fragments) {
    if (f.values != nullptr) evbuffer_free(f.values);
  }
  evbuffer_free(reply);
}

Fragment& ReplySlot::add_fragment() {
  if (fragment_count == fragments.size()) fragments.emplace_back();
  Fragment& f = fragments[fragment_count++];
  if (f.values == nullptr) f.values = evbuffer_new();
  return f;
}

void ReplySlot::fragment_done() {
  if (!fragment_done_unreported()) return;
  if (owner != nullptr) return owner->on_slot_complete();
  if (abandoned_to != nullptr) abandoned_to->release_slot(this);
}

bool ReplySlot::fragment_done_unreported() {
  if (--outstanding > 0) return false;
  complete_unsent();
  return true;
}

void ReplySlot::complete_unsent() {
  assemble();
  complete = true;
}

void ReplySlot::assemble() {
  if (kind == SlotKind::retrieval) {
    size_t failed = 0;
    for (size_t i = 0; i < fragment_count; ++i) failed += fragments[i].failed ? 1 : 0;
    // When every server failed there is no partial answer to give; when
    // only some did, their keys read as misses (a miss is always safe).
    if (failed == fragment_count && !error.empty()) {
      append(reply, error);
      status = proto::classify_reply_line(std::string_view(error).substr(0, error.find('\r')));
      return;
    }
    status = proto::ReplyStatus::miss;
    // Each fragment's buffer holds its hits in its own key order, which is
    // the client's order restricted to that fragment: taking blocks off
    // the fronts in client order interleaves them correctly. The blocks of
    // keys in a row from one fragment (misses between them take nothing)
    // are taken in one move: all of them when there is one fragment.
    for (size_t i = 0; i < key_refs.size();) {
      uint32_t fragment = key_refs[i].fragment;
      size_t bytes = 0;
      for (; i < key_refs.size() &&
             (key_refs[i].fragment == fragment || key_refs[i].block_bytes == 0);
           ++i) {
        bytes += key_refs[i].block_bytes;
      }
      if (bytes > 0) {
        evbuffer_remove_buffer(fragments[fragment].values, reply, bytes);
        status = proto::ReplyStatus::hit;
      }
    }
    append(reply, kEnd);
  } else if (kind == SlotKind::broadcast) {
    append(reply, error.empty() ? kOk : std::string_view(error));
    status = error.empty()
                 ? proto::ReplyStatus::ok
                 : proto::classify_reply_line(std::string_view(error).substr(0, error.find('\r')));
  }
}

void ReplySlot::reset() {
  owner = nullptr;
  abandoned_to = nullptr;
  status = proto::ReplyStatus::none;
  kind = SlotKind::direct;
  outstanding = 0;
  complete = close_after = drop_reply = false;
  keys.clear();
  key_refs.clear();
  for (size_t i = 0; i < fragment_count; ++i) {
    Fragment& f = fragments[i];
    evbuffer_drain(f.values, evbuffer_get_length(f.values));
    f.key_positions.clear();
    f.next_key = 0;
    f.failed = false;
  }
  fragment_count = 0;
  error.clear();
  evbuffer_drain(reply, evbuffer_get_length(reply));
}

}  // namespace memshard::proxy
