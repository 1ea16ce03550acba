#include "proxy/protocol/meta_codec.h"

#include <charconv>
#include <cstdint>
#include <type_traits>

#include "proxy/protocol/base64.h"
#include "proxy/protocol/numbers.h"

namespace memshard::proto {
namespace {

// memcached's limit on the key token as written (KEY_MAX_LENGTH), which it
// checks before decoding a `b` key.
constexpr size_t kMaxBase64KeyBytes = kMaxKeyLength / 4 * 3;

void append_bare(std::string& out, char letter) {
  out.push_back(' ');
  out.push_back(letter);
}

// Appends " <key>" and says whether the key needs the `b` flag; false
// when the key cannot travel.
bool append_key(const Request& r, std::string_view key, std::string& out, bool& base64) {
  if (key.empty() || key.size() > kMaxKeyLength) return false;
  base64 = r.meta_flags.has('b') || !meta_key_is_plain(key);
  if (base64 && key.size() > kMaxBase64KeyBytes) return false;
  out.push_back(' ');
  if (base64) {
    base64_encode(key, out);
  } else {
    out.append(key);
  }
  return true;
}

char mode_letter(Mode mode) {
  switch (mode) {
    case Mode::add:
      return 'E';
    case Mode::replace:
      return 'R';
    case Mode::append:
      return 'A';
    case Mode::prepend:
      return 'P';
    case Mode::decr:
      return 'D';
    default:
      return 0;  // set and incr are ms's and ma's defaults
  }
}

// mg for a classic retrieval or touch of `key`.
bool append_classic_get(const Request& r, std::string_view key, std::string& out) {
  out.append("mg");
  bool base64 = false;
  if (!append_key(r, key, out, base64)) return false;
  if (base64) append_bare(out, 'b');
  if (r.command != Command::touch) {
    out.append(" v f t");
    if (r.command == Command::gets || r.command == Command::gats) append_bare(out, 'c');
  }
  if (r.has_exptime && r.command != Command::get && r.command != Command::gets) {
    append_meta_flag(out, 'T', r.exptime_value);
  }
  if (r.quiet) append_bare(out, 'q');
  out.append("\r\n");
  return true;
}

bool append_classic_store(const Request& r, std::string_view value, std::string& out) {
  out.append("ms");
  bool base64 = false;
  if (r.keys.empty() || !append_key(r, r.keys[0], out, base64)) return false;
  out.push_back(' ');
  append_decimal(out, value.size());
  if (base64) append_bare(out, 'b');
  if (r.flags != 0) append_meta_flag(out, 'F', r.flags);
  if (r.exptime_value != 0) append_meta_flag(out, 'T', r.exptime_value);
  if (r.has_cas) append_meta_flag(out, 'C', r.cas);
  if (const char m = mode_letter(r.mode); m != 0) {
    out.append(" M").push_back(m);
  }
  if (r.quiet) append_bare(out, 'q');
  out.append("\r\n").append(value).append("\r\n");
  return true;
}

bool append_classic_delete(const Request& r, std::string& out) {
  out.append("md");
  bool base64 = false;
  if (r.keys.empty() || !append_key(r, r.keys[0], out, base64)) return false;
  if (base64) append_bare(out, 'b');
  if (r.quiet) append_bare(out, 'q');
  out.append("\r\n");
  return true;
}

bool append_classic_arithmetic(const Request& r, std::string& out) {
  out.append("ma");
  bool base64 = false;
  if (r.keys.empty() || !append_key(r, r.keys[0], out, base64)) return false;
  if (base64) append_bare(out, 'b');
  // The classic reply is the new value; nobody reads it under noreply.
  if (!r.noreply) append_bare(out, 'v');
  if (r.mode == Mode::decr) out.append(" MD");
  append_meta_flag(out, 'D', r.delta);
  if (r.quiet) append_bare(out, 'q');
  out.append("\r\n");
  return true;
}

// A meta request, from the model's fields: see the header for the order.
bool append_meta(const Request& r, std::string_view value, std::string& out) {
  if (r.unmodeled_flags) return false;
  const bool is_set = r.command == Command::meta_set;
  const bool is_arithmetic = r.command == Command::meta_arithmetic;
  switch (r.command) {
    case Command::meta_get:
      out.append("mg");
      break;
    case Command::meta_set:
      out.append("ms");
      break;
    case Command::meta_delete:
      out.append("md");
      break;
    default:
      out.append("ma");
      break;
  }
  bool base64 = false;
  if (r.keys.empty() || !append_key(r, r.keys[0], out, base64)) return false;
  if (is_set) {
    out.push_back(' ');
    append_decimal(out, value.size());
  }
  if (base64) append_bare(out, 'b');
  for (char c : std::string_view("cfhklstuvI")) {
    if (r.meta_flags.has(c)) append_bare(out, c);
  }
  if (!r.opaque.empty() || r.meta_flags.has('O')) out.append(" O").append(r.opaque);
  if (r.has_exptime) append_meta_flag(out, 'T', r.exptime_value);
  if (r.has_vivify) append_meta_flag(out, 'N', r.vivify);
  if (r.flags != 0 || r.meta_flags.has('F')) append_meta_flag(out, 'F', r.flags);
  if (r.has_cas) append_meta_flag(out, 'C', r.cas);
  if (r.initial != 0 || r.meta_flags.has('J')) append_meta_flag(out, 'J', r.initial);
  if (r.delta != 1 || r.meta_flags.has('D')) append_meta_flag(out, 'D', r.delta);
  if (is_set || is_arithmetic) {
    char m = mode_letter(r.mode);
    // An explicit default mode ("MS", "M+") is kept, spelled canonically.
    if (m == 0 && r.meta_flags.has('M')) m = is_set ? 'S' : 'I';
    if (m != 0) out.append(" M").push_back(m);
  }
  if (r.quiet) append_bare(out, 'q');
  out.append("\r\n");
  if (is_set) out.append(value).append("\r\n");
  return true;
}

bool append_meta_debug(const Request& r, std::string& out) {
  out.append("me");
  bool base64 = false;
  if (r.keys.empty() || !append_key(r, r.keys[0], out, base64)) return false;
  if (base64) append_bare(out, 'b');
  out.append("\r\n");
  return true;
}

bool append_request(const Request& r, std::string_view value, std::string& out) {
  switch (r.command) {
    case Command::get:
    case Command::gets:
    case Command::gat:
    case Command::gats:
    case Command::touch:
      for (std::string_view key : r.keys) {
        if (!append_classic_get(r, key, out)) return false;
      }
      return !r.keys.empty();
    case Command::set:
    case Command::add:
    case Command::replace:
    case Command::append:
    case Command::prepend:
    case Command::cas:
      return append_classic_store(r, value, out);
    case Command::delete_:
      return append_classic_delete(r, out);
    case Command::incr:
    case Command::decr:
      return append_classic_arithmetic(r, out);
    case Command::meta_get:
    case Command::meta_set:
    case Command::meta_delete:
    case Command::meta_arithmetic:
      return append_meta(r, value, out);
    case Command::meta_debug:
      return append_meta_debug(r, out);
    case Command::meta_noop:
      out.append("mn\r\n");
      return true;
    case Command::version:
    case Command::verbosity:
    case Command::quit:
    case Command::stats:
    case Command::flush_all:
      return false;
  }
  return false;
}

}  // namespace

std::string_view classic_storage_reply(ReplyStatus status) {
  switch (status) {
    case ReplyStatus::done:
      return "STORED\r\n";
    case ReplyStatus::not_stored:
      return "NOT_STORED\r\n";
    case ReplyStatus::exists:
      return "EXISTS\r\n";
    case ReplyStatus::not_found:
      return "NOT_FOUND\r\n";
    default:
      return {};
  }
}

bool meta_key_is_plain(std::string_view key) {
  for (char c : key) {
    const auto b = static_cast<unsigned char>(c);
    if (b <= 0x20 || b >= 0x7f) return false;
  }
  return true;
}

bool append_meta_request(const Request& r, std::string_view value, std::string& out) {
  const size_t start = out.size();
  if (append_request(r, value, out)) return true;
  out.resize(start);
  return false;
}

}  // namespace memshard::proto
