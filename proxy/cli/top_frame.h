// One frame of `memshard top`: the status page's numbers as text, from two
// documents a refresh apart (rates are taken between them). Pure, so that
// a test reads a frame without a terminal or a proxy.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "proxy/cli/status_sample.h"

namespace memshard::proxy {

struct TopStyle {
  bool color = false;  // ANSI colours for states and alerts (a terminal)
  int width = 100;     // columns; the share bars shrink to fit
};

// The q-quantile (0..1) of the requests answered between two latency
// histograms (bucket counts, `bounds` their upper bounds in us, the last
// bucket unbounded), linear within its bucket as Prometheus'
// histogram_quantile(); nullopt when none was answered.
std::optional<double> latency_quantile(double q, const std::vector<uint64_t>& bounds,
                                       const std::vector<uint64_t>& now,
                                       const std::vector<uint64_t>& before);

// The lines of what stands out: ejected servers, a refused last reload,
// errors, servers shedding requests, certificates near their end.
std::vector<std::string> top_alerts(const StatusSample& now, const StatusSample* before);

// `before`: the previous document (null for the first: no rates yet).
std::string render_top_frame(const StatusSample& now, const StatusSample* before,
                             const TopStyle& style);

}  // namespace memshard::proxy
