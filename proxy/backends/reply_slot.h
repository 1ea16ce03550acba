// A reply owed to a client, one per request, kept in request order by the
// client connection. A slot is completed by the proxy itself (version,
// errors, ...) or by the backend operations ("fragments") it was split into.
// Slots are pooled per worker and reused, buffers and vectors included, so
// the steady-state request path does not allocate.
#pragma once

#include <event2/buffer.h>

#include <cstddef>
#include <cstdint>
#include <initializer_list>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "proxy/protocol/reply_status.h"

namespace memshard::proxy {

struct RouteStats;

// Who is owed a slot's reply (a client connection): told once the slot
// is complete.
class SlotOwner {
 public:
  virtual void on_slot_complete() = 0;

 protected:
  ~SlotOwner() = default;
};

// How a slot's reply is put together from its fragments.
enum class SlotKind : uint8_t {
  direct,     // the single fragment's reply is the client's reply
  retrieval,  // get-family: VALUE blocks reassembled in the client's key order + END
  broadcast,  // flush_all: "OK" when every server said OK
};

// One backend operation's share of a slot.
struct Fragment {
  evbuffer* values = nullptr;           // retrieval: the VALUE blocks received, in key order
  std::vector<uint32_t> key_positions;  // retrieval: client positions of this fragment's keys
  size_t next_key = 0;                  // retrieval: first key position not yet matched by a VALUE
  bool failed = false;
};

struct KeyRef {
  uint32_t offset;  // into the slot's keys
  uint32_t length;
  uint32_t fragment;
  uint32_t block_bytes;  // bytes of this key's VALUE block in its fragment, 0 = miss
};

class ReplySlot;

// Where slots come from: a worker keeps a pool of them. Routes that hold a
// reply back before the client sees it (failover, fan-out) take slots of
// their own from it.
class SlotSource {
 public:
  virtual ReplySlot* acquire_slot(SlotOwner* owner) = 0;
  virtual void release_slot(ReplySlot* slot) = 0;
  // The loop's clock (read once per iteration), for the requests a route
  // sends later, when a reply it waited for has come.
  virtual uint64_t now_usec() = 0;

 protected:
  ~SlotSource() = default;
};

// The invariant only these methods keep: a slot completes once, either
// answered by the proxy itself (nothing outstanding) or when the last of the
// operations it expects is done, and what its reply says (status) is set
// with its bytes. Everything else is its owner's bookkeeping.
class ReplySlot {
 public:
  ReplySlot();
  ~ReplySlot();
  ReplySlot(const ReplySlot&) = delete;
  ReplySlot& operator=(const ReplySlot&) = delete;

  // ---- who is owed it
  SlotOwner* owner() const { return owner_; }
  void set_owner(SlotOwner* owner) { owner_ = owner; }
  // The owner no longer waits (work.h: a Call that is gone): once the
  // operations still out are done, the slot goes back to `pool`.
  void abandon_to(SlotSource* pool) {
    owner_ = nullptr;
    abandoned_to_ = pool;
  }

  // ---- what the owner reads
  bool complete() const { return complete_; }
  proto::ReplyStatus status() const { return status_; }
  // The reply's bytes: moved out by the owner once complete; appended to
  // by the backend while it reads them (and set_status with them).
  evbuffer* reply() const { return reply_; }
  bool close_after() const { return close_after_; }
  bool drop_reply() const { return drop_reply_; }

  // ---- answered by the proxy itself: completes the slot
  // `text` (whole lines, "\r\n" included; may be empty: a request that
  // asked for silence), its status classified from its first line.
  void answer(std::string_view text);
  // The same with a known status (a binary reply made by the proxy, a
  // quiet write that failed: its client hears nothing, a route that may try
  // elsewhere sees server_error).
  void answer(std::string_view text, proto::ReplyStatus status);
  // A reply made elsewhere (another slot's, once complete): its bytes,
  // status and silence become this one's. Does not complete this slot.
  void take_reply(ReplySlot& from);
  // A reply a route composed from other replies, for a slot its work
  // completes later: the parts' bytes in turn (none for a client that asked
  // for silence) and what they say, set together. Does not complete it.
  void compose(std::span<const std::string_view> parts, proto::ReplyStatus status);
  void compose(std::initializer_list<std::string_view> parts, proto::ReplyStatus status) {
    compose(std::span<const std::string_view>(parts.begin(), parts.size()), status);
  }
  void set_close_after() { close_after_ = true; }
  void set_drop_reply() { drop_reply_ = true; }

