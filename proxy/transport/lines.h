// Finding the line at the front of an input buffer: the one way every
// reader of the proxy does it (client requests, server replies, the stats
// port), so that the rules on terminators live in one place.
#pragma once

#include <event2/buffer.h>

#include <cstddef>
#include <cstdint>

namespace memshard::proxy {

enum class LineEnd : uint8_t {
  // A bare "\n" ends a line, as memcached reads requests; the "\r" before
  // it, if any, is part of the line for the caller to drop.
  lf,
  // Only "\r\n" does: what a server must send.
  crlf,
};

struct Line {
  size_t length = 0;      // before the terminator
  size_t terminator = 0;  // 0: no whole line in the buffer yet
  bool whole() const { return terminator != 0; }
  size_t total() const { return length + terminator; }
};

// The first line of `in`. Looks in the buffer's first chain first, where
// nearly every line lies whole, before searching across chains.
Line find_line(evbuffer* in, LineEnd end);

}  // namespace memshard::proxy
