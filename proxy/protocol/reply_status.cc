#include "proxy/protocol/reply_status.h"

#include <array>
#include <utility>

namespace memshard::proto {

namespace {

bool all_digits(std::string_view s) {
  if (s.empty()) return false;
  for (char c : s) {
    if (c < '0' || c > '9') return false;
  }
  return true;
}

}  // namespace

ReplyStatus classify_reply_line(std::string_view line) {
  // The first word decides; the rest is flags, a message or a value's
  // description.
  const std::string_view word = line.substr(0, line.find(' '));
  static constexpr std::array<std::pair<std::string_view, ReplyStatus>, 20> kWords = {{
      {"VALUE", ReplyStatus::hit},
      {"VA", ReplyStatus::hit},
      {"END", ReplyStatus::miss},
      {"EN", ReplyStatus::miss},
      {"STORED", ReplyStatus::stored},
      {"NOT_STORED", ReplyStatus::not_stored},
      {"NS", ReplyStatus::not_stored},
      {"EXISTS", ReplyStatus::exists},
      {"EX", ReplyStatus::exists},
      {"NOT_FOUND", ReplyStatus::not_found},
      {"NF", ReplyStatus::not_found},
      {"DELETED", ReplyStatus::deleted},
      {"TOUCHED", ReplyStatus::touched},
      {"HD", ReplyStatus::done},
      {"OK", ReplyStatus::ok},
      {"MN", ReplyStatus::ok},
      {"VERSION", ReplyStatus::version},
      {"SERVER_ERROR", ReplyStatus::server_error},
      {"CLIENT_ERROR", ReplyStatus::client_error},
      {"ERROR", ReplyStatus::error},
  }};
  for (const auto& [w, status] : kWords) {
    if (word == w) return status;
  }
  if (all_digits(line)) return ReplyStatus::number;
  return ReplyStatus::other;
}

ReplyStatus classify_binary_status(uint16_t status) {
  switch (status) {
    case 0x0000:
      return ReplyStatus::done;
    case 0x0001:
      return ReplyStatus::not_found;
    case 0x0002:
      return ReplyStatus::exists;
    case 0x0005:
      return ReplyStatus::not_stored;
    case 0x0003:  // too large
    case 0x0082:  // out of memory
    case 0x0086:  // temporary failure (the proxy's own)
      return ReplyStatus::server_error;
    case 0x0004:  // invalid arguments
    case 0x0006:  // non-numeric
      return ReplyStatus::client_error;
    case 0x0081:  // unknown command
      return ReplyStatus::error;
    default:
      return ReplyStatus::other;
  }
}

std::string_view status_name(ReplyStatus s) {
  switch (s) {
    case ReplyStatus::none:
      return "none";
    case ReplyStatus::hit:
      return "hit";
    case ReplyStatus::miss:
      return "miss";
    case ReplyStatus::stored:
      return "stored";
    case ReplyStatus::not_stored:
      return "not_stored";
    case ReplyStatus::exists:
      return "exists";
    case ReplyStatus::not_found:
      return "not_found";
    case ReplyStatus::deleted:
      return "deleted";
    case ReplyStatus::touched:
      return "touched";
    case ReplyStatus::done:
      return "done";
    case ReplyStatus::number:
      return "number";
    case ReplyStatus::ok:
      return "ok";
    case ReplyStatus::version:
      return "version";
    case ReplyStatus::server_error:
      return "server_error";
    case ReplyStatus::client_error:
      return "client_error";
    case ReplyStatus::error:
      return "error";
    case ReplyStatus::other:
      return "other";
  }
  return "other";
}

}  // namespace memshard::proto
