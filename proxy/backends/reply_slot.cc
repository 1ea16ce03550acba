#include "proxy/backends/reply_slot.h"

#include "proxy/protocol/replies.h"

namespace memshard::proxy {

namespace {
using proto::reply::kEnd;
using proto::reply::kOk;

void append(evbuffer* buf, std::string_view s) {
  evbuffer_add(buf, s.data(), s.size());
}

// A reply's status from its first line.
proto::ReplyStatus first_line_status(std::string_view text) {
  return proto::classify_reply_line(text.substr(0, text.find('\r')));
}
}  // namespace

ReplySlot::ReplySlot() : reply_(evbuffer_new()) {}

ReplySlot::~ReplySlot() {
  for (Fragment& f : fragments_) {
    if (f.values != nullptr) evbuffer_free(f.values);
  }
  evbuffer_free(reply_);
}

void ReplySlot::answer(std::string_view text) {
  answer(text, text.empty() ? proto::ReplyStatus::none : first_line_status(text));
}

void ReplySlot::answer(std::string_view text, proto::ReplyStatus status) {
  compose({text}, status);
  complete_ = true;
}

void ReplySlot::compose(std::span<const std::string_view> parts, proto::ReplyStatus status) {
  for (std::string_view part : parts) {
    if (!part.empty()) append(reply_, part);
  }
  status_ = status;
}

void ReplySlot::take_reply(ReplySlot& from) {
  evbuffer_add_buffer(reply_, from.reply_);
  status_ = from.status_;
  drop_reply_ = drop_reply_ || from.drop_reply_;
}

Fragment& ReplySlot::add_fragment() {
  if (fragment_count_ == fragments_.size()) fragments_.emplace_back();
  Fragment& f = fragments_[fragment_count_++];
  if (f.values == nullptr) f.values = evbuffer_new();
  return f;
}

void ReplySlot::note_error(std::string_view line) {
  if (!error_.empty()) return;
  error_.assign(line);
  if (!line.ends_with("\r\n")) error_.append("\r\n");
}

void ReplySlot::fragment_done() {
  if (!fragment_done_unreported()) return;
  if (owner_ != nullptr) return owner_->on_slot_complete();
  if (abandoned_to_ != nullptr) abandoned_to_->release_slot(this);
}

bool ReplySlot::fragment_done_unreported() {
  if (--outstanding_ > 0) return false;
  complete_unsent();
  return true;
}

void ReplySlot::complete_unsent() {
  if (outstanding_ > 0 || complete_) return;
  assemble();
  complete_ = true;
}

void ReplySlot::assemble() {
  if (kind_ == SlotKind::retrieval) {
    // Fragments with no keys (the read gate's deletes: repair_log.h) take
    // no part in the answer.
    size_t failed = 0, reading = 0;
    for (size_t i = 0; i < fragment_count_; ++i) {
      if (fragments_[i].key_positions.empty()) continue;
      ++reading;
      failed += fragments_[i].failed ? 1 : 0;
    }
    // When every server failed there is no partial answer to give; when
    // only some did, their keys read as misses (a miss is always safe).
    if (failed == reading && !error_.empty()) {
      append(reply_, error_);
      status_ = first_line_status(error_);
      return;
    }
    status_ = proto::ReplyStatus::miss;
    // Each fragment's buffer holds its hits in its own key order, which is
    // the client's order restricted to that fragment: taking blocks off
    // the fronts in client order interleaves them correctly. The blocks of
    // keys in a row from one fragment (misses between them take nothing)
    // are taken in one move: all of them when there is one fragment.
    for (size_t i = 0; i < key_refs_.size();) {
      uint32_t fragment = key_refs_[i].fragment;
      size_t bytes = 0;
      for (; i < key_refs_.size() &&
             (key_refs_[i].fragment == fragment || key_refs_[i].block_bytes == 0);
           ++i) {
        bytes += key_refs_[i].block_bytes;
      }
      if (bytes > 0) {
        evbuffer_remove_buffer(fragments_[fragment].values, reply_, bytes);
        status_ = proto::ReplyStatus::hit;
      }
    }
    append(reply_, kEnd);
  } else if (kind_ == SlotKind::broadcast) {
    append(reply_, error_.empty() ? kOk : std::string_view(error_));
    status_ = error_.empty() ? proto::ReplyStatus::ok : first_line_status(error_);
  }
}

void ReplySlot::reset() {
  owner_ = nullptr;
  abandoned_to_ = nullptr;
  status_ = proto::ReplyStatus::none;
  kind_ = SlotKind::direct;
  outstanding_ = 0;
  complete_ = close_after_ = drop_reply_ = false;
  keys_.clear();
  key_refs_.clear();
  for (size_t i = 0; i < fragment_count_; ++i) {
    Fragment& f = fragments_[i];
    evbuffer_drain(f.values, evbuffer_get_length(f.values));
    f.key_positions.clear();
    f.next_key = 0;
    f.failed = false;
  }
  fragment_count_ = 0;
  error_.clear();
  evbuffer_drain(reply_, evbuffer_get_length(reply_));
  keys_weight = 1;
  started_usec = 0;
  route_stats = nullptr;
}

}  // namespace memshard::proxy
