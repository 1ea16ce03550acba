// A reply owed to a client, one per request, kept in request order by the
// client connection. A slot is completed by the proxy itself (version,
// errors, ...) or by the backend operations ("fragments") it was split into.
// Slots are pooled per worker and reused, buffers and vectors included, so
// the steady-state request path does not allocate.
#pragma once

#include <event2/buffer.h>

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "proxy/protocol/reply_status.h"

namespace memshard::proxy {

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
  uint32_t offset;  // into ReplySlot::keys
  uint32_t length;
  uint32_t fragment;
  uint32_t block_bytes;  // bytes of this key's VALUE block in its fragment, 0 = miss
};

struct ReplySlot;

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

struct ReplySlot {
  ReplySlot();
  ~ReplySlot();
  ReplySlot(const ReplySlot&) = delete;
  ReplySlot& operator=(const ReplySlot&) = delete;

  // Told when the slot completes. Null for a slot whose owner gave up on
  // it while a server still owed it (work.h: Call): it then goes back to
  // `abandoned_to` once answered.
  SlotOwner* owner = nullptr;
  SlotSource* abandoned_to = nullptr;
  evbuffer* reply = nullptr;
  // What the reply says (reply_status.h), set with its bytes: by the
  // backend as it reads them, by whoever answers in the proxy's name.
  proto::ReplyStatus status = proto::ReplyStatus::none;
  SlotKind kind = SlotKind::direct;
  uint32_t outstanding = 0;  // fragments not yet answered
  bool complete = false;
  bool close_after = false;  // quit, or a request that ends the connection
  bool drop_reply = false;   // noreply: the client asked for nothing back
  std::string keys;          // retrieval: the requested keys, concatenated
  std::vector<KeyRef> key_refs;
  std::vector<Fragment> fragments;
  size_t fragment_count = 0;  // fragments in use (the vector keeps spares)
  std::string error;          // broadcast: the first failure
  uint64_t started_usec = 0;
  uint32_t keys_weight = 1;        // keys the client waits on in this slot
  ReplySlot* next_owed = nullptr;  // the client's next slot (SlotQueue)

  std::string_view key(uint32_t position) const {
    const KeyRef& k = key_refs[position];
    return std::string_view(keys).substr(k.offset, k.length);
  }
  Fragment& add_fragment();
  // One of the `outstanding` backend operations finished (answered or
  // failed); the last one completes the slot and tells the owner.
  void fragment_done();
  // The same, for an operation that finished before the route that sent it
  // returned: the owner is not told (it writes complete slots when its
  // dispatch returns). True when the slot is now complete.
  bool fragment_done_unreported();
  // Completes a slot none of whose fragments went out (every server
  // unavailable): its reply is built at once. The owner is not told: it
  // is the one completing it, and writes complete slots when it returns.
  void complete_unsent();
  // Builds the final reply from the fragments (retrieval, broadcast).
  void assemble();
  // Back to the pristine state for reuse; keeps allocations.
  void reset();
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
    s->next_owed = nullptr;
    (head_ == nullptr ? head_ : tail_->next_owed) = s;
    tail_ = s;
    ++size_;
  }
  ReplySlot* pop_front() {
    ReplySlot* s = head_;
    head_ = s->next_owed;
    if (head_ == nullptr) tail_ = nullptr;
    s->next_owed = nullptr;
    --size_;
    return s;
  }

 private:
  ReplySlot* head_ = nullptr;
  ReplySlot* tail_ = nullptr;
  size_t size_ = 0;
};

}  // namespace memshard::proxy
