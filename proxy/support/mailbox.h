// Work handed to one event loop from other threads: post() from anywhere,
// and the loop's thread runs what was posted, in order, when it next wakes.
// An eventfd wakes the loop; a mutex guards only the list of tasks.
#pragma once

#include <event2/event.h>

#include <functional>
#include <mutex>
#include <vector>

namespace memshard::proxy {

class Mailbox {
 public:
  explicit Mailbox(event_base* base);
  ~Mailbox();
  Mailbox(const Mailbox&) = delete;
  Mailbox& operator=(const Mailbox&) = delete;

  // Thread-safe. The task runs on the loop's thread; a task posted after
  // the mailbox is destroyed is never run, so its owner outlives it.
  void post(std::function<void()> task);
  // Runs on the calling thread what was posted and has not run yet. Only
  // for an owner whose loop thread has ended (joined): work posted just
  // before the end (a socket handed over, say) must not be dropped unseen
  // with the mailbox, which would leak what the task owns.
  void run_pending();

 private:
  static void on_wake(evutil_socket_t fd, short, void* self);

  int fd_ = -1;
  event* event_ = nullptr;
  std::mutex mu_;
  std::vector<std::function<void()>> tasks_;
};

}  // namespace memshard::proxy
