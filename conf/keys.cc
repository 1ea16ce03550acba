#include "conf/keys.h"

#include "conf/pool.h"

namespace memshard::conf {

const KeyNames& key_names() {
  static const KeyNames names = [] {
    KeyNames n;
    // What config.cc's parse_pools takes for a top-level key rather than a
    // pool name (the StatsTokenConfig of model.h).
    n.top_level = {"stats_token", "stats_token_file"};
    n.pool = detail::pool_directive_names();
    const std::vector<std::string_view> tls = detail::tls_directives();
    n.pool.insert(n.pool.end(), tls.begin(), tls.end());
    const std::vector<std::string_view> discovery = detail::discovery_directives();
    n.pool.insert(n.pool.end(), discovery.begin(), discovery.end());
    n.route = detail::route_field_names();
    return n;
  }();
  return names;
}

}  // namespace memshard::conf
