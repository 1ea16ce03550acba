#include "proxy/transport/lines.h"

#include <cstring>

namespace memshard::proxy {

Line find_line(evbuffer* in, LineEnd end) {
  evbuffer_iovec first;
  if (evbuffer_peek(in, -1, nullptr, &first, 1) >= 1) {
    const char* bytes = static_cast<const char*>(first.iov_base);
    const void* nl = memchr(bytes, '\n', first.iov_len);
    if (nl != nullptr) {
      size_t at = static_cast<size_t>(static_cast<const char*>(nl) - bytes);
      if (end == LineEnd::lf) return {at, 1};
      // "\r\n" only: a bare "\n" is not an end, and what follows it must
      // be searched the slow way.
      if (at > 0 && bytes[at - 1] == '\r') return {at - 1, 2};
    }
  }
  size_t eol_len = 0;
  evbuffer_ptr eol = evbuffer_search_eol(
      in, nullptr, &eol_len, end == LineEnd::lf ? EVBUFFER_EOL_LF : EVBUFFER_EOL_CRLF_STRICT);
  if (eol.pos < 0) return {};
  return {static_cast<size_t>(eol.pos), eol_len};
}

}  // namespace memshard::proxy
