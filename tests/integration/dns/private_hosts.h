// A hosts file that only the processes a test starts see: they run in a
// mount namespace of their own (unshare, as root) with the file bound over
// /etc/hosts. glibc reads /etc/hosts at every lookup, so rewriting the file
// moves a name while memshard runs, as a DNS change would, without a DNS
// server and without touching the machine's own /etc/hosts.
#pragma once

#include <string>
#include <vector>

#include "harness.h"

namespace memshard::testing {

class PrivateHosts {
 public:
  explicit PrivateHosts(const std::string& text);
  // Rewrites the file in place: a bind mount follows the file's inode, so
  // the file is truncated and written, never replaced.
  void write(const std::string& text) const;
  // Prefix for a command line, e.g. Memshard's `launcher`.
  std::vector<std::string> launcher() const;
  // Why private hosts files cannot be had here (not root, no unshare), or
  // empty when they can.
  static std::string unavailable();
  // What getaddrinfo gives for `name` under this file, in order, one
  // address a line (getent ahosts, stream entries).
  std::vector<std::string> lookup(const std::string& name) const;
  const std::string& path() const { return path_; }

 private:
  TempDir dir_;
  std::string path_;
};

// Debian 12's /etc/hosts as its installer writes it (netcfg): localhost is
// ::1 as well as 127.0.0.1, and getaddrinfo gives ::1 first.
extern const char* const kDebianHosts;

}  // namespace memshard::testing
