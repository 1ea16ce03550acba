#include "proxy/runtime/config_watch.h"

#include <sys/inotify.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <stdexcept>

#include "proxy/support/log.h"

namespace memshard::proxy {

namespace {
// Changes closer together than this are one change.
constexpr uint64_t kSettleMs = 150;
}  // namespace

namespace {
constexpr uint32_t kCompletedChanges =
    IN_CLOSE_WRITE | IN_MOVED_TO | IN_CREATE | IN_DELETE | IN_ATTRIB;

std::string parent_of(const std::filesystem::path& p) {
  std::string dir = p.parent_path().string();
  return dir.empty() ? "." : dir;
}
}  // namespace

ConfigWatch::ConfigWatch(event_base* base, std::string path, std::function<void()> on_change)
    : path_(std::move(path)),
      on_change_(std::move(on_change)),
      settle_timer_(base, [this] { on_settled(); }) {
  std::string dir = parent_of(path_);
  fd_ = inotify_init1(IN_NONBLOCK | IN_CLOEXEC);
  if (fd_ < 0 || inotify_add_watch(fd_, dir.c_str(), kCompletedChanges) < 0) {
    std::string why = strerror(errno);
    if (fd_ >= 0) close(fd_);
    throw std::runtime_error("cannot watch " + dir + ": " + why);
  }
  watch_link_target();
  inotify_event_ = event_new(base, fd_, EV_READ | EV_PERSIST, &ConfigWatch::on_inotify, this);
  event_add(inotify_event_, nullptr);
  last_content_ = read_content();
}

ConfigWatch::~ConfigWatch() {
  event_free(inotify_event_);
  close(fd_);
}

void ConfigWatch::on_inotify(evutil_socket_t fd, short, void* arg) {
  auto* self = static_cast<ConfigWatch*>(arg);
  alignas(inotify_event) char buf[8192];
  while (read(fd, buf, sizeof(buf)) > 0) {
  }
  // Any completed change in the directory may be ours (a swapped `..data`
  // link has another name): wait for quiet, then compare contents.
  self->settle_timer_.arm_ms(kSettleMs);
}

// When the path is a symlink to a file in another directory, the file is
// replaced there: watch that directory too (again after every change, as
// the link may now point elsewhere; adding a watch twice is harmless).
void ConfigWatch::watch_link_target() {
  std::error_code ec;
  std::filesystem::path target = std::filesystem::canonical(path_, ec);
  if (ec) return;
  std::string dir = parent_of(target);
  if (dir != parent_of(path_)) inotify_add_watch(fd_, dir.c_str(), kCompletedChanges);
}

void ConfigWatch::on_settled() {
  ConfigWatch* self = this;
  self->watch_link_target();
  std::string content = self->read_content();
  if (content == self->last_content_) return;
  self->last_content_ = std::move(content);
  log_notice("%s changed", self->path_.c_str());
  self->on_change_();
}

std::string ConfigWatch::read_content() const {
  std::ifstream f(path_, std::ios::binary);
  std::ostringstream s;
  s << f.rdbuf();
  return s.str();
}

}  // namespace memshard::proxy