  // ---- set up by routes, filled by the backend
  SlotKind kind() const { return kind_; }
  void set_kind(SlotKind kind) { kind_ = kind; }
  // One operation more whose end the slot waits for.
  void expect(uint32_t n = 1) { outstanding_ += n; }
  uint32_t outstanding() const { return outstanding_; }
  Fragment& add_fragment();
  Fragment& fragment(size_t i) { return fragments_[i]; }
  size_t fragment_count() const { return fragment_count_; }
  // Retrieval: the client's next key, answered by fragment `fragment`.
  // Inline: a multi-get calls it once per key.
  void add_key(std::string_view key, uint32_t fragment) {
    const auto offset = static_cast<uint32_t>(keys_.size());
    keys_.append(key);
    key_refs_.push_back(KeyRef{offset, static_cast<uint32_t>(key.size()), fragment, 0});
    fragments_[fragment].key_positions.push_back(static_cast<uint32_t>(key_refs_.size() - 1));
  }
  size_t key_count() const { return key_refs_.size(); }
  std::string_view key(uint32_t position) const {
    const KeyRef& k = key_refs_[position];
    return std::string_view(keys_).substr(k.offset, k.length);
  }
  KeyRef& key_ref(uint32_t position) { return key_refs_[position]; }
  // Retrieval, broadcast: the first failure, kept for a reply made of
  // failures only ("\r\n" added).
  void note_error(std::string_view line);
  const std::string& error() const { return error_; }
  // With the bytes it reads: the backend's, or a fake server's in tests.
  // A route composes instead.
  void set_status(proto::ReplyStatus status) { status_ = status; }

  // ---- completion by the operations
  // One of the expected operations finished (answered or failed); the last
  // one completes the slot and tells the owner.
  void fragment_done();
  // The same, for an operation that finished before the route that sent it
  // returned: the owner is not told (it writes complete slots when its
  // dispatch returns). True when the slot is now complete.
  bool fragment_done_unreported();
  // Completes a slot none of whose operations went out, or all of whose
  // did before its route returned: its reply is built at once, the owner
  // not told. Nothing while an operation is still out, or once complete.
  void complete_unsent();

  // ---- the client's bookkeeping
  uint32_t keys_weight = 1;   // keys the client waits on in this slot
  uint64_t started_usec = 0;  // when the request was read
  // The route of a routing pool this request took, whose hits, misses and
  // errors count its reply once complete (routes/route_count.h).
  RouteStats* route_stats = nullptr;

  // Back to the pristine state for reuse; keeps allocations.
  void reset();

 private:
  friend class SlotQueue;
  // Builds the final reply from the fragments (retrieval, broadcast).
  void assemble();

  SlotOwner* owner_ = nullptr;
  SlotSource* abandoned_to_ = nullptr;
  evbuffer* reply_ = nullptr;
  proto::ReplyStatus status_ = proto::ReplyStatus::none;
  SlotKind kind_ = SlotKind::direct;
  uint32_t outstanding_ = 0;  // operations not yet done
  bool complete_ = false;
  bool close_after_ = false;  // quit, or a request that ends the connection
  bool drop_reply_ = false;   // noreply: the client asked for nothing back
  std::string keys_;          // retrieval: the requested keys, concatenated
  std::vector<KeyRef> key_refs_;
  std::vector<Fragment> fragments_;
  size_t fragment_count_ = 0;  // fragments in use (the vector keeps spares)
  std::string error_;
  ReplySlot* next_owed_ = nullptr;  // the client's next slot (SlotQueue)
};

// The slots one client is owed, in request order, linked through the slots
// themselves: a client connection holds no queue storage of its own, so an
// idle one costs nothing here and a parked one frees nothing here.
class SlotQueue {
 public:
  bool empty() const { return head_ == nullptr; }
  size_t size() const { return size_; }
  ReplySlot* front() const { return head_; }
  void push_back(ReplySlot* s) {
    s->next_owed_ = nullptr;
    (head_ == nullptr ? head_ : tail_->next_owed_) = s;
    tail_ = s;
    ++size_;
  }
  ReplySlot* pop_front() {
    ReplySlot* s = head_;
    head_ = s->next_owed_;
    if (head_ == nullptr) tail_ = nullptr;
    s->next_owed_ = nullptr;
    --size_;
    return s;
  }

 private:
  ReplySlot* head_ = nullptr;
  ReplySlot* tail_ = nullptr;
  size_t size_ = 0;
};

}  // namespace memshard::proxy
