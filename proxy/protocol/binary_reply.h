// The binary reply to a translated request (binary_request.h), made from
// the text reply the proxy's usual path produced for it: the server's meta
// reply, or the proxy's own (MN, VERSION, STAT lines, its SERVER_ERRORs).
//
// Statuses are proto_bin.c's for the same outcome:
//   VA (a get family hit)   ok, extras = the flags, the key for getk/gatk,
//                           the value (none for touch), cas
//   VA (incr, decr)         ok, the new value as 8 bytes, cas
//   HD                      ok (cas of a store, of a touched item)
//   EN / NF                 key not found (getk/gatk: the key as body)
//   NS                      add: key exists; replace: not found; else not stored
//   EX                      key exists
//   SERVER_ERROR object too large...   too large
//   SERVER_ERROR [Oo]ut of memory...   out of memory
//   CLIENT_ERROR cannot increment...   non-numeric
//   CLIENT_ERROR flush_all not allowed auth error (as memcached -F answers)
//   other CLIENT_ERROR                 invalid arguments
//   other SERVER_ERROR (the proxy's: no server, timeout)
//                           temporary failure, the message as body
//   ERROR                   unknown command
// Quiet opcodes drop what is not an error (a get's miss; its hit is sent).
#pragma once

#include <string>
#include <string_view>

#include "proxy/protocol/binary_request.h"

namespace memshard::proto::binary {

// Appends to `out` the frames answering `context` given `text`, the whole
// text reply (for stats: every STAT line and END). Nothing for a quiet
// success.
void encode_reply(const ReplyContext& context, std::string_view text, std::string& out);

}  // namespace memshard::proto::binary
