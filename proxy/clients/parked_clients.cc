#include "proxy/clients/parked_clients.h"

#include <sys/epoll.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <stdexcept>
#include <string>

namespace memshard::proxy {

ParkedClients::ParkedClients(event_base* base, Wake wake) : wake_(std::move(wake)) {
  epoll_fd_ = epoll_create1(EPOLL_CLOEXEC);
  if (epoll_fd_ < 0) {
    throw std::runtime_error(std::string("cannot create an epoll set: ") + strerror(errno));
  }
  // The set's own descriptor is readable while any parked socket is.
  event_ = event_new(base, epoll_fd_, EV_READ | EV_PERSIST, &ParkedClients::on_ready, this);
  event_add(event_, nullptr);
}

ParkedClients::~ParkedClients() {
  for (const Slot& s : slots_) ::close(s.fd);
  event_free(event_);
  ::close(epoll_fd_);
}

bool ParkedClients::park(int fd, std::shared_ptr<const ClientOrigin> origin,
                         uint64_t last_input_usec) {
  // Level-triggered: bytes that arrived before this call wake it at once
  // (EPOLL_CTL_MOD re-arms a dormant registration the same way). One-shot:
  // waking leaves the registration in the set, disarmed, instead of a
  // system call to remove it (see kDormant).
  epoll_event ev{};
  ev.events = EPOLLIN | EPOLLRDHUP | EPOLLONESHOT;
  ev.data.fd = fd;
  const auto slot = static_cast<size_t>(fd);
  const bool dormant = slot < index_of_fd_.size() && index_of_fd_[slot] == kDormant;
  // A dormant mark can be stale (the socket was closed since, and the
  // number reused), and a socket can be registered without one (it woke
  // here, moved to another worker and came back): each way, the other
  // operation is what the kernel accepts.
  if (epoll_ctl(epoll_fd_, dormant ? EPOLL_CTL_MOD : EPOLL_CTL_ADD, fd, &ev) != 0 &&
      (errno != (dormant ? ENOENT : EEXIST) ||
       epoll_ctl(epoll_fd_, dormant ? EPOLL_CTL_ADD : EPOLL_CTL_MOD, fd, &ev) != 0))
    return false;
  if (index_of_fd_.size() <= slot) index_of_fd_.resize(slot + 1, kNone);
  index_of_fd_[slot] = static_cast<uint32_t>(slots_.size());
  const ClientOrigin* raw = origin.get();
  auto o = origins_.begin();
  while (o != origins_.end() && o->first.get() != raw) ++o;
  if (o == origins_.end()) {
    origins_.emplace_back(std::move(origin), 1);
  } else {
    ++o->second;
  }
  // Rounded up, so the idle time read back is never more than the truth.
  auto since = static_cast<uint32_t>((last_input_usec + 999) / 1000);
  slots_.push_back(Slot{fd, since, raw});
  return true;
}

ParkedClients::Entry ParkedClients::remove_at(size_t index) {
  Slot slot = slots_[index];
  index_of_fd_[static_cast<size_t>(slot.fd)] = kNone;
  if (index + 1 != slots_.size()) {
    slots_[index] = slots_.back();
    index_of_fd_[static_cast<size_t>(slots_[index].fd)] = static_cast<uint32_t>(index);
  }
  slots_.pop_back();
  Entry out{slot.fd, nullptr};
  for (auto o = origins_.begin(); o != origins_.end(); ++o) {
    if (o->first.get() != slot.origin) continue;
    out.origin = o->first;
    if (--o->second == 0) origins_.erase(o);
    break;
  }
  return out;
}

std::vector<ParkedClients::Entry> ParkedClients::take_if(
    uint64_t now_usec, const std::function<bool(const View&)>& take) {
  auto now_ms = static_cast<uint32_t>(now_usec / 1000);
  std::vector<Entry> out;
  for (size_t i = 0; i < slots_.size();) {
    const Slot& s = slots_[i];
    // Modulo 2^32 ms: right for idle times under 49 days, twice the longest
    // client_idle_timeout (INT_MAX ms). A start rounded up past `now` (the
    // same millisecond) reads as 2^32 - 1: idle 0.
    uint32_t idle = now_ms - s.idle_since_ms;
    if (idle == UINT32_MAX) idle = 0;
    if (!take(View{s.fd, *s.origin, idle})) {
      ++i;
      continue;
    }
    // Closing the socket would take it out of the set too, but the caller
    // may keep it open.
    epoll_ctl(epoll_fd_, EPOLL_CTL_DEL, s.fd, nullptr);
    out.push_back(remove_at(i));  // the last slot moved to i: look at i again
  }
  return out;
}

void ParkedClients::shrink() {
  if (slots_.capacity() > 64 && slots_.size() < slots_.capacity() / 4) slots_.shrink_to_fit();
  size_t end = index_of_fd_.size();
  // A dormant mark forgotten costs a failed system call at the next park.
  while (end > 0 && index_of_fd_[end - 1] >= kDormant) --end;
  if (end < index_of_fd_.capacity() / 4) {
    index_of_fd_.resize(end);
    index_of_fd_.shrink_to_fit();
  }
}

void ParkedClients::on_ready(evutil_socket_t, short, void* self) {
  auto* p = static_cast<ParkedClients*>(self);
  // At most a batch per loop iteration: the set stays readable for the rest.
  epoll_event ready[64];
  int n = epoll_wait(p->epoll_fd_, ready, 64, 0);
  for (int i = 0; i < n; ++i) {
    int fd = ready[i].data.fd;
    auto at = static_cast<size_t>(fd);
    if (at >= p->index_of_fd_.size() || p->index_of_fd_[at] >= kDormant) continue;
    Entry woken = p->remove_at(p->index_of_fd_[at]);
    // Disarmed by its one event, the registration stays until the socket
    // closes or parks here again.
    p->index_of_fd_[at] = kDormant;
    p->wake_(std::move(woken));
  }
}

}  // namespace memshard::proxy
