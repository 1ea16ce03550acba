// Fifo (proxy/support/fifo.h): first in, first out through growth and
// wraparound, indexing from the front, move-only elements, and the slots
// that push_back_slot() hands back as their last user left them.
#include "proxy/support/fifo.h"

#include <gtest/gtest.h>

#include <cstddef>
#include <deque>
#include <memory>
#include <string>

namespace memshard::proxy {
namespace {

// Compares the whole queue, front to back, with a std::deque kept alongside.
void expect_same(Fifo<int>& fifo, const std::deque<int>& model) {
  ASSERT_EQ(fifo.size(), model.size());
  ASSERT_EQ(fifo.empty(), model.empty());
  for (size_t i = 0; i < model.size(); ++i) ASSERT_EQ(fifo[i], model[i]) << "index " << i;
  if (!model.empty()) {
    EXPECT_EQ(fifo.front(), model.front());
    EXPECT_EQ(fifo.back(), model.back());
  }
}

TEST(Fifo, StartsEmpty) {
  Fifo<int> fifo;
  EXPECT_TRUE(fifo.empty());
  EXPECT_EQ(fifo.size(), 0u);
}

TEST(Fifo, PopsInTheOrderPushedAcrossGrowth) {
  Fifo<int> fifo;
  // Past several doublings of the storage (4, 8, ... 128).
  for (int i = 0; i < 100; ++i) {
    fifo.push_back(i);
    ASSERT_EQ(fifo.back(), i);
    ASSERT_EQ(fifo.front(), 0);
    ASSERT_EQ(fifo.size(), static_cast<size_t>(i + 1));
  }
  for (int i = 0; i < 100; ++i) ASSERT_EQ(fifo.pop_front(), i);
  EXPECT_TRUE(fifo.empty());
}

TEST(Fifo, GrowsWhileWrappedAroundWithoutLosingOrder) {
  Fifo<int> fifo;
  std::deque<int> model;
  int next = 0;
  // Fill the first storage of 4, then move the head forward so that the
  // queue wraps past the end of its storage before the next push grows it.
  for (int i = 0; i < 4; ++i) {
    fifo.push_back(next);
    model.push_back(next++);
  }
  for (int i = 0; i < 3; ++i) {
    ASSERT_EQ(fifo.pop_front(), model.front());
    model.pop_front();
  }
  for (int i = 0; i < 3; ++i) {
    fifo.push_back(next);
    model.push_back(next++);
  }
  expect_same(fifo, model);  // full, and wrapped: head at slot 3
  fifo.push_back(next);      // grows from the wrapped state
  model.push_back(next++);
  expect_same(fifo, model);
}

TEST(Fifo, MatchesADequeThroughManyMixedOperations) {
  Fifo<int> fifo;
  std::deque<int> model;
  int next = 0;
  // Rounds of uneven pushes and pops: the head goes round the storage many
  // times at several sizes, and the queue grows while it is wrapped.
  for (int round = 0; round < 200; ++round) {
    int pushes = 1 + (round * 7) % 13;
    int pops = (round * 5) % 11;
    for (int i = 0; i < pushes; ++i) {
      fifo.push_back(next);
      model.push_back(next++);
    }
    for (int i = 0; i < pops && !model.empty(); ++i) {
      ASSERT_EQ(fifo.pop_front(), model.front()) << "round " << round;
      model.pop_front();
    }
    expect_same(fifo, model);
  }
  while (!model.empty()) {
    ASSERT_EQ(fifo.pop_front(), model.front());
    model.pop_front();
  }
  EXPECT_TRUE(fifo.empty());
}

TEST(Fifo, IndexingAndBackSeeTheElementsInPlace) {
  Fifo<std::string> fifo;
  fifo.push_back("a");
  fifo.push_back("b");
  fifo.push_back("c");
  fifo[1] += "!";
  fifo.back() += "?";
  fifo.front() += "#";
  EXPECT_EQ(fifo.pop_front(), "a#");
  EXPECT_EQ(fifo.pop_front(), "b!");
  EXPECT_EQ(fifo.pop_front(), "c?");
}

TEST(Fifo, HoldsMoveOnlyElementsAndHandsThemBackOwned) {
  Fifo<std::unique_ptr<int>> fifo;
  for (int i = 0; i < 20; ++i) fifo.push_back(std::make_unique<int>(i));
  for (int i = 0; i < 20; ++i) {
    std::unique_ptr<int> p = fifo.pop_front();
    ASSERT_NE(p, nullptr);
    EXPECT_EQ(*p, i);
  }
  EXPECT_TRUE(fifo.empty());
}

TEST(Fifo, PopFrontLeavesNoCopyBehind) {
  // A popped element is moved out: what it owns is not kept alive by the
  // queue's storage.
  auto shared = std::make_shared<int>(7);
  Fifo<std::shared_ptr<int>> fifo;
  fifo.push_back(shared);
  EXPECT_EQ(shared.use_count(), 2);
  fifo.pop_front().reset();
  EXPECT_EQ(shared.use_count(), 1);
}

TEST(Fifo, PushBackSlotReusesTheSlotDropFrontLeft) {
  Fifo<std::string> fifo;
  for (int i = 0; i < 4; ++i) fifo.push_back_slot() = "item " + std::to_string(i);
  ASSERT_EQ(fifo.size(), 4u);
  // Dropping the front leaves its string in its slot, capacity and all.
  std::string& first = fifo.front();
  first.reserve(1000);
  const char* storage = first.data();
  fifo.drop_front();
  ASSERT_EQ(fifo.size(), 3u);
  EXPECT_EQ(fifo.front(), "item 1");
  // The storage of 4 is full again with the next slot: it is the one
  // dropped, still holding what its last user left.
  std::string& reused = fifo.push_back_slot();
  EXPECT_EQ(&reused, &first);
  EXPECT_EQ(reused, "item 0");
  EXPECT_EQ(reused.data(), storage);
  EXPECT_GE(reused.capacity(), 1000u);
  reused = "item 4";
  for (int i = 1; i <= 4; ++i) EXPECT_EQ(fifo.pop_front(), "item " + std::to_string(i));
}

TEST(Fifo, KeepsItsStorageWhenEmptied) {
  Fifo<std::string> fifo;
  for (int i = 0; i < 8; ++i) fifo.push_back_slot() = "x";
  std::string* slots[8];
  for (size_t i = 0; i < 8; ++i) slots[i] = &fifo[i];
  for (int i = 0; i < 8; ++i) fifo.drop_front();
  ASSERT_TRUE(fifo.empty());
  // Refilled to the same size, the queue uses the same storage: no element
  // lives anywhere but in one of the slots it had before.
  for (int i = 0; i < 8; ++i) {
    std::string* slot = &fifo.push_back_slot();
    bool known = false;
    for (std::string* s : slots) known |= s == slot;
    EXPECT_TRUE(known) << "push " << i << " went to new storage";
  }
}

}  // namespace
}  // namespace memshard::proxy
