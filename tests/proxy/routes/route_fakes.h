// Fakes of what routes see of the backends (Outbox, Server), of a pool's
// placement and of a worker's slot pool, for the route and client tests.
// A FakeOutbox only records: the test plays the server afterwards, writing
// a reply where backends/backend.cc would and calling fragment_done(), so
// it picks the order servers answer in.
#pragma once

#include <event2/buffer.h>
#include <gtest/gtest.h>

#include <cstddef>
#include <cstdint>
#include <deque>
#include <map>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "proxy/backends/outbox.h"
#include "proxy/backends/reply_slot.h"
#include "proxy/protocol/reply_status.h"
#include "proxy/routes/placement.h"

namespace memshard::proxy::testing_fakes {

inline std::string drain_all(evbuffer* buf) {
  std::string s(evbuffer_get_length(buf), '\0');
  evbuffer_remove(buf, s.data(), s.size());
  return s;
}

inline std::string copy_all(evbuffer* buf) {
  std::string s(evbuffer_get_length(buf), '\0');
  evbuffer_copyout(buf, s.data(), s.size());
  return s;
}

// One request a route put in an outbox.
struct SentOp {
  std::string bytes;  // what went on the wire (enqueue), or the line the outbox would build
  BackendOp op;
  bool via_retrieval = false;  // enqueue_retrieval rather than enqueue
  std::string verb;
  std::vector<std::string> keys;
  bool answered = false;
};

class FakeOutbox final : public Outbox {
 public:
  FakeOutbox() : out_(evbuffer_new()) {}
  ~FakeOutbox() { evbuffer_free(out_); }
  FakeOutbox(const FakeOutbox&) = delete;
  FakeOutbox& operator=(const FakeOutbox&) = delete;

  evbuffer* output() override { return out_; }
  void enqueue(BackendOp op) override {
    // The contract: bytes appended, then exactly one enqueue for them.
    EXPECT_GT(evbuffer_get_length(out_), 0u) << "enqueue() with no request bytes";
    ops.push_back(SentOp{drain_all(out_), op, false, {}, {}, false});
  }
  void enqueue_retrieval(std::string_view verb, std::span<const std::string_view> keys,
                         BackendOp op) override {
    // The outbox builds these lines itself: a route must not have written one.
    EXPECT_EQ(evbuffer_get_length(out_), 0u) << "bytes left in the output before a retrieval";
    EXPECT_EQ(op.mode, ReplyMode::retrieval);
    SentOp s{std::string(verb), op, true, std::string(verb), {}, false};
    for (std::string_view k : keys) {
      s.keys.emplace_back(k);
      s.bytes.append(" ").append(k);
    }
    s.bytes.append("\r\n");
    ops.push_back(std::move(s));
  }

  // Requests in the order they were queued. A deque: answering one may
  // make a client send more (appended here) while the test holds another.
  std::deque<SentOp> ops;
  size_t unanswered() const {
    size_t n = 0;
    for (const SentOp& s : ops) n += s.answered ? 0 : 1;
    return n;
  }

 private:
  evbuffer* out_;
};

class FakeServer final : public Server {
 public:
  Outbox* outbox(uint64_t affinity) override {
    affinities.push_back(affinity);
    return down ? nullptr : &box;
  }
  RepairLog* repairs() const override { return log; }
  FakeOutbox box;
  bool down = false;
  std::vector<uint64_t> affinities;
  RepairLog* log = nullptr;  // the server's repair log, when a test gives it one
};

// Keys placed by a map; a key not in it has no live server.
class FakePlacement final : public Placement {
 public:
  explicit FakePlacement(std::vector<Server*> servers) : servers_(std::move(servers)) {}
  size_t place(std::string_view key) const override {
    auto it = where.find(std::string(key));
    return it == where.end() ? npos : it->second;
  }
  size_t size() const override { return servers_.size(); }
  Server& server(size_t index) const override { return *servers_[index]; }
  bool moves_keys() const override { return !homes.empty(); }
  size_t home(std::string_view key) const override {
    auto it = homes.find(std::string(key));
    return it == homes.end() ? npos : it->second;
  }
  std::map<std::string, size_t> where;
  // With servers ejected: where keys live with every server in.
  std::map<std::string, size_t> homes;

 private:
  std::vector<Server*> servers_;
};

// Every key on one server: a pool of one server, as the pools behind a
// routing pool, a gutter or a shadow are in route tests.
class OneServerPlacement final : public Placement {
 public:
  explicit OneServerPlacement(Server& server) : server_(server) {}
  size_t place(std::string_view) const override { return 0; }
  size_t size() const override { return 1; }
  Server& server(size_t) const override { return server_; }

