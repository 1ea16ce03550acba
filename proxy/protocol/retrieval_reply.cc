#include "proxy/protocol/retrieval_reply.h"

#include <charconv>

namespace memshard::proto {

namespace {

bool whole_number(std::string_view s, uint64_t& out) {
  if (s.empty()) return false;
  auto [p, ec] = std::from_chars(s.data(), s.data() + s.size(), out);
  return ec == std::errc() && p == s.data() + s.size();
}

// The space-separated tokens of a line.
std::vector<std::string_view> tokens(std::string_view line) {
  std::vector<std::string_view> out;
  size_t i = 0;
  while (i < line.size()) {
    size_t end = line.find(' ', i);
    if (end == std::string_view::npos) end = line.size();
    if (end > i) out.push_back(line.substr(i, end - i));
    i = end + 1;
  }
  return out;
}

}  // namespace

std::optional<std::vector<ValueBlock>> parse_value_blocks(std::string_view reply) {
  std::vector<ValueBlock> out;
  size_t at = 0;
  while (true) {
    const size_t eol = reply.find("\r\n", at);
    if (eol == std::string_view::npos) return std::nullopt;
    const std::string_view line = reply.substr(at, eol - at);
    if (line == "END") {
      if (eol + 2 != reply.size()) return std::nullopt;
      return out;
    }
    const std::vector<std::string_view> t = tokens(line);
    uint64_t bytes = 0;
    if (t.size() < 4 || t[0] != "VALUE" || !whole_number(t[3], bytes)) return std::nullopt;
    const size_t end = eol + 2 + bytes + 2;
    if (end > reply.size() || reply.substr(end - 2, 2) != "\r\n") return std::nullopt;
    out.push_back(ValueBlock{t[1], reply.substr(at, end - at)});
    at = end;
  }
}

std::optional<MetaValue> parse_meta_value(std::string_view reply) {
  const size_t eol = reply.find("\r\n");
  if (eol == std::string_view::npos) return std::nullopt;
  const std::vector<std::string_view> t = tokens(reply.substr(0, eol));
  uint64_t length = 0;
  if (t.size() < 2 || t[0] != "VA" || !whole_number(t[1], length)) return std::nullopt;
  if (eol + 2 + length + 2 > reply.size()) return std::nullopt;
  MetaValue v;
  for (size_t i = 2; i < t.size(); ++i) {
    switch (t[i][0]) {
      case 'f':
        v.flags = t[i].substr(1);
        break;
      case 't':
        v.ttl = t[i].substr(1);
        break;
      case 'c':
        v.cas = t[i].substr(1);
        break;
      default:
        break;
    }
  }
  v.data = reply.substr(eol + 2, length);
  return v;
}

std::string classic_block(std::string_view key, const MetaValue& v, bool with_cas) {
  std::string block;
  block.reserve(key.size() + v.data.size() + 48);
  block.append("VALUE ").append(key).append(" ").append(v.flags).append(" ");
  block.append(std::to_string(v.data.size()));
  if (with_cas) block.append(" ").append(v.cas);
  block.append("\r\n").append(v.data).append("\r\n");
  return block;
}

namespace {

Request copy_request(std::string_view key, const MetaValue& v, bool quiet) {
  Request r;
  r.command = Command::meta_set;
  r.keys.push_back(key);
  uint64_t flags = 0;
  whole_number(v.flags, flags);
  r.flags = static_cast<uint32_t>(flags);
  // t-1: no expiry (T0 is memcached's "never"); else what remains.
  uint64_t remaining = 0;
  if (v.ttl != "-1") whole_number(v.ttl, remaining);
  r.has_exptime = remaining != 0;
  r.exptime_value = static_cast<int64_t>(remaining);
  r.mode = Mode::add;
  r.meta_flags.add('M');
  r.meta_flags.add('c');
  r.quiet = quiet;
  r.data_bytes = v.data.size() + 2;
  return r;
}

}  // namespace

bool append_copy_request(std::string_view key, const MetaValue& v, bool quiet, std::string& out) {
  return append_meta_request(copy_request(key, v, quiet), v.data, out);
}

bool append_copy_request(std::string_view key, const MetaValue& v, int64_t exptime, bool quiet,
                         std::string& out) {
  Request r = copy_request(key, v, quiet);
  r.has_exptime = exptime != 0;
  r.exptime_value = exptime;
  return append_meta_request(r, v.data, out);
}

std::vector<std::string_view> blocks_by_key(const std::vector<ValueBlock>& blocks,
                                            const std::vector<std::string_view>& keys) {
  std::vector<std::string_view> by_key(keys.size());
  size_t b = 0;
  for (size_t pos = 0; pos < keys.size() && b < blocks.size(); ++pos) {
    if (blocks[b].key == keys[pos]) by_key[pos] = blocks[b++].block;
  }
  return by_key;
}

std::string retrieval_command(const Request& r) {
  switch (r.command) {
    case Command::gets:
      return "gets";
    case Command::gat:
      return "gat " + std::string(r.exptime);
    case Command::gats:
      return "gats " + std::string(r.exptime);
    default:
      return "get";
  }
}

std::optional<uint64_t> copied_cas(std::string_view reply) {
  const std::string_view line = reply.substr(0, reply.find('\r'));
  size_t at = line.find(' ');
  while (at != std::string_view::npos) {
    const size_t next = line.find(' ', at + 1);
    const std::string_view token =
        line.substr(at + 1, next == std::string_view::npos ? next : next - at - 1);
    uint64_t cas = 0;
    if (token.size() > 1 && token[0] == 'c' && whole_number(token.substr(1), cas)) return cas;
    at = next;
  }
  return std::nullopt;
}

}  // namespace memshard::proto
