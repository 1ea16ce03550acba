#include "proxy/support/mailbox.h"

#include <sys/eventfd.h>
#include <unistd.h>

#include <stdexcept>
#include <utility>

namespace memshard::proxy {

Mailbox::Mailbox(event_base* base) {
  fd_ = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
  if (fd_ < 0) throw std::runtime_error("eventfd failed");
  event_ = event_new(base, fd_, EV_READ | EV_PERSIST, &Mailbox::on_wake, this);
  event_add(event_, nullptr);
}

Mailbox::~Mailbox() {
  event_free(event_);
  close(fd_);
}

void Mailbox::post(std::function<void()> task) {
  {
    std::lock_guard<std::mutex> lock(mu_);
    tasks_.push_back(std::move(task));
  }
  uint64_t one = 1;
  (void)!write(fd_, &one, sizeof(one));
}

void Mailbox::on_wake(evutil_socket_t fd, short, void* arg) {
  uint64_t n;
  (void)!read(fd, &n, sizeof(n));
  static_cast<Mailbox*>(arg)->run_pending();
}

void Mailbox::run_pending() {
  std::vector<std::function<void()>> tasks;
  {
    std::lock_guard<std::mutex> lock(mu_);
    tasks.swap(tasks_);
  }
  // Out of the lock: a task may post more (they run on the next wake).
  for (auto& task : tasks) task();
}

}  // namespace memshard::proxy
