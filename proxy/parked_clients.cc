#include "proxy/parked_clients.h"

#include <sys/epoll.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <stdexcept>
#include <string>
#include <utility>

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
  for (Entry& e : entries_) ::close(e.fd);
  event_free(event_);
  ::close(epoll_fd_);
}

bool ParkedClients::park(Entry entry) {
  // Level-triggered: bytes that arrived before this call wake it at once.
  epoll_event ev{};
  ev.events = EPOLLIN | EPOLLRDHUP;
  ev.data.fd = entry.fd;
  if (epoll_ctl(epoll_fd_, EPOLL_CTL_ADD, entry.fd, &ev) != 0) return false;
  auto fd = static_cast<size_t>(entry.fd);
  if (index_of_fd_.size() <= fd) index_of_fd_.resize(fd + 1, kNone);
  index_of_fd_[fd] = static_cast<uint32_t>(entries_.size());
  entries_.push_back(std::move(entry));
  return true;
}

ParkedClients::Entry ParkedClients::remove_at(size_t index) {
  Entry out = std::move(entries_[index]);
  index_of_fd_[static_cast<size_t>(out.fd)] = kNone;
  if (index + 1 != entries_.size()) {
    entries_[index] = std::move(entries_.back());
    index_of_fd_[static_cast<size_t>(entries_[index].fd)] = static_cast<uint32_t>(index);
  }
  entries_.pop_back();
  // Parked sockets come and go in waves: give memory back after a wave.
  if (entries_.capacity() > 64 && entries_.size() < entries_.capacity() / 4) {
    entries_.shrink_to_fit();
  }
  return out;
}

std::vector<ParkedClients::Entry> ParkedClients::take_if(
    const std::function<bool(const Entry&)>& take) {
  std::vector<Entry> out;
  for (size_t i = 0; i < entries_.size();) {
    if (!take(entries_[i])) {
      ++i;
      continue;
    }
    // Closing the socket would take it out of the set too, but the caller
    // may keep it open.
    epoll_ctl(epoll_fd_, EPOLL_CTL_DEL, entries_[i].fd, nullptr);
    out.push_back(remove_at(i));  // the last entry moved to i: look at i again
  }
  return out;
}

void ParkedClients::on_ready(evutil_socket_t, short, void* self) {
  auto* p = static_cast<ParkedClients*>(self);
  // At most a batch per loop iteration: the set stays readable for the rest.
  epoll_event ready[64];
  int n = epoll_wait(p->epoll_fd_, ready, 64, 0);
  for (int i = 0; i < n; ++i) {
    int fd = ready[i].data.fd;
    auto slot = static_cast<size_t>(fd);
    if (slot >= p->index_of_fd_.size() || p->index_of_fd_[slot] == kNone) continue;
    epoll_ctl(p->epoll_fd_, EPOLL_CTL_DEL, fd, nullptr);
    p->wake_(p->remove_at(p->index_of_fd_[slot]));
  }
}

}  // namespace memshard::proxy
