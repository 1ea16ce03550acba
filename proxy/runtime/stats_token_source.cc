#include "proxy/runtime/stats_token_source.h"

#include <utility>

#include "proxy/admin/stats_token.h"

namespace memshard::proxy {

std::string StatsTokenSource::describe() const {
  if (from.empty()) return "no stats token";
  return from + (where.empty() ? "" : " (" + where + ")");
}

std::string beside_config(const std::string& config_file, const std::string& name) {
  if (name.empty() || name.front() == '/') return name;
  const size_t slash = config_file.rfind('/');
  return slash == std::string::npos ? name : config_file.substr(0, slash + 1) + name;
}

bool load_stats_token(const std::string& flag_file, const conf::Config& config,
                      StatsTokenSource& out, std::string& error) {
  StatsTokenSource got;
  if (!flag_file.empty()) {
    if (!read_stats_token(flag_file, got.token, error)) return false;
    got.from = "--stats-token-file " + flag_file;
  } else if (const conf::StatsTokenConfig& c = config.stats_token; c.given()) {
    got.where = config.file + ":" + std::to_string(c.line);
    if (c.file.empty()) {
      got.token = c.token;
      got.from = "stats_token";
    } else {
      const std::string path = beside_config(config.file, c.file);
      std::string why;
      if (!read_stats_token(path, got.token, why)) {
        error = conf::ConfigError{config.file, c.line, "stats_token_file", why}.to_string();
        return false;
      }
      got.from = "stats_token_file " + path;
    }
  }
  out = std::move(got);
  return true;
}

}  // namespace memshard::proxy
