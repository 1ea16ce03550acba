// libFuzzer target: any bytes as a binary-protocol frame (header, extras,
// key) must translate without crashing into what the header asks for, and
// any bytes as a text reply must encode into well-formed binary frames.
//
// Properties checked (each must hold for every input; a violation traps):
//  - bad magic closes; everything else keeps the opcode and opaque;
//  - an answer is exactly one error frame with memcached's text;
//  - a text translation is one line ending in "\r\n" with no other CR or
//    LF (no request can smuggle a second command to a server), which the
//    proxy's own request parser reads back as the command the opcode means,
//    with the frame's key, flags, exptime, cas, delta and initial value;
//  - what is swallowed and what is sent as the value never exceed the body;
//  - encode_reply, for the translation's context and for a context of every
//    opcode, writes only whole response frames with the request's opcode
//    and opaque, at most one (stats: any number, the last one empty), none
//    for a quiet success, and the fixed status when there is one.
#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <limits>
#include <string>
#include <string_view>

#include "proxy/protocol/binary.h"
#include "proxy/protocol/binary_reply.h"
#include "proxy/protocol/binary_request.h"
#include "proxy/protocol/request_parser.h"

namespace {

using namespace memshard::proto;
using namespace memshard::proto::binary;

void check(bool ok) {
  if (!ok) __builtin_trap();
}

const unsigned char* bytes(std::string_view s) {
  return reinterpret_cast<const unsigned char*>(s.data());
}

int64_t clamped(uint32_t exptime) {
  return std::min<int64_t>(exptime, std::numeric_limits<int32_t>::max());
}

// The response frames in `out`; traps unless they are whole and well formed.
size_t check_frames(std::string_view out, const ReplyContext& c, bool& last_empty,
                    uint16_t& last_status, std::string_view& last_key) {
  size_t n = 0;
  last_empty = false;
  while (!out.empty()) {
    check(out.size() >= kHeaderSize);
    const unsigned char* b = bytes(out);
    check(b[0] == kResponseMagic);
    check(b[1] == c.opcode);
    const uint16_t key_length = static_cast<uint16_t>(b[2] << 8 | b[3]);
    const uint8_t extras_length = b[4];
    check(b[5] == 0);
    last_status = static_cast<uint16_t>(b[6] << 8 | b[7]);
    const uint32_t body = read_u32(b + 8);
    check(read_u32(b + 12) == c.opaque);
    check(size_t{key_length} + extras_length <= body);
    check(out.size() >= kHeaderSize + size_t{body});
    check(extras_length == 0 || extras_length == 4);
    last_key = out.substr(kHeaderSize + extras_length, key_length);
    if (last_status != 0) {
      // An error carries memcached's text, a getk miss its key, the proxy's
      // own failure its message: never extras.
      check(extras_length == 0);
    }
    last_empty = body == 0;
    out.remove_prefix(kHeaderSize + body);
    ++n;
  }
  return n;
}

void check_reply(const ReplyContext& c, std::string_view text) {
  std::string out;
  encode_reply(c, text, out);
  bool last_empty = false;
  uint16_t status = 0;
  std::string_view key;
  const size_t n = check_frames(out, c, last_empty, status, key);
  const uint8_t loud = loud_opcode(c.opcode);
  if (c.fixed != Status::ok) {
    check(n == 1 && status == static_cast<uint16_t>(c.fixed));
    return;
  }
  if (loud == op::stat) {
    // STAT frames ended by an empty one; or, for a group memshard does not
    // proxy (its text `stats <group>` is ERROR), one unknown command.
    if (text.starts_with("ERROR")) {
      check(n == 1 && status == static_cast<uint16_t>(Status::unknown_command));
    } else {
      check(n >= 1 && last_empty && status == 0);
    }
    return;
  }
  check(n <= 1);
  if (n == 1 && key.size() > 0) {
    // Only getk and gatk replies carry a key, and it is the client's.
    check(loud == op::getk || loud == op::gatk);
    check(key == c.key);
  }
  if (is_quiet(c.opcode) && n == 1 && status == 0) {
    // A quiet opcode's success is silent, except a get's hit. (Only for
    // the successes a server can send it: a VA answers no ms or md.)
    const bool get_family =
        loud == op::get || loud == op::getk || loud == op::gat || loud == op::gatk;
    const bool arithmetic = loud == op::increment || loud == op::decrement;
    const bool plausible = text.starts_with("HD") || text.starts_with("OK") ||
                           text.starts_with("MN") || (arithmetic && text.starts_with("VA"));
    check(get_family || !plausible);
  }
  if (loud == op::quit) check(n == (is_quiet(c.opcode) ? 0u : 1u) && status == 0);
}

// What the translated line of opcode `command` must parse back as.
void check_line(const Header& h, uint8_t command, std::string_view extras, std::string_view key,
                const Limits& limits, const Translation& t) {
  check(t.line.size() >= 2 && t.line.ends_with("\r\n"));
  const std::string_view line = std::string_view(t.line).substr(0, t.line.size() - 2);
  check(line.find('\n') == std::string_view::npos && line.find('\r') == std::string_view::npos);
  check(line.find('\0') == std::string_view::npos);
  static Request r;  // reused, as a connection does
  parse_request_line(line, limits, r);
  const auto* ext = bytes(extras);
  const bool keyed = command != op::noop && command != op::version && command != op::quit &&
                     command != op::flush && command != op::stat;
  // A get with a plain key travels as a classic gets (binary_request.h).
  const bool classic_gets =
      (command == op::get || command == op::getk) && t.line.starts_with("gets ");
  if (classic_gets) {
    check(r.command == Command::gets && r.action == Action::multi_get);
    check(r.keys.size() == 1 && r.keys[0] == key);
    check(line.size() == 5 + key.size());
    check((command == op::getk) == !t.context.key.empty());
    check(command != op::getk || t.context.key == key);
    check(t.value_length == 0 && t.swallow == 0);
    return;
  }
  if (keyed) {
    check(r.action == Action::forward);
    check(!r.unmodeled_flags);
    check(r.keys.size() == 1);
    if (t.context.fixed == Status::too_large) {
      // A set over item_size_max: the delete of the key's old value.
      check(command == op::set && r.command == Command::meta_delete);
      check(r.keys[0] == key);
      check(t.swallow == h.body_length - h.key_length - h.extras_length);
      check(t.value_length == 0);
      return;
    }
    check(r.keys[0] == key);
    check(t.context.fixed == Status::ok);
  }
  switch (command) {
    case op::get:
    case op::getk:
    case op::gat:
    case op::gatk:
    case op::touch: {
      check(r.command == Command::meta_get);
      check(r.meta_flags.has('f') && r.meta_flags.has('c'));
      check(r.meta_flags.has('v') == (command != op::touch));
      const bool with_t = command == op::gat || command == op::gatk || command == op::touch;
      check(r.has_exptime == with_t);
      if (with_t) check(r.exptime_value == clamped(read_u32(ext)));
      const bool keeps_key = command == op::getk || command == op::gatk;
      check(keeps_key ? t.context.key == key : t.context.key.empty());
      check(t.value_length == 0 && t.swallow == 0);
      break;
    }
    case op::set:
    case op::add:
    case op::replace:
    case op::append:
    case op::prepend: {
      check(r.command == Command::meta_set);
      const uint32_t value_length = h.body_length - h.key_length - h.extras_length;
      check(t.value_length == value_length && t.swallow == 0);
      check(value_length <= limits.item_size_max);
      check(r.data_bytes == uint64_t{value_length} + 2);
      check(r.has_cas == (h.cas != 0));
      if (h.cas != 0) check(r.cas == h.cas);
      const Mode want = command == op::append    ? Mode::append
                        : command == op::prepend ? Mode::prepend
                        : h.cas != 0             ? Mode::set
                        : command == op::add     ? Mode::add
                        : command == op::replace ? Mode::replace
                                                 : Mode::set;
      check(r.mode == want);
      if (command == op::append || command == op::prepend) {
        check(r.flags == 0 && !r.has_exptime);
      } else {
        check(r.flags == read_u32(ext));
        const uint32_t exptime = read_u32(ext + 4);
        check(r.has_exptime == (exptime != 0));
        if (exptime != 0) check(r.exptime_value == clamped(exptime));
      }
      break;
    }
    case op::delete_:
      check(r.command == Command::meta_delete);
      check(r.has_cas == (h.cas != 0) && (h.cas == 0 || r.cas == h.cas));
      break;
    case op::increment:
    case op::decrement: {
      check(r.command == Command::meta_arithmetic);
      check(r.mode == (command == op::increment ? Mode::incr : Mode::decr));
      check(r.meta_flags.has('v'));
      check(r.delta == read_u64(ext));
      const uint32_t exptime = read_u32(ext + 16);
      check(r.has_vivify == (exptime != 0xffffffff));
      if (exptime != 0xffffffff) {
        check(r.vivify == clamped(exptime));
        check(r.initial == read_u64(ext + 8));
      }
      check(r.has_cas == (h.cas != 0) && (h.cas == 0 || r.cas == h.cas));
      break;
    }
    case op::flush:
      check(r.command == Command::flush_all && r.action == Action::broadcast);
      if (h.extras_length == 4 && read_u32(ext) != 0) {
        check(r.has_exptime && r.exptime_value == clamped(read_u32(ext)));
      } else {
        check(!r.has_exptime);
      }
      break;
    case op::noop:
      check(r.command == Command::meta_noop && r.action == Action::local);
      break;
    case op::version:
      check(r.command == Command::version && r.action == Action::local);
      break;
    case op::quit:
      check(r.command == Command::quit && r.action == Action::local);
      break;
    case op::stat:
      // A group (the key) travels as text `stats <group>`, in one line.
      check(r.command == Command::stats && r.action == Action::local);
      if (h.key_length == 0) {
        check(r.args.empty() && line == "stats");
      } else {
        check(!r.args.empty() && line.substr(0, 6) == "stats " && line.substr(6) == key);
      }
      break;
    default:
      check(false);  // no other opcode goes to a server
  }
}

constexpr uint8_t kOpcodes[] = {
    op::get,       op::set,      op::add,      op::replace,    op::delete_,    op::increment,
    op::decrement, op::quit,     op::flush,    op::getq,       op::noop,       op::version,
    op::getk,      op::getkq,    op::append,   op::prepend,    op::stat,       op::setq,
    op::addq,      op::replaceq, op::deleteq,  op::incrementq, op::decrementq, op::quitq,
    op::flushq,    op::appendq,  op::prependq, op::verbosity,  op::touch,      op::gat,
    op::gatq,      op::gatk,     op::gatkq};

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string_view input(reinterpret_cast<const char*>(data), size);
  if (size < kHeaderSize) return 0;
  const Header h = decode_header(data);
  Limits limits;
  // A small limit now and then, so that "too large" is reached.
  limits.item_size_max = (h.data_type & 1) ? 64 : 1024 * 1024;
  // The extras and key as the connection would hand them over: all of
  // them (it waits for them). Missing bytes are zeros.
  std::string frame(input.substr(kHeaderSize));
  const size_t want = size_t{h.extras_length} + h.key_length;
  if (frame.size() < want) frame.resize(want, '\0');
  const std::string_view extras = std::string_view(frame).substr(0, h.extras_length);
  const std::string_view key = std::string_view(frame).substr(h.extras_length, h.key_length);
  const std::string_view rest = std::string_view(frame).substr(want);

