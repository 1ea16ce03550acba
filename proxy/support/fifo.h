// A growable ring-buffer FIFO. Unlike std::deque it keeps its storage when
// emptied, so a connection's queues stop allocating once they have reached
// their working size.
#pragma once

#include <cstddef>
#include <utility>
#include <vector>

namespace memshard::proxy {

template <typename T>
class Fifo {
 public:
  bool empty() const { return size_ == 0; }
  size_t size() const { return size_; }
  T& front() { return items_[head_]; }
  T& back() { return items_[(head_ + size_ - 1) & (items_.size() - 1)]; }
  T& operator[](size_t i) { return items_[(head_ + i) & (items_.size() - 1)]; }

  void push_back(T value) {
    if (size_ == items_.size()) grow();
    items_[(head_ + size_) & (items_.size() - 1)] = std::move(value);
    ++size_;
  }
  // The slot past the back, as the element that last used it left it
  // (its strings keep their capacity), now part of the queue: for queues
  // whose elements are overwritten in place rather than constructed.
  T& push_back_slot() {
    if (size_ == items_.size()) grow();
    ++size_;
    return back();
  }
  // Removes the front, leaving it in its slot for push_back_slot().
  void drop_front() {
    head_ = (head_ + 1) & (items_.size() - 1);
    --size_;
  }
  T pop_front() {
    T value = std::move(items_[head_]);
    head_ = (head_ + 1) & (items_.size() - 1);
    --size_;
    return value;
  }

 private:
  void grow() {
    std::vector<T> bigger(items_.empty() ? 4 : items_.size() * 2);
    for (size_t i = 0; i < size_; ++i) bigger[i] = std::move((*this)[i]);
    items_ = std::move(bigger);
    head_ = 0;
  }
  std::vector<T> items_;  // capacity is always a power of two
  size_t head_ = 0;
  size_t size_ = 0;
};

}  // namespace memshard::proxy
