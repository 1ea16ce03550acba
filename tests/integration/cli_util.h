// Running the memshard command line in tests, and reading what it prints:
// lines, and tab-separated columns (the ring tools' output).
#pragma once

#include <chrono>
#include <sstream>
#include <string>
#include <string_view>
#include <vector>

#include "harness.h"

namespace memshard::testing {

inline CommandResult memshard(std::vector<std::string> args, std::string_view input = {}) {
  args.insert(args.begin(), memshard_binary());
  return run_command(args, input, std::chrono::seconds(30));
}

inline std::vector<std::string> lines_of(const std::string& text) {
  std::vector<std::string> out;
  std::istringstream in(text);
  std::string line;
  while (std::getline(in, line)) out.push_back(line);
  return out;
}

// Every cell, empty ones included ("a\t\tb" has three).
inline std::vector<std::string> split_tabs(const std::string& line) {
  std::vector<std::string> out;
  size_t start = 0;
  while (true) {
    size_t tab = line.find('\t', start);
    out.push_back(line.substr(start, tab - start));
    if (tab == std::string::npos) return out;
    start = tab + 1;
  }
}

}  // namespace memshard::testing
