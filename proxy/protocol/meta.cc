#include "proxy/protocol/meta.h"

#include <cstdint>
#include <limits>
#include <span>

#include "proxy/protocol/base64.h"
#include "proxy/protocol/numbers.h"
#include "proxy/protocol/replies.h"

namespace memshard::proto {
namespace {

using Flags = std::span<const std::string_view>;

// memcached refuses meta requests with more than this many `ntokens`
// (MFLAG_MAX_OPT_LENGTH), i.e. a command, a key and 18 more tokens at most.
constexpr size_t kMaxMetaNtokens = 20;
// Longest opaque (`O`) token, the 'O' included (MFLAG_MAX_OPAQUE_LENGTH).
constexpr size_t kMaxOpaqueLength = 32;

// The error memcached's flag pre-parse (_meta_flag_preparse) reports for
// `flags`, or an empty view when it accepts them. A flag is known by its
// first byte. A repeated flag (or a byte >= 127) and an unknown flag stop
// the scan at once; a bad argument is remembered and the scan goes on, so
// the last bad argument names the error ('F' keeps the previous name).
std::string_view preparse_error(Flags flags, bool key_decodes) {
  bool seen[127] = {};
  bool failed = false;
  std::string_view message = reply::kBadFormat;
  auto bad = [&](std::string_view m) {
    failed = true;
    message = m;
  };
  for (std::string_view flag : flags) {
    const auto c = static_cast<unsigned char>(flag[0]);
    if (c >= 127 || seen[c]) return reply::kDuplicateFlag;
    seen[c] = true;
    const std::string_view arg = flag.substr(1);
    int32_t i32 = 0;
    uint32_t u32 = 0;
    uint64_t u64 = 0;
    switch (c) {
      case 'b':
        if (!key_decodes) bad(reply::kBadKeyEncoding);
        break;
      case 'N':
      case 'T':
      case 'R':
        if (!parse_mc_int32(arg, i32)) bad(reply::kBadToken);
        break;
      case 'F':
        if (!parse_mc_uint32(arg, u32)) failed = true;
        break;
      case 'C':
        if (!parse_mc_uint64(arg, u64)) bad(reply::kBadToken);
        break;
      case 'M':
        if (flag.size() != 2) bad(reply::kBadModeLength);
        break;
      case 'J':
        if (!parse_mc_uint64(arg, u64)) bad(reply::kBadInitial);
        break;
      case 'D':
        if (!parse_mc_uint64(arg, u64)) bad(reply::kBadMetaDelta);
        break;
      case 'l':
      case 'O':
      case 'P':
      case 'L':
      case 'k':
      case 's':
      case 't':
      case 'c':
      case 'f':
      case 'v':
      case 'h':
      case 'u':
      case 'q':
      case 'I':
        break;
      default:
        return reply::kInvalidFlag;
    }
  }
  return failed ? message : std::string_view{};
}

// The checks ms makes after the pre-parse and before allocating the item:
// an unknown M mode wins over a too long opaque.
std::string_view ms_checks_before_alloc(Flags flags) {
  bool opaque_too_long = false;
  char mode = 0;
  for (std::string_view flag : flags) {
    if (flag[0] == 'O' && flag.size() > kMaxOpaqueLength) opaque_too_long = true;
    if (flag[0] == 'M') mode = flag[1];
  }
  if (mode != 0 && std::string_view("EAPRS").find(mode) == std::string_view::npos) {
    return reply::kBadMsMode;
  }
  return opaque_too_long ? reply::kOpaqueTooLong : std::string_view{};
}

// The `M` letters memcached 1.6.18 takes (uppercase only: "Me" and "Mi"
// are refused).
Mode meta_mode(Command command, char letter) {
  if (command == Command::meta_set) {
    switch (letter) {
      case 'S':
        return Mode::set;
      case 'E':
        return Mode::add;
      case 'R':
        return Mode::replace;
      case 'A':
        return Mode::append;
      case 'P':
        return Mode::prepend;
      default:
        return Mode::invalid;
    }
  }
  if (command == Command::meta_arithmetic) {
    if (letter == 'I' || letter == '+') return Mode::incr;
    if (letter == 'D' || letter == '-') return Mode::decr;
  }
  return Mode::invalid;  // mg and md have no mode
}

// The protocol-neutral fields of mg ms md ma. Whatever the model cannot
// hold marks the request unmodeled rather than guessing: the server is
// the judge of meta flags, and only the line carries them faithfully.
void model_meta_flags(Flags flags, Request& out) {
  if (out.command == Command::meta_set) out.mode = Mode::set;
  if (out.command == Command::meta_arithmetic) out.mode = Mode::incr;
  for (std::string_view flag : flags) {
    const char c = flag[0];
    if (out.meta_flags.has(c)) out.unmodeled_flags = true;
    out.meta_flags.add(c);
    const std::string_view arg = flag.substr(1);
    bool ok = true;
    int32_t i32 = 0;
    switch (c) {
      case 'T':
        ok = parse_mc_int32(arg, i32);
        if (ok) {
          out.exptime_value = i32;
          out.has_exptime = true;
        }
        break;
      case 'N':
        ok = parse_mc_int32(arg, i32);
        if (ok) {
          out.vivify = i32;
          out.has_vivify = true;
        }
        break;
      case 'F':
        ok = parse_mc_uint32(arg, out.flags);
        break;
      case 'C':
        ok = parse_mc_uint64(arg, out.cas);
        out.has_cas = ok;
        break;
      case 'J':
        ok = parse_mc_uint64(arg, out.initial);
        break;
      case 'D':
        ok = parse_mc_uint64(arg, out.delta);
        break;
      case 'M': {
        const Mode mode = flag.size() == 2 ? meta_mode(out.command, flag[1]) : Mode::invalid;
        if (out.mode != Mode::none) out.mode = mode;
        ok = mode != Mode::invalid;
        break;
      }
      case 'O':
        out.opaque = arg;
        break;
      case 'P':
      case 'L':
        break;
      default:
        ok = kModeledMetaBare.find(c) != std::string_view::npos;
        break;
    }
    if (!ok) out.unmodeled_flags = true;
  }
}

// me <key> [b]: the debug command reads no flags; only a third token that
// is exactly "b" makes the key base64.
void parse_meta_debug(const LineTokens& t, Request& out) {
  if (t.ntokens() < 3 || t.token[1].size() > kMaxKeyLength) {
    return reply::answer(out, reply::kBadFormat);
  }
  std::string_view key = t.token[1];
  if (t.ntokens() >= 4 && t.token[2] == "b") {
    if (!memcached_base64_decode(key, out.decoded_key)) {
      return reply::answer(out, reply::kBadFormat);
    }
    key = out.decoded_key;
    out.meta_flags.add('b');
  }
  out.action = Action::forward;
  out.keys.push_back(key);
}

}  // namespace

void parse_meta_request(const LineTokens& t, const Limits& limits, Request& out) {
  if (out.command == Command::meta_debug) return parse_meta_debug(t, out);
  // The order of the checks is memcached's: it decides which error wins.
  const size_t ntokens = t.ntokens();
  if (ntokens < 3) return reply::answer(out, reply::kError);
  const std::string_view key = t.token[1];
  if (key.size() > kMaxKeyLength) return reply::answer(out, reply::kBadFormat);
  const bool is_set = out.command == Command::meta_set;
  if (is_set && ntokens == 3) return reply::answer(out, reply::kBadFormat);
  if (ntokens > kMaxMetaNtokens) {
    return reply::answer(
        out, out.command == Command::meta_get ? reply::kMgFlagsTooLong : reply::kFlagsTooLong);
  }
  // ms <key> <datalen> <flags>*: a bad length leaves the data unread, so
  // memcached then reads the data as a command line; so does the proxy.
  int32_t value_length = 0;
  if (is_set && (!parse_mc_int32(t.token[2], value_length) || value_length < 0 ||
                 value_length > std::numeric_limits<int32_t>::max() - 2)) {
    return reply::answer(out, reply::kBadFormat);
  }
  const uint64_t data_bytes = is_set ? static_cast<uint64_t>(value_length) + 2 : 0;

  const size_t first_flag = is_set ? 3 : 2;
  const Flags flags(t.token.data() + first_flag, t.count - first_flag);
  bool binary_key = false;
  for (std::string_view flag : flags) {
    if (flag[0] == 'q') out.quiet = true;
    if (flag[0] == 'b') binary_key = true;
  }
  model_meta_flags(flags, out);
  std::string_view routed_key = key;
  if (binary_key) {
    if (!memcached_base64_decode(key, out.decoded_key)) {
      // Every server would refuse the request: answer as it would. md and
      // ma name every pre-parse failure alike; ms swallows its data.
      std::string_view error = preparse_error(flags, false);
      if (out.command == Command::meta_delete || out.command == Command::meta_arithmetic) {
        error = reply::kInvalidOrDuplicateFlag;
      }
      return reply::answer(out, error, data_bytes);
    }
    routed_key = out.decoded_key;
  }
  if (is_set && static_cast<uint64_t>(value_length) > limits.item_size_max) {
    // Flag errors come before memcached tries to allocate the item.
    std::string_view error = preparse_error(flags, true);
    if (error.empty()) error = ms_checks_before_alloc(flags);
    if (error.empty()) {
      // memcached unlinks the old item of an ms refused as too large, in
      // every mode.
      error = reply::kTooLarge;
      out.invalidate_key = true;
      out.keys.push_back(routed_key);
      out.raw_key = key;
      out.key_base64 = binary_key;
    }
    return reply::answer(out, error, data_bytes);
  }
  out.action = Action::forward;
  out.keys.push_back(routed_key);
  out.data_bytes = data_bytes;
}

}  // namespace memshard::proto
