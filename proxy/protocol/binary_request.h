// A binary-protocol request frame, translated into the text/meta protocol.
//
// Binary clients get the same path as text clients: each frame becomes one
// text or meta request line (and its value), which the usual request
// parser, routes and backends handle, and whose text reply binary_reply.h
// turns back into a binary frame. So the fleet needs nothing new, and one
// router, one set of counters and one set of limits serve both protocols.
//
// What each opcode becomes (memcached 1.6.18's proto_bin.c for what the
// server does; `b`: the key travels base64 when it holds a byte a text
// line cannot, binary keys being any bytes):
//   get getq getk getkq        gets <key>, joined with the other gets queued
//                              for its server into one multi-get line as a
//                              text client's are; mg <key> b v f t c when the
//                              key needs base64
//   gat gatq gatk gatkq        mg <key> v f c T<exptime>
//   touch                      mg <key> f c T<exptime>     (no value back)
//   set add replace (+q)       ms <key> <len> F<flags> T<exptime> [C<cas>] [ME|MR] c
//                              (a non-zero cas makes any of the three a
//                              compare-and-set, as proto_bin.c does: no M)
//   append prepend (+q)        ms <key> <len> [C<cas>] MA|MP c
//   delete(q)                  md <key> [C<cas>]
//   increment decrement (+q)   ma <key> v c D<delta> [N<exptime> J<initial>] [MD] [C<cas>]
//                              (exptime 0xffffffff: no N, a miss stays a miss)
//   flush(q)                   flush_all [<exptime>]   (every server)
//   noop / version / stat      mn / version / stats    (the proxy answers)
//   quit(q)                    quit
// Quiet forms are sent as their loud forms: the reply encoder drops what a
// quiet opcode hides (binary_reply.h), so no `q`/`mn` pair is needed.
//
// Exptimes: binary ones are unsigned 32-bit, meta's T and N signed; an
// exptime past 2^31-1 (a unix time after 2038) is sent as 2^31-1, which
// memcached reads the same way: an absolute time decades away.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

#include "proxy/protocol/binary.h"
#include "proxy/protocol/request_parser.h"

namespace memshard::proto::binary {

// What the reply to a translated request needs from the request.
struct ReplyContext {
  uint8_t opcode = 0;
  uint32_t opaque = 0;
  // getk, getkq, gatk, gatkq: the key, which their replies carry.
  std::string key;
  // When not ok: the reply whatever the server answers. A set whose value
  // is too large deletes the key's old value, as memcached does, and
  // answers "too large" once the delete is done.
  Status fixed = Status::ok;
};

struct Translation {
  enum class Kind : uint8_t {
    text,    // `line` goes through the text path; the frame's value follows it
    answer,  // `reply` is the whole answer (possibly empty); no server is asked
    close,   // close the connection at once, without a word (bad magic)
  };
  Kind kind = Kind::close;
  // text: one request line, "\r\n" included. The value_length bytes of the
  // frame after its key are the request's data, sent after the line and
  // followed by "\r\n".
  std::string line;
  uint32_t value_length = 0;
  // answer: binary reply frames.
  std::string reply;
  // text, answer: input bytes after the key to discard unread (a value the
  // proxy refuses, the rest of an unknown command's frame).
  uint64_t swallow = 0;
  // answer: close once it is written (memcached's answer to a malformed
  // frame: "invalid arguments", then the connection closes).
  bool close_after = false;
  ReplyContext context;

  void clear();
};

// Translates one frame. `extras` and `key` are the extras_length and
// key_length bytes that follow the header; the caller waits for them (at
// most 255 + 65535 bytes, as memcached waits) before calling. The value,
// if any, is not needed yet: out.value_length says how many bytes it has.
void translate(const Header& header, std::string_view extras, std::string_view key,
               const Limits& limits, Translation& out);

}  // namespace memshard::proto::binary
