#include "proxy/protocol/binary_reply.h"

#include <charconv>
#include <cstdint>

namespace memshard::proto::binary {
namespace {

bool starts_with(std::string_view s, std::string_view prefix) {
  return s.substr(0, prefix.size()) == prefix;
}

template <typename Int>
Int parse_number(std::string_view s) {
  Int v = 0;
  std::from_chars(s.data(), s.data() + s.size(), v);
  return v;
}

// The parts of a meta reply line the binary reply needs.
struct MetaLine {
  std::string_view code;  // VA, HD, EN...
  uint64_t value_length = 0;
  uint32_t flags = 0;
  uint64_t cas = 0;
};

// A classic "VALUE <key> <flags> <bytes> <cas>" line, the reply to the
// gets a binary get becomes, read as the meta VA it means.
MetaLine parse_value(std::string_view line) {
  MetaLine m;
  m.code = "VA";
  std::string_view fields[5];
  size_t n = 0;
  for (size_t i = 0; i < line.size() && n < 5;) {
    size_t end = line.find(' ', i);
    if (end == std::string_view::npos) end = line.size();
    if (end > i) fields[n++] = line.substr(i, end - i);
    i = end + 1;
  }
  m.flags = parse_number<uint32_t>(fields[2]);
  m.value_length = parse_number<uint64_t>(fields[3]);
  m.cas = parse_number<uint64_t>(fields[4]);
  return m;
}

MetaLine parse_meta(std::string_view line) {
  if (starts_with(line, "VALUE ")) return parse_value(line);
  MetaLine m;
  size_t i = 0;
  bool first = true;
  while (i < line.size()) {
    size_t end = line.find(' ', i);
    if (end == std::string_view::npos) end = line.size();
    const std::string_view token = line.substr(i, end - i);
    i = end + 1;
    if (token.empty()) continue;
    if (first) {
      m.code = token;
      first = false;
    } else if (m.code == "VA" && m.value_length == 0 && token[0] >= '0' && token[0] <= '9') {
      m.value_length = parse_number<uint64_t>(token);
    } else if (token[0] == 'f') {
      m.flags = parse_number<uint32_t>(token.substr(1));
    } else if (token[0] == 'c') {
      m.cas = parse_number<uint64_t>(token.substr(1));
    }
  }
  return m;
}

void ok(const ReplyContext& c, uint64_t cas, std::string& out) {
  append_response_header(out, c.opcode, Status::ok, 0, 0, 0, c.opaque, cas);
}

bool is_get_family(uint8_t command) {
  return command == op::get || command == op::getk || command == op::gat || command == op::gatk ||
         command == op::touch;
}

bool returns_key(uint8_t command) {
  return command == op::getk || command == op::gatk;
}

void hit(const ReplyContext& c, uint8_t command, const MetaLine& m, std::string_view value,
         std::string& out) {
  const bool with_key = returns_key(command);
  const std::string_view key = with_key ? std::string_view(c.key) : std::string_view();
  if (command == op::touch) value = {};
  append_response_header(out, c.opcode, Status::ok, 4, static_cast<uint16_t>(key.size()),
                         static_cast<uint32_t>(4 + key.size() + value.size()), c.opaque, m.cas);
  append_u32(out, m.flags);
  out.append(key);
  out.append(value);
}

void miss(const ReplyContext& c, uint8_t command, std::string& out) {
  if (is_quiet(c.opcode)) return;
  if (returns_key(command)) {
    // proto_bin.c's write_bin_miss_response: the key, no message.
    append_response_header(out, c.opcode, Status::key_not_found, 0,
                           static_cast<uint16_t>(c.key.size()), static_cast<uint32_t>(c.key.size()),
                           c.opaque, 0);
    out.append(c.key);
    return;
  }
  append_error(out, c.opcode, c.opaque, Status::key_not_found);
}

void stats(const ReplyContext& c, std::string_view text, std::string& out) {
  // A group memshard does not proxy (its text `stats <group>` is ERROR).
  if (starts_with(text, "ERROR")) {
    append_error(out, c.opcode, c.opaque, Status::unknown_command);
    return;
  }
  while (!text.empty()) {
    const size_t eol = text.find("\r\n");
    const std::string_view line = text.substr(0, eol);
    text = eol == std::string_view::npos ? std::string_view() : text.substr(eol + 2);
    if (!starts_with(line, "STAT ")) break;  // END
    const std::string_view rest = line.substr(5);
    const size_t space = rest.find(' ');
    const std::string_view name = rest.substr(0, space);
    const std::string_view value =
        space == std::string_view::npos ? std::string_view() : rest.substr(space + 1);
    append_response_header(out, c.opcode, Status::ok, 0, static_cast<uint16_t>(name.size()),
                           static_cast<uint32_t>(name.size() + value.size()), c.opaque, 0);
    out.append(name).append(value);
  }
  ok(c, 0, out);  // the empty frame that ends the list
}

void error(const ReplyContext& c, std::string_view line, std::string& out) {
  if (starts_with(line, "SERVER_ERROR ")) {
    const std::string_view message = line.substr(13);
    if (starts_with(message, "object too large")) {
      append_error(out, c.opcode, c.opaque, Status::too_large);
    } else if (starts_with(message, "out of memory") || starts_with(message, "Out of memory")) {
      append_error(out, c.opcode, c.opaque, Status::out_of_memory);
    } else {
      append_response_header(out, c.opcode, Status::temporary_failure, 0, 0,
                             static_cast<uint32_t>(message.size()), c.opaque, 0);
      out.append(message);
    }
  } else if (line == "CLIENT_ERROR cannot increment or decrement non-numeric value") {
    append_error(out, c.opcode, c.opaque, Status::non_numeric);
  } else if (line == "CLIENT_ERROR flush_all not allowed") {
    append_error(out, c.opcode, c.opaque, Status::auth_error);
  } else if (starts_with(line, "CLIENT_ERROR")) {
    append_error(out, c.opcode, c.opaque, Status::invalid_arguments);
  } else {
    append_error(out, c.opcode, c.opaque, Status::unknown_command);
  }
}

}  // namespace

void encode_reply(const ReplyContext& c, std::string_view text, std::string& out) {
  const uint8_t command = loud_opcode(c.opcode);
  const bool quiet = is_quiet(c.opcode);
  if (c.fixed != Status::ok) {
    append_error(out, c.opcode, c.opaque, c.fixed);
    return;
  }
  if (command == op::quit) {
    if (!quiet) ok(c, 0, out);
    return;
  }
  if (command == op::stat) {
    stats(c, text, out);
    return;
  }
  const size_t eol = text.find("\r\n");
  const std::string_view line = text.substr(0, eol);
  const std::string_view data =
      eol == std::string_view::npos ? std::string_view() : text.substr(eol + 2);
  if (command == op::version) {
    if (starts_with(line, "VERSION ")) {
      const std::string_view v = line.substr(8);
      append_response_header(out, c.opcode, Status::ok, 0, 0, static_cast<uint32_t>(v.size()),
                             c.opaque, 0);
      out.append(v);
      return;
    }
  }
  const MetaLine m = parse_meta(line);
  if (m.code == "VA") {
    const std::string_view value = data.substr(0, m.value_length);
    if (command == op::increment || command == op::decrement) {
      if (quiet) return;
      append_response_header(out, c.opcode, Status::ok, 0, 0, 8, c.opaque, m.cas);
      append_u64(out, parse_number<uint64_t>(value));
      return;
    }
    hit(c, command, m, value, out);
    return;
  }
  if (m.code == "HD") {
    if (is_get_family(command)) {
      hit(c, command, m, {}, out);  // touch: flags and cas, no value
    } else if (!quiet) {
      ok(c, command == op::delete_ ? 0 : m.cas, out);
    }
    return;
  }
  if (m.code == "OK" || m.code == "MN") {
    if (!quiet) ok(c, 0, out);
    return;
  }
  if (m.code == "EN" || m.code == "END") {  // END: a gets that missed
    miss(c, command, out);
    return;
  }
  if (m.code == "NF") {
    append_error(out, c.opcode, c.opaque, Status::key_not_found);
    return;
  }
  if (m.code == "EX") {
    append_error(out, c.opcode, c.opaque, Status::key_exists);
    return;
  }
  if (m.code == "NS") {
    // complete_update_bin: a refused add means the key exists, a refused
    // replace that it does not.
    const Status s = command == op::add       ? Status::key_exists
                     : command == op::replace ? Status::key_not_found
                                              : Status::not_stored;
    append_error(out, c.opcode, c.opaque, s);
    return;
  }
  error(c, line, out);
}

}  // namespace memshard::proto::binary
