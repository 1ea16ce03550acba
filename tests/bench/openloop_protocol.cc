#include "openloop_protocol.h"

#include <charconv>
#include <cstring>

namespace memshard::bench {

namespace {

constexpr uint8_t kSet = 0x01, kNoop = 0x0a, kGetK = 0x0c, kGetKQ = 0x0d;

void put_be(std::string& out, uint64_t v, int bytes) {
  for (int i = bytes - 1; i >= 0; --i) out.push_back(static_cast<char>((v >> (8 * i)) & 0xff));
}
uint64_t get_be(std::string_view s, size_t at, int bytes) {
  uint64_t v = 0;
  for (int i = 0; i < bytes; ++i) v = (v << 8) | static_cast<unsigned char>(s[at + static_cast<size_t>(i)]);
  return v;
}
void binary_header(std::string& out, uint8_t opcode, size_t key_len, size_t extras, size_t body) {
  out.push_back(static_cast<char>(0x80));
  out.push_back(static_cast<char>(opcode));
  put_be(out, key_len, 2);
  out.push_back(static_cast<char>(extras));
  out.push_back(0);  // data type
  put_be(out, 0, 2);  // vbucket
  put_be(out, body, 4);
  put_be(out, 0, 4);  // opaque
  put_be(out, 0, 8);  // cas
}

void append_number(std::string& out, uint64_t v) {
  char buf[24];
  auto [end, ec] = std::to_chars(buf, buf + sizeof buf, v);
  (void)ec;
  out.append(buf, end);
}

void append_value(std::string& out, std::string_view key, const ValuePattern& values,
                  size_t size) {
  size_t at = out.size();
  out.resize(at + size);
  values.fill(key, size, out.data() + at);
}

bool parse_u64(std::string_view s, uint64_t& v) {
  if (s.empty()) return false;
  auto [end, ec] = std::from_chars(s.data(), s.data() + s.size(), v);
  return ec == std::errc() && end == s.data() + s.size();
}

// The next space-separated token of `line` from `pos` (empty at the end).
std::string_view token(std::string_view line, size_t& pos) {
  while (pos < line.size() && line[pos] == ' ') ++pos;
  size_t start = pos;
  while (pos < line.size() && line[pos] != ' ') ++pos;
  return line.substr(start, pos - start);
}

bool starts_with(std::string_view s, std::string_view p) {
  return s.size() >= p.size() && s.compare(0, p.size(), p) == 0;
}

bool is_error_line(std::string_view line) {
  return line == "ERROR" || starts_with(line, "CLIENT_ERROR") ||
         starts_with(line, "SERVER_ERROR");
}

void check_value(ReplyResult& r, std::string_view key, uint64_t flags, std::string_view data,
                 const ValuePattern& values, size_t value_size) {
  ++r.hits;
  if (data.size() != value_size || flags != values.flags(key) ||
      !values.check(key, data.data(), data.size()))
    ++r.mismatches;
}

uint32_t misses_of(const Request& req, uint32_t hits) {
  auto asked = static_cast<uint32_t>(req.nkeys);
  return hits < asked ? asked - hits : 0;
}

ReplyResult parse_text(const Request& req, std::string_view in, const ValuePattern& values,
                       size_t value_size) {
  ReplyResult r;
  size_t pos = 0;
  while (true) {
    size_t eol = in.find("\r\n", pos);
    if (eol == std::string_view::npos) return ReplyResult{};
    std::string_view line = in.substr(pos, eol - pos);
    size_t next = eol + 2;
    if (req.set) {
      r.kind = ReplyResult::done;
      r.consumed = next;
      if (line != "STORED") {
        if (line == "NOT_STORED" || is_error_line(line)) {
          r.server_error = true;
        } else {
          r.kind = ReplyResult::malformed;
        }
      }
      return r;
    }
    if (line == "END") {
      r.kind = ReplyResult::done;
      r.consumed = next;
      r.misses = misses_of(req, r.hits);
      return r;
    }
    if (is_error_line(line)) {
      r.kind = ReplyResult::done;
      r.consumed = next;
      r.server_error = true;
      return r;
    }
    size_t t = 0;
    std::string_view word = token(line, t), key = token(line, t), flags_s = token(line, t),
                     bytes_s = token(line, t);
    uint64_t flags = 0, bytes = 0;
    if (word != "VALUE" || key.empty() || !parse_u64(flags_s, flags) || !parse_u64(bytes_s, bytes))
      return ReplyResult{ReplyResult::malformed};
    if (in.size() < next + bytes + 2) return ReplyResult{};
    if (in.compare(next + bytes, 2, "\r\n") != 0) return ReplyResult{ReplyResult::malformed};
    check_value(r, key, flags, in.substr(next, bytes), values, value_size);
    pos = next + bytes + 2;
  }
}

ReplyResult parse_meta(const Request& req, std::string_view in, const ValuePattern& values,
                       size_t value_size) {
  ReplyResult r;
  size_t pos = 0;
  const bool multi = !req.set && req.nkeys > 1;
  while (true) {
    size_t eol = in.find("\r\n", pos);
    if (eol == std::string_view::npos) return ReplyResult{};
    std::string_view line = in.substr(pos, eol - pos);
    size_t next = eol + 2;
    auto finish = [&](bool error) {
      r.kind = ReplyResult::done;
      r.consumed = next;
      r.server_error = error;
      if (!req.set) r.misses = misses_of(req, r.hits);
      return r;
    };
    if (is_error_line(line)) return finish(true);
    if (req.set) {
      if (line == "HD") return finish(false);
      if (line == "NS" || line == "EX" || line == "NF") return finish(true);
      return ReplyResult{ReplyResult::malformed};
    }
    if (multi ? line == "MN" : line == "EN") return finish(false);
    size_t t = 0;
    std::string_view word = token(line, t), bytes_s = token(line, t);
    uint64_t bytes = 0, flags = 0;
    std::string_view key;
    bool have_flags = false;
    if (word != "VA" || !parse_u64(bytes_s, bytes)) return ReplyResult{ReplyResult::malformed};
    for (std::string_view f = token(line, t); !f.empty(); f = token(line, t)) {
      if (f[0] == 'k') key = f.substr(1);
      if (f[0] == 'f') have_flags = parse_u64(f.substr(1), flags);
    }
    if (key.empty() || !have_flags) return ReplyResult{ReplyResult::malformed};
    if (in.size() < next + bytes + 2) return ReplyResult{};
    if (in.compare(next + bytes, 2, "\r\n") != 0) return ReplyResult{ReplyResult::malformed};
    check_value(r, key, flags, in.substr(next, bytes), values, value_size);
    pos = next + bytes + 2;
    if (!multi) return finish(false);
  }
}

ReplyResult parse_binary(const Request& req, std::string_view in, const ValuePattern& values,
                         size_t value_size) {
  ReplyResult r;
  size_t pos = 0;
  const bool multi = !req.set && req.nkeys > 1;
  while (true) {
    if (in.size() < pos + 24) return ReplyResult{};
    if (static_cast<unsigned char>(in[pos]) != 0x81) return ReplyResult{ReplyResult::malformed};
    auto opcode = static_cast<uint8_t>(in[pos + 1]);
    auto key_len = static_cast<size_t>(get_be(in, pos + 2, 2));
    auto extras = static_cast<size_t>(static_cast<unsigned char>(in[pos + 4]));
    auto status = get_be(in, pos + 6, 2);
    auto body = static_cast<size_t>(get_be(in, pos + 8, 4));
    if (key_len + extras > body) return ReplyResult{ReplyResult::malformed};
    if (in.size() < pos + 24 + body) return ReplyResult{};
    size_t next = pos + 24 + body;
    auto finish = [&](bool error) {
      r.kind = ReplyResult::done;
      r.consumed = next;
      r.server_error = error;
      if (!req.set) r.misses = misses_of(req, r.hits);
      return r;
    };
    if (req.set) {
      if (opcode != kSet) return ReplyResult{ReplyResult::malformed};
      return finish(status != 0);
    }
    if (multi && opcode == kNoop) return finish(status != 0);
    if (opcode != (multi ? kGetKQ : kGetK)) return ReplyResult{ReplyResult::malformed};
    if (status == 0) {
      if (extras != 4) return ReplyResult{ReplyResult::malformed};
      std::string_view key = in.substr(pos + 24 + 4, key_len);
      std::string_view data = in.substr(pos + 24 + 4 + key_len, body - 4 - key_len);
      check_value(r, key, get_be(in, pos + 24, 4), data, values, value_size);
    } else if (status != 1 || multi) {  // 1: not found, GETK's miss
      r.server_error = true;
    }
    pos = next;
    if (!multi) return finish(r.server_error);
  }
}

}  // namespace

void KeyNames::append(uint32_t i, std::string& out) const {
  out += prefix;
  append_number(out, i);
}

void encode_request(Protocol p, const Request& r, const KeyNames& names, const ValuePattern& values,
                    size_t value_size, std::string& out) {
  std::string key;
  if (r.set) {
    names.append(r.keys[0], key);
    uint32_t flags = values.flags(key);
    switch (p) {
      case Protocol::text:
        out += "set ";
        out += key;
        out += ' ';
        append_number(out, flags);
        out += " 0 ";
        append_number(out, value_size);
        out += "\r\n";
        append_value(out, key, values, value_size);
        out += "\r\n";
        return;
      case Protocol::meta:
        out += "ms ";
        out += key;
        out += ' ';
        append_number(out, value_size);
        out += " F";
        append_number(out, flags);
        out += "\r\n";
        append_value(out, key, values, value_size);
        out += "\r\n";
        return;
      case Protocol::binary:
        binary_header(out, kSet, key.size(), 8, 8 + key.size() + value_size);
        put_be(out, flags, 4);
        put_be(out, 0, 4);  // expiry
        out += key;
        append_value(out, key, values, value_size);
        return;
    }
    return;
  }
  const bool multi = r.nkeys > 1;
  if (p == Protocol::text) out += "get";
  for (int i = 0; i < r.nkeys; ++i) {
    key.clear();
    names.append(r.keys[i], key);
    switch (p) {
      case Protocol::text:
        out += ' ';
        out += key;
        break;
      case Protocol::meta:
        out += "mg ";
        out += key;
        out += multi ? " v f k q\r\n" : " v f k\r\n";
        break;
      case Protocol::binary:
        binary_header(out, multi ? kGetKQ : kGetK, key.size(), 0, key.size());
        out += key;
        break;
    }
  }
  if (p == Protocol::text) out += "\r\n";
  if (p == Protocol::meta && multi) out += "mn\r\n";
  if (p == Protocol::binary && multi) binary_header(out, kNoop, 0, 0, 0);
}

ReplyResult parse_reply(Protocol p, const Request& r, std::string_view in,
                        const ValuePattern& values, size_t value_size) {
  switch (p) {
    case Protocol::text:
      return parse_text(r, in, values, value_size);
    case Protocol::meta:
      return parse_meta(r, in, values, value_size);
    case Protocol::binary:
      return parse_binary(r, in, values, value_size);
  }
  return ReplyResult{ReplyResult::malformed};
}

bool parse_protocol(std::string_view name, Protocol& out) {
  if (name == "text") out = Protocol::text;
  else if (name == "meta") out = Protocol::meta;
  else if (name == "binary") out = Protocol::binary;
  else return false;
  return true;
}

const char* protocol_name(Protocol p) {
  switch (p) {
    case Protocol::text:
      return "text";
    case Protocol::meta:
      return "meta";
    case Protocol::binary:
      return "binary";
  }
  return "?";
}

}  // namespace memshard::bench
