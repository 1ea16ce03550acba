// libFuzzer target: any bytes as a request line must parse without crashing,
// and the outcome must be self-consistent.
#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

#include "proxy/protocol/base64.h"
#include "proxy/protocol/request_parser.h"

namespace {

using namespace memshard::proto;

void check(bool ok) {
  if (!ok) __builtin_trap();
}

bool within(std::string_view part, std::string_view whole) {
  return part.data() >= whole.data() && part.data() + part.size() <= whole.data() + whole.size();
}

void check_request(std::string_view line, const Request& r) {
  switch (r.action) {
    case Action::forward:
      check(r.keys.size() == 1);
      check(r.keys[0].size() <= kMaxKeyLength);
      check(within(r.keys[0], line) || within(r.keys[0], r.decoded_key));
      break;
    case Action::multi_get: {
      check(!r.keys.empty());
      for (std::string_view key : r.keys) check(within(key, line) && key.size() <= kMaxKeyLength);
      std::string fetch;
      append_retrieval_line(r, r.keys, fetch);
      check(fetch.ends_with("\r\n"));
      break;
    }
    case Action::error:
      check(r.error_reply.empty() || r.error_reply.ends_with("\r\n"));
      check(r.data_bytes == 0);
      break;
    case Action::broadcast:
    case Action::local:
      check(r.keys.empty());
      break;
    case Action::close:
      // Only a foreign protocol's line closes (an HTTP request: its last
      // token starts with "HTTP/"), silently, carrying nothing to run.
      check(r.foreign);
      check(r.keys.empty() && r.data_bytes == 0);
      check(line.find("HTTP/") != std::string_view::npos);
      break;
  }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string_view input(reinterpret_cast<const char*>(data), size);
  static Request request;  // reused, as a connection does
  Limits limits;
  limits.item_size_max = 1024;
  parse_request_line(input, limits, request);
  check_request(input, request);
  (void)line_too_long(input);

  // The strict decoder accepts a subset of memcached's, with equal output.
  std::string strict;
  std::string lenient;
  if (base64_decode(input, strict)) {
    check(memcached_base64_decode(input, lenient));
    check(strict == lenient);
  }
  return 0;
}
