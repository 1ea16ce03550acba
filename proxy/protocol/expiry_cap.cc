#include "proxy/protocol/expiry_cap.h"

#include <algorithm>

#include "proxy/protocol/numbers.h"
#include "proxy/protocol/tokens.h"

namespace memshard::proto {
namespace {

constexpr int64_t kRelativeLimit = 60 * 60 * 24 * 30;  // memcached's REALTIME_MAXDELTA

// The index of the exptime token of a classic command, or 0 for none.
size_t classic_exptime_token(Command c) {
  switch (c) {
    case Command::set:
    case Command::add:
    case Command::replace:
    case Command::cas:
      return 3;  // <cmd> <key> <flags> <exptime> <bytes> ...
    case Command::touch:
      return 2;  // touch <key> <exptime>
    case Command::gat:
    case Command::gats:
      return 1;  // gat <exptime> <key>...
    default:
      return 0;  // append and prepend ignore theirs; the rest have none
  }
}

bool is_meta_command(Command c) {
  return c == Command::meta_get || c == Command::meta_set || c == Command::meta_delete ||
         c == Command::meta_arithmetic;
}

// The rewritten value of a token holding an exptime, or the token as it
// is when memcached would refuse it (the server then answers the error).
std::string rewritten_token(std::string_view digits, ExpiryRule rule, int64_t now_unix) {
  int32_t e = 0;
  if (!parse_mc_int32(digits, e)) return std::string(digits);
  std::string out;
  append_decimal(out, rewritten_exptime(e, rule, now_unix));
  return out;
}

}  // namespace

int64_t capped_exptime(int64_t exptime, uint32_t cap, int64_t now_unix) {
  if (exptime < 0) return exptime;
  if (exptime == 0) return cap;
  if (exptime <= kRelativeLimit) return std::min<int64_t>(exptime, cap);
  const int64_t left = exptime - now_unix;
  return left <= 0 ? -1 : std::min<int64_t>(left, cap);
}

int64_t rewritten_exptime(int64_t exptime, ExpiryRule rule, int64_t now_unix) {
  switch (rule.kind) {
    case ExpiryRule::Kind::cap:
      return capped_exptime(exptime, rule.seconds, now_unix);
    case ExpiryRule::Kind::set:
      return rule.seconds;
    case ExpiryRule::Kind::none:
      break;
  }
  return exptime;
}

std::optional<std::string> rewrite_expiry(const Request& r, std::string_view line, ExpiryRule rule,
                                          int64_t now_unix) {
  if (!rule.changes()) return std::nullopt;
  // A delete's expiry (md I T: how long a stale item stays) is left alone
  // by ttl_set, as mcrouter's ModifyExptimeRoute leaves every delete's.
  if (rule.kind == ExpiryRule::Kind::set && r.command == Command::meta_delete) return std::nullopt;
  const size_t classic = classic_exptime_token(r.command);
  const bool meta = is_meta_command(r.command);
  if (classic == 0 && !meta) return std::nullopt;
  std::string out;
  out.reserve(line.size() + 12);
  TokenCursor cursor(line);
  std::string_view token;
  bool changed = false, has_t = false;
  // Meta flags come after the key, and after ms's data length.
  const size_t first_flag = r.command == Command::meta_set ? 3 : 2;
  for (size_t i = 0; cursor.next(token); ++i) {
    if (!out.empty()) out.push_back(' ');
    if (classic != 0 && i == classic) {
      out += rewritten_token(token, rule, now_unix);
      changed = true;
    } else if (meta && i >= first_flag && (token[0] == 'T' || token[0] == 'N')) {
      has_t = has_t || token[0] == 'T';
      out.push_back(token[0]);
      out += rewritten_token(token.substr(1), rule, now_unix);
      changed = true;
    } else {
      out.append(token);
    }
  }
  if (r.command == Command::meta_set && !has_t) {
    out.append(" T");
    append_decimal(out, rule.seconds);
    changed = true;
  }
  if (!changed) return std::nullopt;
  return out;
}

}  // namespace memshard::proto
