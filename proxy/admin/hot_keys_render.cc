#include "proxy/admin/hot_keys_render.h"

#include <cstdio>
#include <string_view>

#include "proxy/protocol/replies.h"

namespace memshard::proxy {

std::string escaped_hot_key(std::string_view key) {
  std::string out;
  for (unsigned char c : key) {
    if (c > 0x20 && c < 0x7f && c != '%' && c != '"' && c != '\\') {
      out.push_back(static_cast<char>(c));
    } else {
      char buf[4];
      snprintf(buf, sizeof(buf), "%%%02X", c);
      out.append(buf);
    }
  }
  return out;
}

namespace {

std::string escaped(std::string_view key) {
  return escaped_hot_key(key);
}

std::string number(double v) {
  char buf[32];
  snprintf(buf, sizeof(buf), "%.6f", v);
  return buf;
}

std::vector<HotKeyReport> hot_keys(const StatsSnapshot::PoolTotals& t) {
  return shown_hot_keys(t);
}

}  // namespace

std::vector<HotKeyReport> shown_hot_keys(const StatsSnapshot::PoolTotals& t) {
  return merge_hot_keys(t.hot_keys, t.hot_key_share, kHotKeysShown);
}

void render_stat_hot_keys(const StatsSnapshot& snap, std::string& out) {
  for (const auto& [pool, t] : snap.pools) {
    size_t rank = 0;
    for (const HotKeyReport& r : hot_keys(t)) {
      std::string prefix = "STAT " + pool + ":hot_key:" + std::to_string(rank++) + ":";
      out.append(prefix).append("key ").append(escaped(r.key)).append("\r\n");
      out.append(prefix).append("share ").append(number(r.share)).append("\r\n");
      out.append(prefix).append("error ").append(number(r.error)).append("\r\n");
      out.append(prefix).append("server ").append(r.server).append("\r\n");
    }
  }
  out.append(proto::reply::kEnd);
}

void append_hot_keys_json(const StatsSnapshot& snap, std::string& out) {
  out.append(", \"hotkeys\":[");
  bool first = true;
  for (const auto& [pool, t] : snap.pools) {
    for (const HotKeyReport& r : hot_keys(t)) {
      if (!first) out.append(", ");
      first = false;
      // Escaped keys and stats names hold no quote or backslash.
      out.append("{\"pool\":\"").append(escaped(pool)).append("\", \"key\":\"");
      out.append(escaped(r.key)).append("\", \"share\":").append(number(r.share));
      out.append(", \"error\":").append(number(r.error)).append(", \"server\":\"");
      out.append(escaped(r.server)).append("\"}");
    }
  }
  out.append("]");
}

void append_hot_keys_prometheus(const StatsSnapshot& snap, std::string& out) {
  std::string error_lines;
  out.append(
      "# HELP memshard_hot_key_share Estimated share of the pool's requests for one of its "
      "hottest keys (at most " +
      std::to_string(kHotKeysShown) + " per pool).\n# TYPE memshard_hot_key_share gauge\n");
  for (const auto& [pool, t] : snap.pools) {
    for (const HotKeyReport& r : hot_keys(t)) {
      std::string labels = "{pool=\"" + escaped(pool) + "\",key=\"" + escaped(r.key) +
                           "\",server=\"" + escaped(r.server) + "\"}";
      out.append("memshard_hot_key_share").append(labels).append(" ");
      out.append(number(r.share)).append("\n");
      error_lines.append("memshard_hot_key_share_error").append(labels).append(" ");
      error_lines.append(number(r.error)).append("\n");
    }
  }
  out.append(
      "# HELP memshard_hot_key_share_error Bound on the error of memshard_hot_key_share.\n"
      "# TYPE memshard_hot_key_share_error gauge\n");
  out.append(error_lines);
}

}  // namespace memshard::proxy
