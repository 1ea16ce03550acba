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

// The capped value of a token holding an exptime, or the token as it is
// when memcached would refuse it (the server then answers the error).
std::string capped_token(std::string_view digits, uint32_t cap, int64_t now_unix) {
  int32_t e = 0;
  if (!parse_mc_int32(digits, e)) return std::string(digits);
  std::string out;
  append_decimal(out, capped_exptime(e, cap, now_unix));
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

std::optional<std::string> cap_expiry(const Request& r, std::string_view line, uint32_t cap,
                                      int64_t now_unix) {
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
      out += capped_token(token, cap, now_unix);
      changed = true;
    } else if (meta && i >= first_flag && (token[0] == 'T' || token[0] == 'N')) {
      has_t = has_t || token[0] == 'T';
      out.push_back(token[0]);
      out += capped_token(token.substr(1), cap, now_unix);
      changed = true;
    } else {
      out.append(token);
    }
  }
  if (r.command == Command::meta_set && !has_t) {
    out.append(" T");
    append_decimal(out, cap);
    changed = true;
  }
  if (!changed) return std::nullopt;
  return out;
}

}  // namespace memshard::proto
