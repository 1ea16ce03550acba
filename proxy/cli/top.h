// `memshard top -s HOST:PORT`: a live terminal view of one instance's
// status page numbers, read from /status.json on its stats port. On a
// terminal it redraws in place (ANSI escapes, no curses) until Ctrl-C;
// when its output is not a terminal it prints one plain frame per refresh;
// with --once it prints one frame, with rates over one interval, and exits.
#pragma once

#include <iosfwd>
#include <string>

namespace memshard::proxy {

struct TopOptions {
  std::string server = "127.0.0.1:22222";  // the stats port
  std::string token_file;                  // the stats token, when the port needs one
  double interval_s = 1.0;
  bool once = false;
};

// Returns the exit code: 0, or 1 when the first document cannot be read.
int run_top(const TopOptions& options, std::ostream& out, std::ostream& err);

}  // namespace memshard::proxy
