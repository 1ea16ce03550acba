// Where the stats token comes from (admin/stats_token.h says what it
// guards): --stats-token-file over everything, else the config's
// stats_token or stats_token_file (conf/model.h), else none. Read at start
// and at every reload, so a reload that changes any of them takes effect
// for the next request on the stats port.
#pragma once

#include <string>

#include "conf/model.h"

namespace memshard::proxy {

struct StatsTokenSource {
  std::string token;  // empty: the stats port asks for none
  // For the log, never the token: "--stats-token-file PATH", "stats_token",
  // "stats_token_file PATH", or empty for none. PATH as read (a relative
  // stats_token_file resolved beside the config file).
  std::string from;
  std::string where;  // "FILE:LINE" of the config key; empty for the flag or none

  // "stats_token_file /etc/m/token (memshard.yml:3)", or "no stats token".
  std::string describe() const;
  bool operator==(const StatsTokenSource& o) const {
    return token == o.token && from == o.from;  // where the key sits does not matter
  }
};

// A relative `name` is `config_file`'s neighbour (as TLS files are),
// wherever memshard runs from.
std::string beside_config(const std::string& config_file, const std::string& name);

// The token in force for `config` with `flag_file` (--stats-token-file;
// empty when not given). False with `error` when the file that holds it
// does not load; for the config's stats_token_file, `error` names the
// config file and line as a config error does.
bool load_stats_token(const std::string& flag_file, const conf::Config& config,
                      StatsTokenSource& out, std::string& error);

}  // namespace memshard::proxy
