#include "proxy/cli/top_frame.h"

#include <algorithm>
#include <cstdio>
#include <ctime>

namespace memshard::proxy {

namespace {

constexpr const char* kRed = "\x1b[31;1m";
constexpr const char* kYellow = "\x1b[33m";
constexpr const char* kGreen = "\x1b[32m";
constexpr const char* kDim = "\x1b[2m";
constexpr const char* kBold = "\x1b[1m";
constexpr const char* kReset = "\x1b[0m";

std::string format(const char* fmt, double v) {
  char buf[64];
  snprintf(buf, sizeof(buf), fmt, v);
  return buf;
}

std::string rate_text(std::optional<double> v) {
  if (!v) return "-";
  if (*v >= 1e6) return format("%.2fM", *v / 1e6);
  if (*v >= 1e4) return format("%.1fk", *v / 1e3);
  if (*v >= 100) return format("%.0f", *v);
  return format(*v >= 10 ? "%.1f" : "%.2f", *v);
}

std::string pct_text(std::optional<double> v) {
  return v ? format("%.1f%%", *v * 100) : "-";
}

std::string usec_text(std::optional<double> v) {
  if (!v) return "-";
  if (*v >= 1e6) return format("%.2f s", *v / 1e6);
  if (*v >= 1e3) return format(*v >= 1e4 ? "%.0f ms" : "%.1f ms", *v / 1e3);
  return format("%.0f us", *v);
}

std::string duration_text(uint64_t s) {
  if (s < 120) return std::to_string(s) + " s";
  if (s < 7200) return std::to_string(s / 60) + " min";
  if (s < 172800) return std::to_string(s / 3600) + " h";
  return std::to_string(s / 86400) + " days";
}

std::string clock_text(int64_t epoch) {
  const time_t t = static_cast<time_t>(epoch);
  tm local{};
  localtime_r(&t, &local);
  char buf[16];
  strftime(buf, sizeof(buf), "%H:%M:%S", &local);
  return buf;
}

std::optional<double> rate(uint64_t now, std::optional<uint64_t> before, double seconds) {
  if (!before || seconds <= 0 || now < *before) return std::nullopt;
  return static_cast<double>(now - *before) / seconds;
}

// `text` padded (or cut) to `width` columns, right-aligned when `right`.
std::string cell(const std::string& text, size_t width, bool right = false) {
  if (text.size() >= width) return text.substr(0, width);
  const std::string pad(width - text.size(), ' ');
  return right ? pad + text : text + pad;
}

std::string paint(const std::string& text, const char* color, const TopStyle& style) {
  return style.color ? std::string(color) + text + kReset : text;
}

const char* state_color(const std::string& state) {
  if (state == "up") return kGreen;
  if (state == "ejected") return kRed;
  if (state == "probing") return kYellow;
  return kDim;
}

struct Figures {
  std::optional<double> rps, eps, hit, p50, p99;
};

Figures pool_figures(const StatusSample& now, const StatusSample* before,
                     const StatusSample::Pool& pool) {
  Figures f;
  const StatusSample::Pool* b = before ? before->pool(pool.name) : nullptr;
  if (b == nullptr) return f;
  const double dt = static_cast<double>(now.clock_ms - before->clock_ms) / 1000.0;
  f.rps = rate(pool.requests, b->requests, dt);
  f.eps = rate(pool.forward_errors, b->forward_errors, dt);
  if (pool.hits >= b->hits && pool.misses >= b->misses) {
    const uint64_t reads = (pool.hits - b->hits) + (pool.misses - b->misses);
    if (reads > 0) f.hit = static_cast<double>(pool.hits - b->hits) / static_cast<double>(reads);
  }
  f.p50 = latency_quantile(0.5, now.latency_bounds_usec, pool.latency, b->latency);
  f.p99 = latency_quantile(0.99, now.latency_bounds_usec, pool.latency, b->latency);
  return f;
}

}  // namespace

std::optional<double> latency_quantile(double q, const std::vector<uint64_t>& bounds,
                                       const std::vector<uint64_t>& now,
                                       const std::vector<uint64_t>& before) {
  if (bounds.empty() || now.size() != before.size()) return std::nullopt;
  std::vector<double> counts(now.size());
  double total = 0;
  for (size_t i = 0; i < now.size(); ++i) {
    if (now[i] < before[i]) return std::nullopt;  // restarted
    counts[i] = static_cast<double>(now[i] - before[i]);
    total += counts[i];
  }
  if (total <= 0) return std::nullopt;
  const double want = q * total;
  double seen = 0;
  for (size_t i = 0; i < counts.size(); ++i) {
    if (counts[i] > 0 && seen + counts[i] >= want) {
      if (i >= bounds.size()) return static_cast<double>(bounds.back());
      const double low = i == 0 ? 0.0 : static_cast<double>(bounds[i - 1]);
      return low + (static_cast<double>(bounds[i]) - low) * ((want - seen) / counts[i]);
    }
    seen += counts[i];
  }
  return static_cast<double>(bounds.back());
}

std::vector<std::string> top_alerts(const StatusSample& now, const StatusSample* before) {
  std::vector<std::string> out;
  for (const StatusSample::Pool& pool : now.pools) {
    for (const StatusSample::Server& s : pool.servers) {
      if (s.state == "ejected" || s.state == "probing")
        out.push_back("pool " + pool.name + ": server " + s.address + " ejected" +
                      (s.state == "probing" ? " (probing now)" : ""));
    }
    const StatusSample::Pool* b = before ? before->pool(pool.name) : nullptr;
    for (const StatusSample::Server& s : pool.servers) {
      const StatusSample::Server* was = b ? b->server(s.address) : nullptr;
      if (was == nullptr || s.requests_shed <= was->requests_shed) continue;
      const double dt = static_cast<double>(now.clock_ms - before->clock_ms) / 1000.0;
      out.push_back("pool " + pool.name + ": server " + s.address + " shedding " +
                    rate_text(rate(s.requests_shed, was->requests_shed, dt)) +
                    " requests/s (server_queue_limit reached)");
    }
    const Figures f = pool_figures(now, before, pool);
    if (f.eps && *f.eps > 0)
      out.push_back("pool " + pool.name + ": " + rate_text(f.eps) + " errors/s");
    if (pool.discovery_failing)
      out.push_back("pool " + pool.name + ": " + pool.discovery +
                    " lookups fail; its servers stay as they were");
    if (pool.migrate_failed > 0)
      out.push_back("pool " + pool.name + ": migration failed to copy " +
                    std::to_string(pool.migrate_failed) + " key(s)");
  }
  if (!now.history.empty() && now.history.back().outcome == "refused") {
    const StatusSample::Reload& r = now.history.back();
    out.push_back("reload refused at " + clock_text(r.at) + ": " + r.reason);
  }
  if (now.switch_pending) out.push_back("a switch to another configuration is scheduled");
  for (const StatusSample::Certificate& c : now.certificates) {
    if (c.seconds_left < 14 * 86400)
      out.push_back("pool " + c.pool + ": " + c.side + " certificate " +
                    (c.seconds_left <= 0
                         ? "has expired"
                         : "expires in " + duration_text(static_cast<uint64_t>(c.seconds_left))));
  }
  return out;
}

std::string render_top_frame(const StatusSample& now, const StatusSample* before,
                             const TopStyle& style) {
  std::string out;
  out += paint("memshard " + now.version, kBold, style) + " on " + now.source + "   up " +
         duration_text(now.uptime) + "   generation " + std::to_string(now.generation) + " (" +
         std::to_string(now.reloads) + " reloads, " + std::to_string(now.reload_failures) +
         " refused)   " + std::to_string(now.connections) + " clients   " + clock_text(now.time) +
         "\n";
  for (const std::string& a : top_alerts(now, before)) out += paint("! " + a, kRed, style) + "\n";
  if (!before) out += "(rates from the next refresh on)\n";

  size_t name_w = 4, listen_w = 8, addr_w = 6;
  for (const StatusSample::Pool& p : now.pools) {
    name_w = std::max(name_w, p.name.size());
    listen_w = std::max(listen_w, p.listen.size() + (p.tls ? 6 : 0));
    for (const StatusSample::Server& s : p.servers) addr_w = std::max(addr_w, s.address.size() + 3);
  }
  name_w = std::min<size_t>(name_w, 24);
  listen_w = std::min<size_t>(listen_w, 40);
  addr_w = std::min<size_t>(addr_w, 48);

  out += "\n" + cell("POOL", name_w) + "  " + cell("LISTENER", listen_w) + cell("REQ/S", 10, true) +
         cell("HIT", 8, true) + cell("ERR/S", 9, true) + cell("CLIENTS", 9, true) +
         cell("P50", 10, true) + cell("P99", 10, true) + "\n";
  for (const StatusSample::Pool& p : now.pools) {
    const Figures f = pool_figures(now, before, p);
    out += cell(p.name, name_w) + "  " + cell(p.listen + (p.tls ? " (TLS)" : ""), listen_w) +
           cell(rate_text(f.rps), 10, true) + cell(pct_text(f.hit), 8, true) +
           cell(rate_text(f.eps), 9, true) + cell(std::to_string(p.client_connections), 9, true) +
           cell(usec_text(f.p50), 10, true) + cell(usec_text(f.p99), 10, true) + "\n";
  }

  // The bar takes what the other columns leave, 10 to 30 characters.
  const int fixed = static_cast<int>(addr_w) + 10 + 10 + 9 + 8 + 9 + 8 + 8 + 7;
  const size_t bar_w = static_cast<size_t>(std::clamp(style.width - fixed, 10, 30));
  out += "\n" + cell("SERVER", addr_w) + cell("STATE", 10) + cell("REQ/S", 10, true) +
         cell("ERRORS", 9, true) + cell("SHED", 8, true) + "  " +
         cell("SHARE OF THE RING", bar_w + 9) + cell("WEIGHT", 8, true) + cell("COPIES", 8, true) +
         cell("CONNS", 7, true) + "\n";
  for (const StatusSample::Pool& p : now.pools) {
    std::string title = "pool " + p.name;
    if (p.warmup_windows > 0)
      title += "   warm-up: " + std::to_string(p.warmup_windows) + " window(s), " +
               duration_text(p.warmup_seconds_left) + " left";
    if (p.migrating || p.migrate_moved > 0 || p.migrate_pending > 0)
      title += "   migration: " + std::to_string(p.migrate_moved) + " moved, " +
               std::to_string(p.migrate_pending) + " pending";
    if (!p.discovery.empty()) {
      title += "   " + p.discovery + ", servers changed " +
               (p.discovery_last_change > 0 ? clock_text(p.discovery_last_change) : "never");
      if (!p.discovery_pending.empty()) title += " (waiting: " + p.discovery_pending + ")";
    }
    out += paint(title, kBold, style) + "\n";
    const StatusSample::Pool* b = before ? before->pool(p.name) : nullptr;
    const double dt = before ? static_cast<double>(now.clock_ms - before->clock_ms) / 1000.0 : 0.0;
    for (const StatusSample::Server& s : p.servers) {
      std::optional<uint64_t> was;
      const StatusSample::Server* o = b != nullptr ? b->server(s.address) : nullptr;
      if (o != nullptr) was = o->requests;
      const bool shedding = o != nullptr && s.requests_shed > o->requests_shed;
      const size_t filled =
          static_cast<size_t>(std::clamp(s.share, 0.0, 1.0) * static_cast<double>(bar_w) + 0.5);
      const std::string bar =
          "[" + std::string(filled, '#') + std::string(bar_w - filled, '.') + "]";
      out += "  " + cell(s.address, addr_w - 2) +
             paint(cell(s.state, 10), state_color(s.state), style) +
             cell(rate_text(rate(s.requests, was, dt)), 10, true) +
             cell(std::to_string(s.errors), 9, true) +
             (shedding ? paint(cell(std::to_string(s.requests_shed), 8, true), kRed, style)
                       : cell(std::to_string(s.requests_shed), 8, true)) +
             "  " + bar + cell(pct_text(s.share), 7, true) +
             cell(std::to_string(s.weight), 8, true) +
             cell(p.replicas > 1 ? pct_text(s.copies) : "-", 8, true) +
             cell(std::to_string(s.connections), 7, true) + "\n";
    }
  }
  if (!now.history.empty()) {
    const StatusSample::Reload& r = now.history.back();
    out += "\nlast reload: " + r.outcome + " at " + clock_text(r.at) + ", generation " +
           std::to_string(r.generation) + (r.reason.empty() ? "" : ": " + r.reason) + "\n";
  }
  return out;
}

}  // namespace memshard::proxy
