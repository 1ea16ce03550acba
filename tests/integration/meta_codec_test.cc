// The backend codec against a real memcached: a sequence of classic
// requests sent as written to one server and through the codec, as meta
// commands, to another; the meta replies, mapped back as meta_codec.h says,
// must be the classic replies byte for byte.
#include "proxy/protocol/meta_codec.h"

#include <gtest/gtest.h>

#include <string>
#include <string_view>

#include "harness.h"
#include "proxy/protocol/request_parser.h"

namespace memshard::testing {
namespace {

using proto::Command;

// One reply line of `in` at `pos` (without "\r\n"), pos moved past it.
std::string_view take_line(std::string_view in, size_t& pos) {
  const size_t end = in.find("\r\n", pos);
  const std::string_view line = in.substr(pos, end - pos);
  pos = end == std::string_view::npos ? in.size() : end + 2;
  return line;
}

// The token after `letter` in a meta return-flag list ("f7 t-1 c3").
std::string flag_value(std::string_view flags, char letter) {
  size_t pos = 0;
  while (pos < flags.size()) {
    size_t end = flags.find(' ', pos);
    if (end == std::string_view::npos) end = flags.size();
    if (flags[pos] == letter) return std::string(flags.substr(pos + 1, end - pos - 1));
    pos = end + 1;
  }
  return "";
}

// The meta replies of `r` (everything before "MN\r\n") as the classic ones.
std::string classic_reply(const proto::Request& r, std::string_view meta) {
  if (r.noreply) return "";
  std::string out;
  size_t pos = 0;
  size_t key_index = 0;
  while (pos < meta.size()) {
    const std::string_view line = take_line(meta, pos);
    if (line.starts_with("CLIENT_ERROR") || line.starts_with("SERVER_ERROR")) {
      out.append(line).append("\r\n");
      continue;
    }
    const std::string_view code = line.substr(0, 2);
    switch (r.command) {
      case Command::get:
      case Command::gets:
      case Command::gat:
      case Command::gats: {
        const std::string_view key = r.keys[key_index++];
        if (code != "VA") break;  // EN: a miss says nothing
        const size_t space = line.find(' ', 3);
        const std::string_view length = line.substr(3, space - 3);
        const std::string_view flags = line.substr(space + 1);
        out.append("VALUE ").append(key).append(" ").append(flag_value(flags, 'f'));
        out.append(" ").append(length);
        if (r.command == Command::gets || r.command == Command::gats) {
          out.append(" ").append(flag_value(flags, 'c'));
        }
        out.append("\r\n").append(take_line(meta, pos)).append("\r\n");
        break;
      }
      case Command::incr:
      case Command::decr:
        if (code == "VA") {
          out.append(take_line(meta, pos)).append("\r\n");
        } else {
          out.append(code == "NF" ? "NOT_FOUND\r\n" : "?\r\n");
        }
        break;
      case Command::delete_:
        out.append(code == "HD" ? "DELETED\r\n" : code == "NF" ? "NOT_FOUND\r\n" : "?\r\n");
        break;
      case Command::touch:
        out.append(code == "HD" ? "TOUCHED\r\n" : code == "EN" ? "NOT_FOUND\r\n" : "?\r\n");
        break;
      default:  // storage
        out.append(code == "HD"   ? "STORED\r\n"
                   : code == "NS" ? "NOT_STORED\r\n"
                   : code == "EX" ? "EXISTS\r\n"
                   : code == "NF" ? "NOT_FOUND\r\n"
                                  : "?\r\n");
        break;
    }
  }
  if (r.action == proto::Action::multi_get) out.append("END\r\n");
  return out;
}

TEST(MetaCodec, SameRepliesAsClassic) {
  Memcached classic_server;
  Memcached meta_server;
  RawClient classic(classic_server.port());
  RawClient meta(meta_server.port());
  // {line, value}: cas uniques agree because both servers see the same
  // stores in the same order.
  const std::pair<std::string_view, std::string_view> steps[] = {
      {"get a", ""},
      {"set a 7 0 5", "hello"},
      {"get a b", ""},
      {"gets a", ""},
      {"add a 0 0 1", "x"},
      {"add b 3 100 2", "bb"},
      {"replace c 0 0 1", "x"},
      {"replace b 4 0 3", "bbb"},
      {"append a 0 0 1", "!"},
      {"prepend a 0 0 1", ">"},
      {"append c 0 0 1", "x"},
      {"get a b c", ""},
      {"cas a 1 0 1 999", "x"},
      {"cas c 1 0 1 1", "x"},
      {"gets a", ""},
      {"set n 0 0 2 noreply", "10"},
      {"incr n 5", ""},
      {"decr n 100", ""},
      {"incr a 1", ""},
      {"incr c 1", ""},
      {"decr n 1 noreply", ""},
      {"touch a 100", ""},
      {"touch c 100", ""},
      {"gat 200 a b c", ""},
      {"gats 0 n", ""},
      {"set \x01\x02 9 0 3", "bin"},
      {"get \x01\x02 a", ""},
      {"delete a", ""},
      {"delete a", ""},
      {"delete b noreply", ""},
      {"get a b n \x01\x02", ""},
  };
  proto::Request request;
  const proto::Limits limits;
  for (auto [line, value] : steps) {
    SCOPED_TRACE(printable(line));
    proto::parse_request_line(line, limits, request);
    ASSERT_NE(request.action, proto::Action::error);
    ASSERT_EQ(request.value_length(), value.size());
    std::string classic_bytes(line);
    classic_bytes.append("\r\n");
    if (request.data_bytes > 0) classic_bytes.append(value).append("\r\n");
    std::string meta_bytes;
    ASSERT_TRUE(proto::append_meta_request(request, value, meta_bytes));
    // mn after each request bounds both replies (memcached answers MN to
    // mn on a classic connection too).
    classic.send(classic_bytes + "mn\r\n");
    meta.send(meta_bytes + "mn\r\n");
    std::string expected = classic.read_until("MN\r\n");
    std::string got = meta.read_until("MN\r\n");
    ASSERT_TRUE(expected.ends_with("MN\r\n") && got.ends_with("MN\r\n"));
    expected.resize(expected.size() - 4);
    got.resize(got.size() - 4);
    EXPECT_EQ(printable(classic_reply(request, got)), printable(expected))
        << "meta: " << printable(meta_bytes);
  }
}

}  // namespace
}  // namespace memshard::testing