  static Translation t;  // reused, as a connection does
  translate(h, extras, key, limits, t);
  const uint8_t command = loud_opcode(h.opcode);
  const bool lengths_fit = uint64_t{h.key_length} + h.extras_length <= uint64_t{h.body_length};
  if (h.magic != kRequestMagic) {
    check(t.kind == Translation::Kind::close);
    check(t.reply.empty() && t.line.empty());
    return 0;
  }
  check(t.kind != Translation::Kind::close);
  check(t.context.opcode == h.opcode && t.context.opaque == h.opaque);
  // Nothing past this frame's body is ever swallowed or read as its value.
  const uint64_t after_key = lengths_fit ? h.body_length - h.key_length - h.extras_length : 0;
  check(t.swallow + t.value_length <= after_key);
  if (t.kind == Translation::Kind::answer) {
    check(t.line.empty());
    // A read of a key no meta command can carry is a miss: silent when
    // quiet, else "not found" (with the key for getk and gatk).
    const bool read = command == op::get || command == op::getk || command == op::gat ||
                      command == op::gatk || command == op::touch;
    if (read && t.reply.empty()) {
      check(is_quiet(h.opcode) && !t.close_after);
      return 0;
    }
    bool last_empty = false;
    uint16_t status = 0;
    std::string_view k;
    check(check_frames(t.reply, t.context, last_empty, status, k) == 1);
    check(status != 0);
    const std::string_view body = std::string_view(t.reply).substr(kHeaderSize);
    const bool keyed_miss = read && status == static_cast<uint16_t>(Status::key_not_found) &&
                            (command == op::getk || command == op::gatk) && body == key;
    check(keyed_miss || body == status_text(static_cast<Status>(status)));
    if (!lengths_fit || h.key_length > kMaxKeyLength) check(t.close_after);
  } else {
    check(lengths_fit && h.key_length <= kMaxKeyLength);
    check(t.reply.empty() && !t.close_after);
    check_line(h, command, extras, key, limits, t);
  }

  // Replies: the rest of the input as the text the proxy's path produced,
  // for this request's context and for a context of every opcode.
  check_reply(t.context, rest);
  ReplyContext c;
  c.opaque = h.opaque;
  c.key.assign(key);
  for (uint8_t o : kOpcodes) {
    c.opcode = o;
    c.fixed = Status::ok;
    check_reply(c, rest);
  }
  c.opcode = h.opcode;
  c.fixed = Status::too_large;
  check_reply(c, rest);
  return 0;
}
