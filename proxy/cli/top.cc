#include "proxy/cli/top.h"

#include <sys/ioctl.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <csignal>
#include <iostream>
#include <optional>
#include <sstream>
#include <thread>

#include "proxy/admin/stats_token.h"
#include "proxy/cli/http_fetch.h"
#include "proxy/cli/status_sample.h"
#include "proxy/cli/top_frame.h"

namespace memshard::proxy {

namespace {

constexpr auto kFetchLimit = std::chrono::seconds(5);
std::atomic<bool> interrupted{false};

void on_interrupt(int) {
  interrupted.store(true);
}

int terminal_width() {
  winsize ws{};
  if (ioctl(STDOUT_FILENO, TIOCGWINSZ, &ws) == 0 && ws.ws_col > 0) return ws.ws_col;
  return 100;
}

// Sleeps `seconds`, waking early on Ctrl-C.
void pause_for(double seconds) {
  const auto end = std::chrono::steady_clock::now() +
                   std::chrono::milliseconds(static_cast<int64_t>(seconds * 1000));
  while (!interrupted.load() && std::chrono::steady_clock::now() < end)
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
}

class Reader {
 public:
  Reader(std::string host, uint16_t port, std::string token)
      : host_(std::move(host)), port_(port), token_(std::move(token)) {}
  std::optional<StatusSample> read(std::string& error) const {
    FetchResult r = http_fetch(host_, port_, "/status.json", token_, kFetchLimit);
    if (!r.ok) {
      error = r.error;
      return std::nullopt;
    }
    return parse_status_sample(r.body, error);
  }

 private:
  std::string host_;
  uint16_t port_;
  std::string token_;
};

// Home, each line cleared to its end, then the rest of the screen: the
// frame replaces the last one without the flicker of clearing first.
std::string in_place(const std::string& frame) {
  std::string out = "\x1b[H";
  std::istringstream lines(frame);
  for (std::string line; std::getline(lines, line);) out += line + "\x1b[K\n";
  return out + "\x1b[J";
}

}  // namespace

int run_top(const TopOptions& o, std::ostream& out, std::ostream& err) {
  std::string host, token, error;
  uint16_t port = 0;
  if (!split_host_port(o.server, host, port)) {
    err << "memshard top: -s wants HOST:PORT (the stats port), not '" << o.server << "'\n";
    return 1;
  }
  if (!o.token_file.empty() && !read_stats_token(o.token_file, token, error)) {
    err << "memshard top: " << error << "\n";
    return 1;
  }
  if (o.interval_s < 0.05 || o.interval_s > 3600) {
    err << "memshard top: --interval must be 0.05 to 3600 seconds\n";
    return 1;
  }
  const Reader reader(host, port, token);
  std::optional<StatusSample> before = reader.read(error);
  if (!before) {
    err << "memshard top: " << error << "\n";
    return 1;
  }
  const bool terminal = &out == &std::cout && isatty(STDOUT_FILENO) && !o.once;
  if (o.once) {
    pause_for(o.interval_s);
    std::optional<StatusSample> now = reader.read(error);
    if (!now) {
      err << "memshard top: " << error << "\n";
      return 1;
    }
    out << render_top_frame(*now, &*before, TopStyle{false, 100}) << std::flush;
    return 0;
  }
  std::signal(SIGINT, on_interrupt);
  std::signal(SIGTERM, on_interrupt);
  if (terminal) out << "\x1b[?25l";  // no cursor blinking over the numbers
  std::optional<StatusSample> now = before;
  before.reset();
  while (!interrupted.load()) {
    if (now) {
      const std::string frame = render_top_frame(
          *now, before ? &*before : nullptr, TopStyle{terminal, terminal ? terminal_width() : 100});
      out << (terminal ? in_place(frame) : frame + "\n") << std::flush;
      before = std::move(now);
    } else if (terminal) {
      out << "\x1b[H\x1b[31;1mmemshard top: " << error << "; retrying\x1b[0m\x1b[K\n" << std::flush;
    } else {
      err << "memshard top: " << error << "; retrying\n";
    }
    pause_for(o.interval_s);
    if (interrupted.load()) break;
    now = reader.read(error);
  }
  if (terminal) out << "\x1b[?25h" << std::flush;
  return 0;
}

}  // namespace memshard::proxy
