// libFuzzer target: any bytes as a server reply line must classify without
// crashing, consistently.
#include <cstddef>
#include <cstdint>
#include <string_view>

#include "proxy/protocol/reply_parser.h"

namespace {

void check(bool ok) {
  if (!ok) __builtin_trap();
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace memshard::proto;
  const std::string_view line(reinterpret_cast<const char*>(data), size);
  const ReplyLine r = parse_reply_line(line);
  if (r.kind != ReplyKind::invalid) check(!line.empty() && line.size() <= kMaxReplyLineLength);
  if (r.kind == ReplyKind::value) {
    check(!r.key.empty() && r.key.find(' ') == std::string_view::npos);
    check(r.key.data() >= line.data() && r.key.data() + r.key.size() <= line.data() + line.size());
  }
  if (r.kind == ReplyKind::value || r.kind == ReplyKind::meta_value) {
    check(r.data_bytes >= 2 && r.data_bytes <= 0xffffffffull + 2);
  } else {
    check(r.data_bytes == 0);
  }
  return 0;
}