 private:
  Server& server_;
};

// A slot pool that allocates and frees each slot, so a slot used after its
// release is a use-after-free for the sanitizers, and counts what is out.
class FakeSlots final : public SlotSource {
 public:
  uint64_t now_usec() override { return now; }
  uint64_t now = 1'000'000;
  ReplySlot* acquire_slot(SlotOwner* owner) override {
    auto* s = new ReplySlot();
    s->set_owner(owner);
    ++outstanding;
    ++acquired;
    return s;
  }
  void release_slot(ReplySlot* slot) override {
    --outstanding;
    delete slot;
  }
  long outstanding = 0;
  long acquired = 0;
};

class FakeOwner final : public SlotOwner {
 public:
  void on_slot_complete() override { ++told; }
  int told = 0;
};

// The server's side of one operation, written where backends/backend.cc
// writes it, then the operation finished.

// A one-line (or meta VA + data) reply: single, meta, quiet_keep.
inline void answer(SentOp& s, std::string_view reply) {
  ASSERT_FALSE(s.answered) << "answered twice: " << s.bytes;
  s.answered = true;
  ReplySlot* slot = s.op.slot;
  if (s.op.mode != ReplyMode::quiet_drop && s.op.mode != ReplyMode::broadcast) {
    evbuffer_add(slot->reply(), reply.data(), reply.size());
  }
  // What the reply says, as the backend classifies it (nothing before the
  // MN of a quiet request: nothing to say).
  if (s.op.mode != ReplyMode::broadcast) {
    slot->set_status(reply.empty() ? proto::ReplyStatus::ok
                                   : proto::classify_reply_line(reply.substr(0, reply.find('\r'))));
  }
  if (s.op.mode == ReplyMode::broadcast && reply != "OK\r\n") slot->note_error(reply);
  slot->fragment_done();
}

// A retrieval's reply: a VALUE block for each key in `hits` (key -> data),
// misses for the others, in the fragment's key order as a server answers.
inline void answer_retrieval(SentOp& s, const std::map<std::string, std::string>& hits) {
  ASSERT_FALSE(s.answered) << "answered twice: " << s.bytes;
  ASSERT_EQ(s.op.mode, ReplyMode::retrieval);
  s.answered = true;
  ReplySlot* slot = s.op.slot;
  Fragment& frag = slot->fragment(s.op.fragment);
  for (size_t i = 0; i < frag.key_positions.size(); ++i) {
    uint32_t pos = frag.key_positions[i];
    auto it = hits.find(std::string(slot->key(pos)));
    if (it == hits.end()) continue;
    std::string block = "VALUE " + it->first + " 0 " + std::to_string(it->second.size()) + "\r\n" +
                        it->second + "\r\n";
    evbuffer_add(frag.values, block.data(), block.size());
    slot->key_ref(pos).block_bytes = static_cast<uint32_t>(block.size());
    frag.next_key = i + 1;
  }
  slot->fragment_done();
}

// A one-line operation whose connection failed, as BackendConn::fail
// finishes it: the reason is the reply, except for quiet_drop (the client
// asked for silence).
inline void fail_op(SentOp& s, std::string_view reason) {
  ASSERT_FALSE(s.answered);
  ASSERT_NE(s.op.mode, ReplyMode::retrieval);
  s.answered = true;
  ReplySlot* slot = s.op.slot;
  switch (s.op.mode) {
    case ReplyMode::broadcast:
      slot->note_error(reason);
      break;
    case ReplyMode::quiet_drop:
      slot->fragment(s.op.fragment).failed = true;
      slot->set_status(proto::ReplyStatus::server_error);
      break;
    default:
      evbuffer_drain(slot->reply(), evbuffer_get_length(slot->reply()));
      evbuffer_add(slot->reply(), reason.data(), reason.size());
      evbuffer_add(slot->reply(), "\r\n", 2);
      slot->set_status(proto::ReplyStatus::server_error);
      break;
  }
  slot->fragment_done();
}

// A retrieval whose connection failed (BackendConn::fail).
inline void fail_retrieval(SentOp& s, std::string_view reason) {
  ASSERT_FALSE(s.answered);
  s.answered = true;
  ReplySlot* slot = s.op.slot;
  Fragment& frag = slot->fragment(s.op.fragment);
  frag.failed = true;
  evbuffer_drain(frag.values, evbuffer_get_length(frag.values));
  for (uint32_t pos : frag.key_positions) slot->key_ref(pos).block_bytes = 0;
  slot->note_error(reason);
  slot->fragment_done();
}

}  // namespace memshard::proxy::testing_fakes
