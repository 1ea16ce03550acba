// --watch: reload when the config file changes, without a signal.
//
// Watches the file's directory rather than the file, because the ways a
// config is replaced in practice swap the directory entry, not the bytes:
// an editor writes a temp file and renames it over, and a Kubernetes
// ConfigMap volume swaps a `..data` symlink. Only completed changes count
// (close after write, rename, create), never a write in progress; a burst of
// them is coalesced, and nothing happens when the content is unchanged.
#pragma once

#include <event2/event.h>

#include <functional>
#include <string>

#include "proxy/support/timer.h"

namespace memshard::proxy {

class ConfigWatch {
 public:
  // Throws std::runtime_error when inotify cannot watch the directory.
  ConfigWatch(event_base* base, std::string path, std::function<void()> on_change);
  ~ConfigWatch();
  ConfigWatch(const ConfigWatch&) = delete;
  ConfigWatch& operator=(const ConfigWatch&) = delete;

 private:
  static void on_inotify(evutil_socket_t fd, short, void* self);
  void on_settled();
  std::string read_content() const;
  void watch_link_target();

  std::string path_;
  std::function<void()> on_change_;
  int fd_ = -1;
  event* inotify_event_ = nullptr;
  Timer settle_timer_;
  std::string last_content_;
};

}  // namespace memshard::proxy
