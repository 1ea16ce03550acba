#include "proxy/protocol/binary_request.h"

#include <algorithm>
#include <charconv>
#include <cstdint>
#include <limits>

#include "proxy/protocol/base64.h"
#include "proxy/protocol/meta_codec.h"
#include "proxy/protocol/numbers.h"

namespace memshard::proto::binary {
namespace {

// memcached's limit on a key token as written: a base64 key of more than
// 186 bytes does not fit in 250 characters (meta_codec.h).
constexpr size_t kMaxBase64KeyBytes = kMaxKeyLength / 4 * 3;

void answer(const Header& h, Status status, uint64_t swallow, Translation& out) {
  out.kind = Translation::Kind::answer;
  append_error(out.reply, h.opcode, h.opaque, status);
  out.swallow = swallow;
}

// memcached's handle_binary_protocol_error: "invalid arguments", then the
// connection closes.
void protocol_error(const Header& h, Translation& out) {
  answer(h, Status::invalid_arguments, 0, out);
  out.close_after = true;
}

int64_t exptime(uint32_t v) {
  constexpr uint32_t max = std::numeric_limits<int32_t>::max();
  return v > max ? max : v;
}

// Starts `out.line` with "<command> <key>", the key base64 with `b` when a
// text line cannot hold it as it is. False when it cannot travel at all.
bool start_line(std::string_view command, std::string_view key, Translation& out, bool& base64) {
  base64 = !meta_key_is_plain(key);
  if (base64 && key.size() > kMaxBase64KeyBytes) return false;
  out.line.append(command).push_back(' ');
  if (base64) {
    base64_encode(key, out.line);
  } else {
    out.line.append(key);
  }
  return true;
}

void text(std::string_view line, Translation& out) {
  out.kind = Translation::Kind::text;
  out.line.assign(line);
}

void translate_get(const Header& h, std::string_view extras, std::string_view key, uint8_t command,
                   Translation& out) {
  if (command == op::getk) out.context.key.assign(key);
  if ((command == op::get || command == op::getk) && meta_key_is_plain(key)) {
    // A classic gets: the outbox joins the gets queued for one server into
    // one multi-get line, as it does a text client's, which costs memcached
    // a fraction of as many single requests. Its reply has the flags and
    // the cas a binary reply needs.
    out.kind = Translation::Kind::text;
    out.line.append("gets ").append(key).append("\r\n");
    return;
  }
  bool base64 = false;
  if (!start_line("mg", key, out, base64)) {
    // No server can be asked for this key, and no set through the proxy
    // can have stored it: a miss (silent for the quiet forms), as a read
    // of an unreachable server's key is. An error here would fail a whole
    // multi-get batch in libmemcached, which gives up on the batch.
    out.line.clear();
    out.kind = Translation::Kind::answer;
    if (command == op::touch) {
      append_error(out.reply, h.opcode, h.opaque, Status::key_not_found);
    } else if (!is_quiet(h.opcode)) {
      const bool with_key = command == op::getk || command == op::gatk;
      append_response_header(out.reply, h.opcode, Status::key_not_found, 0,
                             with_key ? h.key_length : 0, with_key ? h.key_length : uint32_t{9},
                             h.opaque, 0);
      out.reply.append(with_key ? key : std::string_view("Not found"));
    }
    return;
  }
  out.kind = Translation::Kind::text;
  if (base64) out.line.append(" b");
  // A get also asks for the TTL: during a reload's warm-up a hit found on
  // the key's old server is copied to its new one with it (warm_key_route).
  out.line.append(command == op::touch                          ? " f c"
                  : (command == op::get || command == op::getk) ? " v f t c"
                                                                : " v f c");
  if (command == op::touch || command == op::gat || command == op::gatk) {
    append_meta_flag(out.line, 'T',
                     exptime(read_u32(reinterpret_cast<const unsigned char*>(extras.data()))));
  }
  out.line.append("\r\n");
  if (command == op::gatk) out.context.key.assign(key);
}

void translate_store(const Header& h, std::string_view extras, std::string_view key,
                     uint8_t command, const Limits& limits, Translation& out) {
  const uint32_t value_length = h.body_length - h.key_length - h.extras_length;
  const auto* ext = reinterpret_cast<const unsigned char*>(extras.data());
  bool base64 = false;
  if (value_length > limits.item_size_max) {
    // memcached refuses the value unread and, for a set, drops the key's
    // old value so that no stale one outlives the failed write.
    if (command == op::set && start_line("md", key, out, base64)) {
      out.kind = Translation::Kind::text;
      if (base64) out.line.append(" b");
      out.line.append("\r\n");
      out.context.fixed = Status::too_large;
      out.swallow = value_length;
    } else {
      out.line.clear();
      answer(h, Status::too_large, value_length, out);
    }
    return;
  }
  if (!start_line("ms", key, out, base64)) {
    out.line.clear();
    answer(h, Status::invalid_arguments, value_length, out);
    return;
  }
  out.kind = Translation::Kind::text;
  out.value_length = value_length;
  out.line.push_back(' ');
  append_decimal(out.line, value_length);
  if (base64) out.line.append(" b");
  const bool append_mode = command == op::append || command == op::prepend;
  if (!append_mode) {
    if (const uint32_t flags = read_u32(ext); flags != 0) append_meta_flag(out.line, 'F', flags);
    if (const uint32_t t = read_u32(ext + 4); t != 0) append_meta_flag(out.line, 'T', exptime(t));
  }
  if (h.cas != 0) append_meta_flag(out.line, 'C', h.cas);
  switch (command) {
    case op::add:
      if (h.cas == 0) out.line.append(" ME");
      break;
    case op::replace:
      if (h.cas == 0) out.line.append(" MR");
      break;
    case op::append:
      out.line.append(" MA");
      break;
    case op::prepend:
      out.line.append(" MP");
      break;
    default:
      break;
  }
  out.line.append(" c\r\n");
}

void translate_delete(const Header& h, std::string_view key, Translation& out) {
  bool base64 = false;
  if (!start_line("md", key, out, base64)) {
    out.line.clear();
    answer(h, Status::invalid_arguments, 0, out);
    return;
  }
  out.kind = Translation::Kind::text;
  if (base64) out.line.append(" b");
  if (h.cas != 0) append_meta_flag(out.line, 'C', h.cas);
  out.line.append("\r\n");
}

void translate_arithmetic(const Header& h, std::string_view extras, std::string_view key,
                          uint8_t command, Translation& out) {
  bool base64 = false;
  if (!start_line("ma", key, out, base64)) {
    out.line.clear();
    answer(h, Status::invalid_arguments, 0, out);
    return;
  }
  const auto* ext = reinterpret_cast<const unsigned char*>(extras.data());
  out.kind = Translation::Kind::text;
  if (base64) out.line.append(" b");
  out.line.append(" v c");
  append_meta_flag(out.line, 'D', read_u64(ext));
  // 0xffffffff: "do not create" (proto_bin.c's complete_incr_bin).
  if (const uint32_t t = read_u32(ext + 16); t != 0xffffffff) {
    append_meta_flag(out.line, 'N', exptime(t));
    append_meta_flag(out.line, 'J', read_u64(ext + 8));
  }
  if (command == op::decrement) out.line.append(" MD");
  if (h.cas != 0) append_meta_flag(out.line, 'C', h.cas);
  out.line.append("\r\n");
}

// The groups of binary STAT that memcached 1.6.18 answers (proto_bin.c:
// reset..., settings..., detail on/off/dump, then items, slabs, sizes,
// sizes_enable, sizes_disable) and memshard's own (servers, routes, hotkeys).
bool stats_group_known(std::string_view key) {
  // The key goes into a text line: a prefix match must not carry a space,
  // a control byte or a line end in with it (those would be other words,
  // or another line).
  const bool one_word = std::none_of(key.begin(), key.end(), [](char c) {
    return static_cast<unsigned char>(c) <= ' ' || c == '\x7f';
  });
  for (std::string_view prefix : {"reset", "settings"}) {
    if (key.starts_with(prefix) && one_word) return true;
  }
  for (std::string_view exact :
       {"detail on", "detail off", "detail dump", "items", "slabs", "sizes", "sizes_enable",
        "sizes_disable", "servers", "routes", "hotkeys"}) {
    if (key == exact) return true;
  }
  return false;
}

}  // namespace

void Translation::clear() {
  kind = Kind::close;
  line.clear();
  value_length = 0;
  reply.clear();
  swallow = 0;
  close_after = false;
  context.opcode = 0;
  context.opaque = 0;
  context.key.clear();
  context.fixed = Status::ok;
}

// The checks and their order are dispatch_bin_command's (memcached 1.6.18).
void translate(const Header& h, std::string_view extras, std::string_view key, const Limits& limits,
               Translation& out) {
  out.clear();
  if (h.magic != kRequestMagic) return;  // Kind::close
  out.context.opcode = h.opcode;
  out.context.opaque = h.opaque;
  const uint32_t keylen = h.key_length;
  const uint32_t extlen = h.extras_length;
  const uint32_t bodylen = h.body_length;
  if (keylen > bodylen || keylen + extlen > bodylen) {
    answer(h, Status::unknown_command, 0, out);
    out.close_after = true;
    return;
  }
  if (keylen > kMaxKeyLength) {
    protocol_error(h, out);
    return;
  }
  const bool bare = extlen == 0 && keylen == 0 && bodylen == 0;
  const uint8_t command = loud_opcode(h.opcode);
  switch (command) {
    case op::version:
      bare ? text("version\r\n", out) : protocol_error(h, out);
      return;
    case op::noop:
      bare ? text("mn\r\n", out) : protocol_error(h, out);
      return;
    case op::quit:
      bare ? text("quit\r\n", out) : protocol_error(h, out);
      return;
    case op::flush:
      if (keylen != 0 || bodylen != extlen || (extlen != 0 && extlen != 4)) {
        protocol_error(h, out);
        return;
      }
      text("flush_all", out);
      if (extlen == 4) {
        if (const uint32_t t = read_u32(reinterpret_cast<const unsigned char*>(extras.data()));
            t != 0) {
          out.line.push_back(' ');
          append_decimal(out.line, exptime(t));
        }
      }
      out.line.append("\r\n");
      return;
    case op::set:
    case op::add:
    case op::replace:
      if (extlen == 8 && keylen != 0 && bodylen >= keylen + 8) {
        translate_store(h, extras, key, command, limits, out);
      } else {
        protocol_error(h, out);
      }
      return;
    case op::append:
    case op::prepend:
      if (keylen > 0 && extlen == 0) {
        translate_store(h, extras, key, command, limits, out);
      } else {
        protocol_error(h, out);
      }
      return;
    case op::get:
    case op::getk:
      if (extlen == 0 && bodylen == keylen && keylen > 0) {
        translate_get(h, extras, key, command, out);
      } else {
        protocol_error(h, out);
      }
      return;
    case op::touch:
    case op::gat:
    case op::gatk:
      // memcached does not check the body length here: bytes past the key
      // are read as the next frame, and so they are here.
      if (extlen == 4 && keylen != 0) {
        translate_get(h, extras, key, command, out);
      } else {
        protocol_error(h, out);
      }
      return;
    case op::delete_:
      if (keylen > 0 && extlen == 0 && bodylen == keylen) {
        translate_delete(h, key, out);
      } else {
        protocol_error(h, out);
      }
      return;
    case op::increment:
    case op::decrement:
      if (keylen > 0 && extlen == 20 && bodylen == keylen + extlen) {
        translate_arithmetic(h, extras, key, command, out);
      } else {
        protocol_error(h, out);
      }
      return;
    case op::stat:
      if (extlen != 0) {
        protocol_error(h, out);
      } else if (keylen == 0) {
        // As for touch, a body past the key is read as the next frame.
        text("stats\r\n", out);
      } else if (stats_group_known(key)) {
        // A group memcached or memshard knows: answered as memshard's
        // text `stats <group>` is (its own groups' STAT lines; ERROR, an
        // unknown command here, for a server's groups it does not proxy).
        text("stats", out);
        out.line.push_back(' ');
        out.line.append(key).append("\r\n");
      } else {
        // A group nobody knows: "not found", as memcached answers it.
        answer(h, Status::key_not_found, 0, out);
      }
      return;
    case op::sasl_list_mechs:
      // A memcached without SASL (no -S) answers the SASL opcodes as
      // unknown commands.
      bare ? answer(h, Status::unknown_command, 0, out) : protocol_error(h, out);
      return;
    case op::sasl_auth:
    case op::sasl_step:
      if (extlen == 0 && keylen != 0) {
        answer(h, Status::unknown_command, bodylen - keylen, out);
      } else {
        protocol_error(h, out);
      }
      return;
    default:
      // verbosity has no binary handler in memcached 1.6.18 either. memcached
      // swallows body_length bytes *after* the extras and key it has
      // already read, eating into the next frame when they are not empty;
      // the proxy swallows the rest of this frame only.
      answer(h, Status::unknown_command, bodylen - keylen - extlen, out);
      return;
  }
}

}  // namespace memshard::proto::binary
