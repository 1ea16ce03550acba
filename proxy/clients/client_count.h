// Open client connections, counted where they are accepted (the main
// thread) and uncounted where they close (a worker): per listener, for its
// pool's client_connections, and over the whole proxy, for the room the
// descriptor limit leaves (descriptor_budget.h).
#pragma once

#include <atomic>
#include <cstdint>
#include <memory>
#include <utility>

namespace memshard::proxy {

class ClientCount {
 public:
  explicit ClientCount(std::shared_ptr<std::atomic<uint32_t>> proxy_total)
      : total_(std::move(proxy_total)) {}

  uint32_t open() const { return open_.load(std::memory_order_relaxed); }
  void add() {
    open_.fetch_add(1, std::memory_order_relaxed);
    total_->fetch_add(1, std::memory_order_relaxed);
  }
  void remove() {
    open_.fetch_sub(1, std::memory_order_relaxed);
    total_->fetch_sub(1, std::memory_order_relaxed);
  }

 private:
  std::atomic<uint32_t> open_{0};
  std::shared_ptr<std::atomic<uint32_t>> total_;
};

}  // namespace memshard::proxy
