#include "private_hosts.h"

#include <fstream>
#include <sstream>
#include <stdexcept>

namespace memshard::testing {

const char* const kDebianHosts =
    "127.0.0.1\tlocalhost\n"
    "127.0.1.1\tdebian\n"
    "\n"
    "# The following lines are desirable for IPv6 capable hosts\n"
    "::1     localhost ip6-localhost ip6-loopback\n"
    "ff02::1 ip6-allnodes\n"
    "ff02::2 ip6-allrouters\n";

PrivateHosts::PrivateHosts(const std::string& text) : path_(dir_.path() + "/hosts") {
  write(text);
}

void PrivateHosts::write(const std::string& text) const {
  std::ofstream out(path_, std::ios::trunc);
  out << text;
  if (!out.flush()) throw std::runtime_error("cannot write " + path_);
}

std::vector<std::string> PrivateHosts::launcher() const {
  // sh's $0 is the file; "$@" the command to run.
  return {"unshare",
          "--mount",
          "--propagation",
          "private",
          "--",
          "sh",
          "-c",
          "mount --bind \"$0\" /etc/hosts && exec \"$@\"",
          path_};
}

std::string PrivateHosts::unavailable() {
  CommandResult r = run_command({"unshare", "--mount", "--", "true"});
  if (r.exit_code != 0) return "cannot make a mount namespace (unshare --mount): " + r.err;
  return {};
}

std::vector<std::string> PrivateHosts::lookup(const std::string& name) const {
  std::vector<std::string> argv = launcher();
  argv.insert(argv.end(), {"getent", "ahosts", name});
  CommandResult r = run_command(argv);
  std::vector<std::string> out;
  std::istringstream lines(r.out);
  std::string address, kind;
  while (lines >> address >> kind) {
    std::string rest;
    std::getline(lines, rest);
    if (kind == "STREAM") out.push_back(address);
  }
  return out;
}

}  // namespace memshard::testing
